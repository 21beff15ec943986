"""A sandbox for one sample: a private work directory that lives as long as the sandbox, and programs run in it
under bubblewrap with limits (see ``bwrap.py`` for what they can and cannot reach).

``code_exec`` makes one per program; an agent tool can keep one for a whole trajectory, so files persist between
calls::

    async with Sandbox(Limits(timeout_s=30)) as box:
        box.write_file("data.csv", b"a,b\\n1,2\\n")
        result = await box.exec(["bash", "-c", "wc -l data.csv"])   # ExecResult: stdout, stderr, returncode
        proc = await box.spawn(["python3", "-i"], stdin=PIPE)      # a long-lived process (a REPL), killed at exit

Each ``exec``/``spawn`` is a new bubblewrap instance over the same directory: processes do not outlive their
call (the sandbox's PID namespace ends with it), files do. Where the machine allows it (``cgroup.py``,
``diskfs.py``: as root outside a locked-down container) all of a sandbox's processes share one memory cgroup and
all its files one tmpfs, so ``Limits.memory_total_mb`` and ``disk_mb`` bound the sandbox as a whole. Closing kills
what is left and removes the directory, the tmpfs and the cgroup.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from assay.sandbox.bwrap import HOME, Host, data_files, find_host, spawn_user
from assay.sandbox.cgroup import MemoryCgroup
from assay.sandbox.diskfs import PARTS, mount_tmpfs, unmount
from assay.sandbox.layout import Layout
from assay.sandbox.limits import MB, Limits

PIPE = asyncio.subprocess.PIPE
DEVNULL = asyncio.subprocess.DEVNULL
MAX_OUTPUT = 1 << 20  # bytes of stdout and of stderr kept per process (its first and last halves)


class SandboxError(Exception):
    """The sandbox failed (not the program in it): an error verdict, never a failure."""


@dataclass
class ExecResult:
    """How a sandboxed command ended. ``returncode`` is 128+N when it was killed by signal N inside."""

    returncode: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool
    seconds: float


def signal_name(returncode: int | None) -> str | None:
    """The signal that ended a sandboxed program (bubblewrap exits with 128+N for one killed by signal N)."""
    if returncode is None or not 128 < returncode < 128 + 65:
        return None
    try:
        return signal.Signals(returncode - 128).name
    except ValueError:
        return f"signal {returncode - 128}"


async def _bounded(stream: asyncio.StreamReader | None) -> bytes:
    """Read a pipe to its end keeping at most the first and the last MAX_OUTPUT // 2 bytes."""
    if stream is None:
        return b""
    half = MAX_OUTPUT // 2
    head, tail, dropped = bytearray(), bytearray(), False
    while chunk := await stream.read(65536):
        if len(head) < half:
            take = half - len(head)
            head += chunk[:take]
            chunk = chunk[take:]
        tail += chunk
        if len(tail) > half:
            del tail[: len(tail) - half]
            dropped = True
    return bytes(head) + (b"\n[...]\n" if dropped else b"") + bytes(tail)


class SandboxProcess:
    """One program running in the sandbox; its stdout and stderr (when piped) are read as it runs, bounded."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.stdin = proc.stdin
        self._outputs = asyncio.gather(_bounded(proc.stdout), _bounded(proc.stderr))

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def kill(self) -> None:
        """End the program and every process it started (bwrap's death ends the sandbox's PID namespace)."""
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.proc.pid, signal.SIGKILL)

    async def wait(self, timeout: float | None = None) -> int:
        """Its exit code (128+N when killed by signal N inside); raises TimeoutError past ``timeout``."""
        if timeout is None:
            return await self.proc.wait()
        return await asyncio.wait_for(self.proc.wait(), timeout)

    async def output(self, grace: float = 5.0) -> tuple[bytes, bytes]:
        """``(stdout, stderr)`` once the program has ended (empty after ``grace`` seconds if a pipe stays open)."""
        try:
            return await asyncio.wait_for(asyncio.shield(self._outputs), grace)
        except TimeoutError:
            return b"", b""


class Sandbox:
    """A sandbox for one sample (an async context manager): a work directory, programs run in it, cleanup."""

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        python: str | None = None,
        layout: Layout | None = None,
        base_dir: str | None = None,
    ) -> None:
        """``layout``: where things are inside (default: code_exec's, ``layout.py``); ``base_dir``: the host folder
        its directory is made in (default: the temp directory)."""
        self.limits = limits or Limits()
        self.layout = layout or Layout()
        self._base_dir = base_dir
        self._python_setting = python
        self._host: Host | None = None
        self._root: Path | None = None  # the sandbox's directory on the host (a tmpfs mount when host.tmpfs)
        self._workdir: Path | None = None
        self._cgroup: MemoryCgroup | None = None
        self._processes: list[SandboxProcess] = []

    @property
    def host(self) -> Host:
        if self._host is None:
            self._host = find_host(self._python_setting)
        return self._host

    @property
    def python(self) -> str:
        """The interpreter to run in the sandbox (standard library only)."""
        return self.host.python

    @property
    def workdir(self) -> Path:
        """The work directory on the host (``layout.home`` inside: ``/sandbox`` by default)."""
        if self._workdir is None:
            raise SandboxError("the sandbox is not open (use `async with Sandbox() as box`)")
        return self._workdir

    def open(self) -> Sandbox:
        """Find bubblewrap (SandboxUnavailable if it cannot work here) and make the work directory, on a tmpfs of
        its own and with a memory cgroup where this machine allows them (SandboxError if that fails after all)."""
        host = self.host
        if self._root is not None:
            return self
        root = Path(tempfile.mkdtemp(prefix=f"assay-sandbox-{os.getpid()}-", dir=self._base_dir or host.workdir_base()))
        self._root = root
        try:
            if host.tmpfs:
                mount_tmpfs(str(root), self.limits.disk_mb, self.limits.max_files, host.run_as)
                self._workdir = root / "work"
            else:
                if host.run_as is not None:
                    os.chown(root, host.run_as, host.run_as)
                self._workdir = root
            if host.memory_cgroups is not None:
                self._cgroup = host.memory_cgroups.create(self.limits.total_memory_mb * MB)
        except OSError as err:
            self._release()
            raise SandboxError(f"cannot set up the sandbox's limits: {err}") from None
        return self

    def cpu_seconds(self) -> float | None:
        """CPU seconds all its processes used together, where its cgroup accounts them (else None)."""
        return self._cgroup.cpu_seconds() if self._cgroup is not None else None

    def out_of_memory(self) -> bool:
        """Whether one of the sandbox's processes was killed for reaching the memory limit of them all together."""
        return self._cgroup is not None and self._cgroup.out_of_memory()

    async def __aenter__(self) -> Sandbox:
        return self.open()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def write_file(self, name: str, data: bytes | str) -> None:
        """Put a file in the work directory (a plain name; a link the program planted is not followed)."""
        if not name or "/" in name or name in (".", ".."):
            raise ValueError(f"write_file takes a plain file name, not {name!r}")
        dir_fd = os.open(self.workdir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644, dir_fd=dir_fd)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data.encode() if isinstance(data, str) else data)
                if self.host.run_as is not None:
                    os.fchown(fh.fileno(), self.host.run_as, self.host.run_as)
        finally:
            os.close(dir_fd)

    async def spawn(
        self,
        argv: Sequence[str],
        *,
        stdin: int | None = DEVNULL,
        stdout: int | None = PIPE,
        stderr: int | None = PIPE,
        pass_fds: Sequence[int] = (),
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        binds: Sequence[tuple[str, str]] = (),
    ) -> SandboxProcess:
        """Start ``argv`` in the sandbox (paths as seen inside; cwd the layout's home unless ``cwd``); ``pass_fds``
        stay open in it; ``env`` adds variables and ``binds`` (host path, path inside) read-only folders for it."""
        host, workdir = self.host, str(self.workdir)
        layout = self.layout.for_call(cwd, env, binds)
        fds: dict[str, int] = {}
        try:
            for path, data in data_files(layout.home).items():
                fds[path] = os.memfd_create(path.rsplit("/", 1)[-1])
                os.write(fds[path], data)
                os.lseek(fds[path], 0, os.SEEK_SET)
            scratch = None
            if host.tmpfs and self._root is not None:
                scratch = (str(self._root / PARTS[1]), str(self._root / PARTS[2]))
            enter = self._cgroup.enter_file if self._cgroup is not None else None
            try:
                command = host.command(workdir, self.limits, argv, fds, scratch=scratch, cgroup=enter, layout=layout)
            except (OSError, ValueError) as err:
                raise SandboxError(f"cannot lay out the sandbox: {err}") from None
            try:
                proc = await asyncio.create_subprocess_exec(
                    *command,
                    stdin=stdin,
                    stdout=stdout,
                    stderr=stderr,
                    pass_fds=(*pass_fds, *fds.values()),
                    cwd="/",
                    env={"PATH": "/usr/bin:/bin"},
                    start_new_session=True,
                    **({} if enter is not None else spawn_user()),  # else the command drops to the user itself
                )
            except (OSError, subprocess.SubprocessError) as err:
                raise SandboxError(f"cannot start {host.bwrap}: {err}") from None
        finally:
            for fd in fds.values():
                os.close(fd)
        process = SandboxProcess(proc)
        self._processes.append(process)
        return process

    async def exec(
        self,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        timeout: float | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        binds: Sequence[tuple[str, str]] = (),
    ) -> ExecResult:
        """Run ``argv`` to its end (at most ``timeout``, default the limits' time): its output and exit code
        (``cwd``, ``env``, ``binds``: as :meth:`spawn`)."""
        started = time.perf_counter()
        stdin = PIPE if input is not None else DEVNULL
        process = await self.spawn(argv, stdin=stdin, cwd=cwd, env=env, binds=binds)
        timed_out = False
        try:
            if input is not None and process.stdin is not None:
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    process.stdin.write(input)
                    await process.stdin.drain()
                    process.stdin.close()
            await process.wait(self.limits.timeout_s if timeout is None else timeout)
        except TimeoutError:
            timed_out = True
        finally:
            process.kill()
            await process.wait()
        out, err = await process.output()
        return ExecResult(process.returncode, out, err, timed_out, time.perf_counter() - started)

    async def kill_all(self) -> None:
        """Kill every program still running in the sandbox (each bubblewrap instance and its PID namespace with
        it); the files stay. With a cgroup, it returns once the cgroup holds no process, so nothing the programs
        started (a background job) can still write when it returns."""
        for process in self._processes:
            process.kill()
        for process in self._processes:
            with contextlib.suppress(Exception):
                await process.wait()
        self._processes.clear()
        if self._cgroup is not None:
            for _ in range(200):
                if self._cgroup.kill_all():
                    break
                await asyncio.sleep(0.01)

    async def close(self) -> None:
        """Kill every program still running and remove the work directory, its tmpfs and the memory cgroup."""
        await self.kill_all()
        cgroup, self._cgroup = self._cgroup, None
        self._release()
        if cgroup is not None:  # its processes are gone once the PID namespace is: at most a moment after bwrap
            for _ in range(100):
                if cgroup.remove():
                    break
                await asyncio.sleep(0.02)

    def _release(self) -> None:
        """Unmount and remove the sandbox's directory (and its cgroup, when it holds no process)."""
        root, self._root, self._workdir = self._root, None, None
        if root is not None:
            if self.host.tmpfs:
                with contextlib.suppress(OSError):
                    unmount(str(root))
            remove_dir(root)
        if self._cgroup is not None and self._cgroup.remove():
            self._cgroup = None


def remove_dir(path: str | Path) -> None:
    """Remove a folder and everything in it, also where a program took away its own permissions on parts of it
    (nothing when it is not there; what still cannot be removed is left, silently)."""

    def fix(func: Callable[[str], object], target: str, _exc: object) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(target), stat.S_IRWXU)
            if os.path.isdir(target) and not os.path.islink(target):
                os.chmod(target, stat.S_IRWXU)
            func(target)

    shutil.rmtree(path, onerror=fix)
    shutil.rmtree(path, ignore_errors=True)


__all__ = [
    "DEVNULL",
    "HOME",
    "PIPE",
    "ExecResult",
    "Limits",
    "Sandbox",
    "SandboxError",
    "SandboxProcess",
    "remove_dir",
]
