"""Worker processes forked from this one (offline scoring's pool): how many this machine allows, whether forking
is available and safe, and how a worker is set up (it dies with its parent and leaves Ctrl-C to it)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys

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
