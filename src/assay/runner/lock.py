"""One writer per run folder: an exclusive ``flock`` on ``RUN_DIR/.lock``, held for the life of a run.

The kernel releases a ``flock`` when its holder dies, so a lock left by a killed process never blocks a resume;
the PID written into the file only serves to name the holder in the error a second writer gets.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from assay.errors import AssayError

LOCK = ".lock"


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
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
