"""One writer per run folder: an exclusive ``flock`` on ``RUN_DIR/.lock``, held for the life of a run.

The kernel releases a ``flock`` when its holder dies, so a lock left by a killed process never blocks a resume;
the PID written into the file only serves to name the holder in the error a second writer gets. A forked child
(an offline scoring worker) closes its copies of the locks at once: it would otherwise hold them past its parent's
death, and a resume would find the run still locked.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from assay.errors import AssayError

LOCK = ".lock"
_HELD: set[int] = set()  # the descriptors of the locks this process holds


def _close_in_child() -> None:
    """In a forked child: close the inherited lock descriptors (closing, not unlocking, which would free the
    parent's lock too: the child's copies share its open file)."""
    for fd in list(_HELD):
        with suppress(OSError):
            os.close(fd)
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_in_child)


class RunLockedError(AssayError):
    """Another process is writing this run folder."""


def _holder(path: Path) -> str:
    try:
        pid = path.read_text(encoding="utf-8").strip()
    except OSError:
        return "another process"
    return f"process {pid}" if pid.isdigit() else "another process"


@contextmanager
def run_lock(run_dir: Path, *, action: str = "write") -> Iterator[None]:
    """Hold the run folder's exclusive lock, or raise RunLockedError naming the process that holds it."""
    path = Path(run_dir) / LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunLockedError(
                f"cannot {action} {run_dir}: {_holder(path)} is writing it (one writer per run folder; wait for it "
                "to finish or stop it, then try again)"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        _HELD.add(fd)
        try:
            yield
        finally:
            _HELD.discard(fd)
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        _HELD.discard(fd)
        os.close(fd)
