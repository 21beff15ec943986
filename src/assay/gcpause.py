"""The cyclic garbage collector paused around bulk work that makes millions of small acyclic objects."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_startup = False  # the GC was turned off by pause_startup and is still off


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


def pause_startup() -> None:
    """Turn the cyclic GC off while a command starts: importing its modules and loading its tasks set off ~90 young
    collections (15-30 ms before the first request of ``assay run``) that find next to nothing to free.
    :func:`resume_startup` turns it on again, once the run's first answer is in or the run loop starts, and at the
    latest when the command ends. A GC already off is left alone."""
    global _startup
    if gc.isenabled():
        gc.disable()
        _startup = True


def resume_startup() -> None:
    """End :func:`pause_startup`'s pause (no-op when there is none)."""
    global _startup
    if _startup:
        _startup = False
        gc.enable()
