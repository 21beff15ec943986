"""A memory cgroup per sandbox, where this machine lets assay make one: the limit on a sample's processes together.

Per-process limits (RLIMIT_AS) bound each process, not the sum of up to ``max_processes`` of them; a cgroup bounds
the sum, including the files they write to a memory-backed filesystem. It needs write access to a cgroup hierarchy
with the memory controller: as root, either cgroup v1's memory hierarchy (a child of this process's own memory
cgroup) or cgroup v2 (a child of ``/sys/fs/cgroup/assay-sandboxes``, made under the root cgroup with memory enabled).
Elsewhere (not root, a container whose cgroups are read-only) :func:`find_memory_cgroups` finds none and the
sandbox says so in its isolation details. A sandbox's first process moves itself in before it becomes the
sandbox's user and starts bubblewrap (``bwrap.py``), so every process of the sandbox starts inside; nothing in the
sandbox can reach ``/sys`` to leave it.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import signal
from dataclasses import dataclass
from pathlib import Path

V2_ROOT = Path("/sys/fs/cgroup")
V2_PARENT = "assay-sandboxes"
PREFIX = "assay-"  # children are named assay-<pid>-<n>: stale ones (their pid gone) are removed by a later run
_STALE = re.compile(r"^assay-(\d+)-\d+$")
_counter = itertools.count()


@dataclass(frozen=True)
class MemoryCgroups:
    """Where this process can make memory cgroups: a parent directory and the cgroup version (1 or 2)."""

    parent: str
    version: int

    def describe(self) -> str:
        return f"memory cgroup v{self.version}"

    def create(self, limit_bytes: int) -> MemoryCgroup:
        """A new cgroup limited to ``limit_bytes`` of memory (and no swap); OSError when the kernel refuses."""
        path = Path(self.parent) / f"{PREFIX}{os.getpid()}-{next(_counter)}"
        path.mkdir(mode=0o755)
        group = MemoryCgroup(str(path), self.version)
        try:
            group.limit(limit_bytes)
        except OSError:
            group.remove()
            raise
        return group

    def sweep(self) -> None:
        """Remove cgroups an earlier process made and left (it was killed before it could remove them)."""
        with contextlib.suppress(OSError):
            for entry in os.scandir(self.parent):
                found = _STALE.match(entry.name)
                if found and entry.is_dir(follow_symlinks=False) and not _alive(int(found.group(1))):
                    with contextlib.suppress(OSError):
                        os.rmdir(entry.path)


@dataclass
class MemoryCgroup:
    """One sandbox's cgroup: its processes are added as they start; removed when the sandbox closes."""

    path: str
    version: int

    def _write(self, name: str, value: str) -> None:
        with open(os.path.join(self.path, name), "w") as fh:
            fh.write(value)

    def limit(self, limit_bytes: int) -> None:
        if self.version == 2:
            self._write("memory.max", str(limit_bytes))
            with contextlib.suppress(OSError):  # no swap accounting on this kernel: no swap to limit
                self._write("memory.swap.max", "0")
        else:
            self._write("memory.limit_in_bytes", str(limit_bytes))
            with contextlib.suppress(OSError):
                self._write("memory.memsw.limit_in_bytes", str(limit_bytes))

    @property
    def enter_file(self) -> str:
        """The file a process writes 0 to, to move itself in (v1: ``tasks``, the thread, which takes no global
        lock; v2: ``cgroup.procs``)."""
        return os.path.join(self.path, "tasks" if self.version == 1 else "cgroup.procs")

    def cpu_seconds(self) -> float | None:
        """CPU seconds its processes used together, where the cgroup accounts them (v2's ``cpu.stat``); None in
        a v1 memory cgroup (CPU is accounted in another hierarchy there: only per-process RLIMIT_CPU holds)."""
        try:
            with open(os.path.join(self.path, "cpu.stat")) as fh:
                for line in fh:
                    key, _, value = line.partition(" ")
                    if key == "usage_usec" and value.strip().isdigit():
                        return int(value) / 1e6
        except OSError:
            pass
        return None

    def out_of_memory(self) -> bool:
        """Whether the kernel killed a process here for reaching the limit."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            with open(os.path.join(self.path, name)) as fh:
                for line in fh:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill" and value.strip().isdigit():
                        return int(value) > 0
        except OSError:
            pass
        return False

    def kill_all(self) -> bool:
        """Send SIGKILL to every process still in the cgroup; True when none is left (its processes die a moment
        after their sandbox's bwrap: a PID namespace's processes go once its first process has)."""
        try:
            with open(os.path.join(self.path, "cgroup.procs")) as fh:
                pids = [int(line) for line in fh if line.strip().isdigit()]
        except OSError:
            return True
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        return not pids

    def remove(self) -> bool:
        """Remove the cgroup (it must hold no process any more); whether it is gone."""
        try:
            os.rmdir(self.path)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _v1_parent() -> str | None:
    """This process's own cgroup in the v1 memory hierarchy, when one is mounted."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    own = next((line.split(":", 2)[2] for line in lines if "memory" in line.split(":")[1].split(",")), None)
    if own is None:
        return None
    for mount in mounts:
        fields = mount.split(" - ")
        if len(fields) == 2 and fields[1].startswith("cgroup ") and "memory" in fields[1].split()[-1].split(","):
            root, point = mount.split()[3], mount.split()[4]
            relative = os.path.relpath(own, root) if own.startswith(root) else None
            if relative is not None:
                return os.path.normpath(os.path.join(point, relative))
    return None


def _v2_parent() -> str | None:
    """``/sys/fs/cgroup/assay-sandboxes`` with memory enabled for its children (made when missing, and kept, as
    a systemd slice is), where the root cgroup passes the memory controller down."""
    controllers = V2_ROOT / "cgroup.controllers"
    if not controllers.exists() or "memory" not in controllers.read_text().split():
        return None
    if "memory" not in (V2_ROOT / "cgroup.subtree_control").read_text().split():
        return None  # not enabled below the root: left as the machine's owner set it
    parent = V2_ROOT / V2_PARENT
    parent.mkdir(mode=0o755, exist_ok=True)
    if "memory" not in (parent / "cgroup.subtree_control").read_text().split():
        (parent / "cgroup.subtree_control").write_text("+memory")
    return str(parent)


def find_memory_cgroups() -> MemoryCgroups | None:
    """Where memory cgroups can be made here (tried once: make one, limit it, remove it), or None."""
    if os.geteuid() != 0:
        return None
    for version, find in ((2, _v2_parent), (1, _v1_parent)):
        try:
            parent = find()
            if parent is None:
                continue
            found = MemoryCgroups(parent, version)
            found.sweep()
            found.create(64 << 20).remove()
            return found
        except OSError:
            continue
    return None
