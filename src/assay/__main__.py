"""``python -m assay`` is the ``assay`` command."""

from assay.cli import main

if __name__ == "__main__":
    main()
