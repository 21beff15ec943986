"""One function run in a forked child while this process goes on with other work: how a sequential pass over a
large file (a predictions index, a dataset's validating scan) takes its second half to the second core.

Only where forking is safe (:func:`may_fork`). The child's value comes back pickled through a pipe; a child that
raises or dies gives None, and the caller then does that work itself (so its errors are the serial pass's).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from assay.forking import default_processes, fork_available, worker_start


def may_fork() -> bool:
    """True on Linux with two CPUs or more to use and no other thread in this process (a forked child could hang
    on a lock another thread held)."""
    return fork_available() and threading.active_count() == 1 and default_processes() >= 2


class Forked:
    """``fn(*args)`` running in a forked child: :meth:`result` waits for its value (None when it raised or died);
    :meth:`close` ends it if it still runs (this process raised meanwhile)."""

    def __init__(self, process: Any, reader: Any) -> None:
        self._process = process
        self._reader = reader

    @classmethod
    def start(cls, fn: Callable[..., Any], *args: Any) -> Forked | None:
        """The child started, or None when it could not be (this process is a daemon, no memory to fork)."""
        context = multiprocessing.get_context("fork")
        reader, writer = context.Pipe(duplex=False)
        sys.stdout.flush()  # the child must not inherit (and write again) buffered output
        sys.stderr.flush()
        process = context.Process(target=_run, args=(fn, args, writer, os.getpid()), daemon=True)
        try:
            process.start()
        except (AssertionError, OSError):
            reader.close()
            writer.close()
            return None
        writer.close()
        return cls(process, reader)

    def result(self) -> Any:
        try:
            return self._reader.recv()
        except Exception:  # it died (EOFError), perhaps half-way through sending
            return None

    def close(self) -> None:
        self._reader.close()
        if self._process.is_alive():
            self._process.kill()
        self._process.join()


def _run(fn: Callable[..., Any], args: tuple[Any, ...], writer: Any, parent: int) -> None:
    """In the child: ``fn(*args)`` sent back (None when it raises or cannot be sent). No collections run in it:
    its work makes no cycles to collect, and a collection would touch (and copy) every page it shares with its
    parent."""
    gc.disable()
    worker_start(parent)
    try:
        value = fn(*args)
    except Exception:
        value = None
    try:
        writer.send(value)
    except Exception:  # not picklable: nothing was written yet
        writer.send(None)
    writer.close()
