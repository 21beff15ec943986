"""The cyclic garbage collector paused around bulk work that makes millions of small acyclic objects."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic GC off for the block: scoring a chunk or scanning a run folder allocates dicts by the million,
    which set off full (gen-2) collections over everything loaded, every few hundred records, to find nothing.
    What the block leaves is freed by reference counts at once; cycles wait for the next collection. A GC already
    off stays off."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
