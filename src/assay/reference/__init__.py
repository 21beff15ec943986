"""Reference text generated from the code: evaluators, filters, model kinds and commands.

The docs site (``docs/gen_reference.py``) and ``assay evaluators show NAME`` render the same :class:`Entry`, so the
documentation cannot drift from the options the code accepts.
"""

from assay.reference.entries import Entry, OptionDoc

__all__ = ["Entry", "OptionDoc"]
