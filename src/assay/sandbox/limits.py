"""What one sandboxed program may use, and the ``prlimit`` arguments that impose it inside the sandbox."""

from __future__ import annotations

import math
from dataclasses import dataclass

MB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Per program: wall time, then per process: address space, CPU seconds, file size, open files; per sandbox:
    processes, and where the machine allows them (see ``cgroup.py``, ``diskfs.py``) the memory of all its
    processes and files together (``memory_total_mb``) and the size and number of all its files (``disk_mb``,
    ``max_files``); elsewhere a private ``/tmp`` and ``/dev/shm`` of ``tmp_mb`` each (memory-backed)."""

    timeout_s: float = 10.0
    memory_mb: int = 512
    max_processes: int = 32
    file_mb: int = 16
    open_files: int = 256
    tmp_mb: int = 64
    cpu_s: float | None = None  # default: the time limit
    memory_total_mb: int | None = None  # default: twice memory_mb
    disk_mb: int = 256
    max_files: int = 65536

    @property
    def cpu_seconds(self) -> int:
        return max(1, math.ceil(self.cpu_s if self.cpu_s is not None else self.timeout_s))

    @property
    def total_memory_mb(self) -> int:
        """The memory the sandbox's processes and files may use together (where a memory cgroup can be made)."""
        return self.memory_total_mb if self.memory_total_mb is not None else 2 * self.memory_mb

    def prlimit_args(self) -> list[str]:
        """``prlimit`` options (util-linux). RLIMIT_NPROC is set inside the sandbox's own user namespace, where
        the kernel counts only that sandbox's processes, so parallel sandboxes under one uid do not share it."""
        cpu = self.cpu_seconds
        return [
            f"--as={self.memory_mb * MB}",
            f"--cpu={cpu}:{cpu + 1}",
            f"--fsize={self.file_mb * MB}",
            f"--nofile={self.open_files}",
            f"--nproc={self.max_processes + 1}",  # + the sandbox's init (bwrap's reaper)
            "--core=0",
        ]

    def setrlimit_pairs(self) -> list[tuple[str, int, int]]:
        """The same limits as ``(resource name, soft, hard)``, for a process that limits itself (no prlimit)."""
        cpu = self.cpu_seconds
        return [
            ("RLIMIT_AS", self.memory_mb * MB, self.memory_mb * MB),
            ("RLIMIT_CPU", cpu, cpu + 1),
            ("RLIMIT_FSIZE", self.file_mb * MB, self.file_mb * MB),
            ("RLIMIT_NOFILE", self.open_files, self.open_files),
            ("RLIMIT_NPROC", self.max_processes + 1, self.max_processes + 1),
            ("RLIMIT_CORE", 0, 0),
        ]
