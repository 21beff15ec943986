"""Worker processes forked from this one: how many this machine allows, whether forking is available and safe,
how a worker is set up (it dies with its parent and leaves Ctrl-C to it), and one function run in a forked child
while this process goes on (:class:`Forked`: how a sequential pass over a large file takes its second half to the
second core). Shared by offline scoring, the results scan and the load of large files.

A :class:`Forked` child's value comes back pickled through a pipe; a child that raises or dies gives None, and the
caller then does that work itself (so its errors are the serial pass's).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

MAX_PROCESSES = 8  # by default: more rarely helps, as the one writer becomes the bound


def default_processes() -> int:
    """One scoring process per CPU this process may use (its affinity, and a container's CPU quota, cgroup v2),
    at most :data:`MAX_PROCESSES`."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    quota = cgroup_cpu_quota()
    if quota is not None:
        cpus = min(cpus, max(1, int(quota)))
    return max(1, min(cpus, MAX_PROCESSES))


def cgroup_cpu_quota(path: str = "/sys/fs/cgroup/cpu.max") -> float | None:
    """The CPUs a cgroup v2 quota allows (``cpu.max``: "200000 100000" is 2), or None without a quota."""
    try:
        with open(path, encoding="ascii") as fh:
            quota, _, period = fh.read().strip().partition(" ")
        return None if quota == "max" else int(quota) / int(period or 100000)
    except (OSError, ValueError, ZeroDivisionError):
        return None


def fork_available() -> bool:
    """True where worker processes can be forked (Linux: elsewhere fork is missing or unsafe with threads)."""
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


_PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent dies


def worker_start(parent: int) -> None:
    """Set a forked worker up: it dies with its parent (a killed writer must not leave workers behind, holding
    memory), and Ctrl-C is the writer's to handle (it stops sending chunks and ends the workers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # no prctl: the worker ends when it next finds its parent gone
        pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def other_threads() -> bool:
    """Whether another thread runs in this process: a fork copies no other thread, and any lock one held stays
    held, so a forked child could hang on it (an HTTP client's resolver, Ray's gRPC, torch's pools)."""
    return threading.active_count() > 1


def may_fork() -> bool:
    """True on Linux with two CPUs or more to use and no other thread in this process (a forked child could hang
    on a lock another thread held)."""
    return fork_available() and not other_threads() and default_processes() >= 2


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
