"""Where environments live on the host, and removing what a killed run left behind.

Every environment of a process is made under one folder, ``<tmp>/assay-env-<pid>-<start>`` (``start``: the
process's start time in clock ticks since boot, so a reused pid is not mistaken for the owner). An environment is
removed when it closes (also on error and cancellation); if the run is SIGKILLed, its sandboxes die with it
(bubblewrap's ``--die-with-parent``) and the folder, the tmpfs mounted in it and its memory cgroups stay until
:func:`cleanup_leftovers`, which the runner calls at start, removes every such folder whose owner is gone.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import stat
import tempfile
from pathlib import Path

PREFIX = "assay-env-"
_OWNED = re.compile(r"^assay-env-(\d+)-(\d+)$")
_bases: dict[int, Path] = {}


def _start_ticks(pid: int) -> int | None:
    """A process's start time (clock ticks since boot, field 22 of /proc/<pid>/stat), None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(text.rsplit(")", 1)[1].split()[19])


def tmp_root() -> str:
    """The folder environments' base folders go in (the temp directory, as the sandbox's user can reach it)."""
    base = Path(tempfile.gettempdir()).resolve()
    if os.geteuid() == 0 and not all(p.stat().st_mode & stat.S_IXOTH for p in (base, *base.parents)):
        return "/tmp"
    return str(base)


def base_dir() -> Path:
    """This process's folder for its environments (made at the first call, reachable by the sandbox's user)."""
    pid = os.getpid()
    if pid not in _bases:
        path = Path(tmp_root()) / f"{PREFIX}{pid}-{_start_ticks(pid)}"
        path.mkdir(mode=0o711, exist_ok=True)
        path.chmod(0o711)
        _bases[pid] = path
        atexit.register(_remove_if_empty, path)
    return _bases[pid]


def _remove_if_empty(path: Path) -> None:
    """At a normal exit: the base folder goes too when every environment in it was closed."""
    with contextlib.suppress(OSError):
        path.rmdir()


def _mounts_under(path: str) -> list[str]:
    """Mount points at or below ``path``, deepest first."""
    found = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
            if point == path or point.startswith(path + "/"):
                found.append(point)
    return sorted(found, key=len, reverse=True)


def remove_tree(path: str) -> None:
    """Unmount what is mounted below ``path`` and remove it, also where a program took its permissions away."""
    from assay.sandbox.box import remove_dir
    from assay.sandbox.diskfs import unmount

    for point in _mounts_under(path):
        with contextlib.suppress(OSError):
            unmount(point)
    remove_dir(path)


def cleanup_leftovers(root: str | None = None) -> list[str]:
    """Remove environments left by processes that are gone (their folders, tmpfs mounts and memory cgroups);
    returns the folders removed. Cheap when there are none: call it once at the start of a run."""
    removed = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(root or tmp_root()):
            owned = _OWNED.match(entry.name)
            if owned is None or not entry.is_dir(follow_symlinks=False):
                continue
            pid, start = int(owned.group(1)), int(owned.group(2))
            if _start_ticks(pid) == start:
                continue  # its owner is alive
            remove_tree(entry.path)
            removed.append(entry.path)
            _bases.pop(pid, None)
    if removed:
        _sweep_cgroups()
    return removed


def _sweep_cgroups() -> None:
    """Remove the memory cgroups of sandboxes whose process is gone (named with its pid: ``cgroup.py``)."""
    from assay.sandbox.bwrap import SandboxUnavailable, find_host

    try:
        cgroups = find_host().memory_cgroups
    except SandboxUnavailable:
        return
    if cgroups is not None:
        cgroups.sweep()
