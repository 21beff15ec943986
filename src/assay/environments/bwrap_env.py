"""The bubblewrap environment: one :class:`~assay.sandbox.Sandbox` per sample, its workspace at ``/workspace``.

Limits map onto the sandbox's (``assay.sandbox.limits``): ``memory_mb`` is the memory cgroup's total (and each
process's address space), ``disk_mb`` the size of the sample's one tmpfs (workspace, ``/tmp``, ``/dev/shm``),
``max_processes`` RLIMIT_NPROC in its user namespace, ``command_timeout_s`` each program's wall time. ``cpu_s``:
where the sandbox's cgroup accounts CPU (cgroup v2's ``cpu.stat``) it is the whole sample's, checked before each
program; in a v1 memory cgroup it is each process's RLIMIT_CPU. ``wall_s`` is the provider's: programs are cut at
its end and every later ``exec`` or shell command fails fast with :class:`EnvironmentFailed`. File methods read and
write the host's copy of the workspace without following links (``confined.py``).
"""

from __future__ import annotations

import contextlib
import posixpath
import re
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.environments.base import CHECK_DIR, WORKSPACE, Environment, EnvironmentFailed, EnvironmentSpec, Shell
from assay.environments.cleanup import base_dir, remove_tree
from assay.environments.confined import links, read, regular_files, relative_parts, remove, signatures, write
from assay.environments.packages import PACKAGES_DIR, package_binds
from assay.environments.shell import BashShell
from assay.environments.workspace import materialise
from assay.sandbox.box import ExecResult, Sandbox, SandboxError
from assay.sandbox.layout import Layout
from assay.sandbox.limits import Limits

TAIL_LINES = 20  # lines of a failed setup's output quoted in the error


def sandbox_limits(spec: EnvironmentSpec) -> Limits:
    """The sandbox limits that carry out a spec's :class:`EnvironmentLimits`."""
    lim = spec.limits
    return Limits(
        timeout_s=lim.command_timeout_s,
        memory_mb=lim.memory_mb,
        memory_total_mb=lim.memory_mb,
        max_processes=lim.max_processes,
        file_mb=lim.disk_mb,
        open_files=1024,
        tmp_mb=min(lim.disk_mb, 256),
        cpu_s=lim.cpu_s,
        disk_mb=lim.disk_mb,
    )


def _layout(spec: EnvironmentSpec) -> Layout:
    rootfs = None
    if spec.rootfs:
        path = Path(spec.rootfs).expanduser()
        rootfs = str((Path(spec.base_dir or ".") / path).resolve())
        if not Path(rootfs).is_dir():
            raise EnvironmentFailed(f"environment.rootfs: {rootfs!r} is not a directory")
    try:
        binds = tuple(package_binds(spec.packages))
    except ValueError as err:
        raise EnvironmentFailed(str(err)) from None
    env = (("PYTHONPATH", PACKAGES_DIR),) if binds else ()
    return Layout(home=WORKSPACE, rootfs=rootfs, binds=binds, network=spec.limits.network, env=env)


def _tail(result: ExecResult) -> str:
    text = (result.stdout + result.stderr).decode("utf-8", "replace").rstrip()
    return "\n".join(text.splitlines()[-TAIL_LINES:]) or "(no output)"


class BwrapEnvironment(Environment):
    """One sample's environment under bubblewrap; make it with :meth:`create`, end it with :meth:`close`."""

    kind = "bwrap"

    def __init__(self, spec: EnvironmentSpec, sample_id: str = "") -> None:
        self.spec = spec
        self.sample_id = sample_id
        self._deadline = time.monotonic() + spec.limits.wall_s
        self._dir: Path | None = None
        self._box: Sandbox | None = None
        self._check: Path | None = None
        self._initial: dict[str, bytes] = {}
        self._shell: BashShell | None = None
        self._closed = False

    @classmethod
    async def create(cls, spec: EnvironmentSpec, row: Mapping[str, Any], sample_id: str = "") -> BwrapEnvironment:
        """Make, fill and set up a sample's environment; EnvironmentFailed (nothing left behind) when it cannot."""
        env = cls(spec, sample_id)
        try:
            await env._open(row)
        except BaseException:
            with contextlib.suppress(Exception):
                await env.close()
            raise
        return env

    async def _open(self, row: Mapping[str, Any]) -> None:
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", self.sample_id)[:40] or "sample"
        self._dir = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=base_dir()))
        self._dir.chmod(0o711)
        self._check = self._dir / "check"
        self._check.mkdir(mode=0o755)
        box = Sandbox(sandbox_limits(self.spec), layout=_layout(self.spec), base_dir=str(self._dir))
        try:
            box.open()
        except SandboxError as err:
            raise EnvironmentFailed(f"cannot make the environment's sandbox: {err}") from None
        self._box = box
        try:
            self._initial = materialise(self.spec, row, box.workdir, box.host.run_as)
        except (ValueError, OSError) as err:
            raise EnvironmentFailed(f"cannot make the workspace: {err}") from None
        if self.spec.setup:
            await self._setup(self.spec.setup)

    async def _setup(self, command: str) -> None:
        result = await self.exec(["bash", "-c", command])
        if result.timed_out:
            raise EnvironmentFailed(f"setup `{command}` timed out after {result.seconds:.1f} s:\n{_tail(result)}")
        if result.returncode != 0:
            raise EnvironmentFailed(f"setup `{command}` exited with {result.returncode}:\n{_tail(result)}")

    def _allowed(self, timeout_s: float | None) -> float:
        """The time a program may take now; EnvironmentFailed once the environment is closed or out of time."""
        if self._closed or self._box is None:
            raise EnvironmentFailed("the environment is closed")
        lim = self.spec.limits
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise EnvironmentFailed(f"the environment's wall time ({lim.wall_s:g} s) is over")
        used = self._box.cpu_seconds()
        if used is not None and used >= lim.cpu_s:
            raise EnvironmentFailed(f"the environment's CPU time ({lim.cpu_s:g} s) is used up")
        return min(lim.command_timeout_s if timeout_s is None else timeout_s, left)

    async def exec(
        self,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        timeout_s: float | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        check_files: bool = False,
    ) -> ExecResult:
        """Run a program inside to its end; ``check_files`` mounts the check files at /assay-check for it alone."""
        timeout = self._allowed(timeout_s)
        assert self._box is not None and self._check is not None
        binds = [(str(self._check), CHECK_DIR)] if check_files else []
        where = posixpath.join(WORKSPACE, cwd) if cwd else None
        try:
            return await self._box.exec(argv, input=input, timeout=timeout, cwd=where, env=env, binds=binds)
        except SandboxError as err:
            raise EnvironmentFailed(str(err)) from None

    async def shell(self) -> Shell:
        """The sample's persistent bash session (started at the first call)."""
        self._allowed(None)
        if self._shell is None:
            assert self._box is not None
            self._shell = BashShell(self._box, before_run=self._allowed)
        return self._shell

    def _workdir(self) -> str:
        if self._closed or self._box is None:
            raise EnvironmentFailed("the environment is closed")
        return str(self._box.workdir)

    def read_file(self, path: str) -> bytes:
        """A workspace file's bytes; a link (also one on the way) is refused with ValueError, never followed."""
        return read(self._workdir(), relative_parts(path, WORKSPACE))

    def write_file(self, path: str, data: bytes | str) -> None:
        """Create or replace a workspace file (parents made), owned by the sandbox's user; links not followed."""
        root = self._workdir()
        uid = self._box.host.run_as if self._box is not None else None
        payload = data.encode() if isinstance(data, str) else data
        write(root, relative_parts(path, WORKSPACE), payload, uid)

    def list_files(self) -> list[str]:
        """Every regular file of the workspace, relative and sorted (links neither listed nor followed)."""
        return regular_files(self._workdir())

    def snapshot(self) -> dict[str, str]:
        """Each workspace file's size, modification time and inode (no file read): a program that writes a file
        changes them. (A program that sets the time back could hide a change from the transcript's change list; the
        final diff and the checks read contents.)"""
        return signatures(self._workdir())

    async def list_links(self) -> list[str]:
        """Every symbolic link of the workspace, read on the host (no program needed in a bare root filesystem)."""
        return links(self._workdir())

    async def remove(self, path: str) -> None:
        """Remove a workspace file, link or folder on the host, reached without following links."""
        remove(self._workdir(), relative_parts(path, WORKSPACE))

    def initial_file(self, path: str) -> bytes | None:
        """A workspace file as it was made, before setup and the agent (None when it was not there)."""
        return self._initial.get("/".join(relative_parts(path, WORKSPACE)))

    def add_check_files(self, files: Mapping[str, bytes]) -> None:
        """A check's files, kept outside the workspace and mounted read-only at CHECK_DIR by ``exec(check_files=)``."""
        if self._closed or self._check is None:
            raise EnvironmentFailed("the environment is closed")
        for path, data in files.items():
            content = data.encode() if isinstance(data, str) else data
            write(str(self._check), relative_parts(path, CHECK_DIR, "check file"), content, None)

    async def stop_programs(self) -> None:
        """End the agent's shell and every program it left running (background jobs included), keeping the files."""
        shell, self._shell = self._shell, None
        if shell is not None:
            await shell.close()
        if self._box is not None:
            await self._box.kill_all()

    async def close(self) -> None:
        """Kill everything still running, remove the workspace, its tmpfs and cgroup, and the folder (idempotent)."""
        if self._closed:
            return
        self._closed = True
        shell, self._shell = self._shell, None
        box, self._box = self._box, None
        try:
            if shell is not None:
                await shell.close()
            if box is not None:
                await box.close()
        finally:
            folder, self._dir = self._dir, None
            if folder is not None:
                remove_tree(str(folder))


async def create(spec: EnvironmentSpec, row: Mapping[str, Any], sample_id: str = "") -> BwrapEnvironment:
    """A sample's bubblewrap environment, made and set up (see :meth:`BwrapEnvironment.create`)."""
    return await BwrapEnvironment.create(spec, row, sample_id)
