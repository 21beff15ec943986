"""Full collections of the cyclic garbage collector paused around bulk work that makes millions of small objects."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: A third threshold no run reaches: no full (gen-2) collection while paused.
_NEVER = 2**31 - 1


@contextmanager
def gc_paused() -> Iterator[None]:
    """No full collections for the block: scoring a chunk or scanning a run folder allocates dicts by the million,
    which set off full (gen-2) collections over everything loaded, every few hundred records, to find nothing.
    Young collections go on, so short-lived cycles (an indented ``json.dumps`` makes some per call) are freed as
    the block goes rather than piling up until it ends. A GC already off, or already paused, stays so."""
    young, middle, old = gc.get_threshold()
    if not gc.isenabled() or old == _NEVER:
        yield
        return
    gc.set_threshold(young, middle, _NEVER)
    try:
        yield
    finally:
        gc.set_threshold(young, middle, old)
