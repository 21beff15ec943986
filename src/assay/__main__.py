"""``python -m assay`` is the ``assay`` command."""

from assay.cli import entry

if __name__ == "__main__":
    entry()
