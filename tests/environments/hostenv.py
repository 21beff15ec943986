"""A TEST DOUBLE of an Environment: a folder on this machine as the workspace, programs run as plain processes of
this machine (no sandbox, no limits) and its shell a real persistent bash. It tests the logic of the tools and of
the environment evaluators without bubblewrap; never use it to run untrusted code.

``/workspace`` (and the workspace's folder on this machine) in a path or ``cwd`` is the workspace;
``/assay-check/...`` in the argv of a check (``exec(check_files=True)``) is the folder its check files went to;
``python3`` in an argv is this interpreter (which has pytest). Other paths inside an argv are not mapped.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.environments.base import CHECK_DIR, WORKSPACE, Environment, Shell, ShellResult
from assay.sandbox.box import ExecResult


def _environ(home: Path, env: Mapping[str, str] | None = None) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), **(env or {})}


async def _kill(proc: asyncio.subprocess.Process) -> None:
    """Kill a process started in a session of its own, with everything it started."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    await proc.wait()


class HostShell(Shell):
    """``bash --norc`` kept running in the workspace; each command's end is found by a marker line it prints."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.proc: asyncio.subprocess.Process | None = None

    async def _start(self) -> asyncio.subprocess.Process:
        if self.proc is None or self.proc.returncode is not None:
            self.proc = await asyncio.create_subprocess_exec(
                "bash",
                "--noprofile",
                "--norc",
                cwd=self.root,
                env=_environ(self.root),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        return self.proc

    async def run(self, command: str, *, timeout_s: float) -> ShellResult:
        proc = await self._start()
        assert proc.stdin is not None and proc.stdout is not None
        marker = f"__END_{uuid.uuid4().hex}__"
        proc.stdin.write(f"{command}\nprintf '\\n{marker}%d\\n' $?\n".encode())
        await proc.stdin.drain()
        out = bytearray()
        try:
            async with asyncio.timeout(timeout_s):
                while True:
                    line = await proc.stdout.readline()
                    if not line:
                        return ShellResult(out.decode(errors="replace"), proc.returncode, False)
                    text = line.decode(errors="replace")
                    if text.startswith(marker):
                        body = out.decode(errors="replace")
                        body = body[:-1] if body.endswith("\n") else body  # the newline printf added
                        return ShellResult(body, int(text[len(marker) :].strip()), False)
                    out += line
        except TimeoutError:
            await self.close()
            return ShellResult(out.decode(errors="replace"), None, True)

    async def close(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            await _kill(self.proc)
        self.proc = None


class HostEnvironment(Environment):
    """TEST DOUBLE (no sandbox): ``folder`` holds ``workspace/`` (:attr:`root`, also :attr:`workspace` as a string)
    and ``check/`` (:attr:`check_dir`). Without ``folder`` a temporary one is made and removed by :meth:`close`;
    a given one (a test's tmp_path) is left to the test. ``execs`` lists every argv run, as run."""

    kind = "host"

    def __init__(self, folder: Path | None = None, files: Mapping[str, str] | None = None, state: Any = None) -> None:
        self._owned = folder is None
        self.folder = Path(tempfile.mkdtemp(prefix="assay-hostenv-") if folder is None else folder).resolve()
        self.root = self.folder / "workspace"
        self.root.mkdir(parents=True)
        self.workspace = str(self.root)
        self.check_dir = self.folder / "check"
        self.state = state
        self.execs: list[list[str]] = []
        self._shell: HostShell | None = None
        for path, text in (files or {}).items():
            self.write_file(path, text)
        self._initial = {name: self.read_file(name) for name in self.list_files()}

    def _host(self, path: str) -> Path:
        """The workspace path (relative, under /workspace or under the host folder) on this machine."""
        for prefix in (self.workspace, WORKSPACE):
            if path == prefix or path.startswith(prefix + "/"):
                path = path[len(prefix) :].lstrip("/")
                break
        if path.startswith("/"):
            raise ValueError(f"{path} is outside the workspace")
        target = (self.root / path).resolve()
        if target != self.root and not target.is_relative_to(self.root):
            raise ValueError(f"{path} is outside the workspace")
        return target

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
        args = list(argv)
        if check_files:  # the environment's paths first, so no host path (the interpreter's included) is rewritten
            args = [str(self.check_dir) + a[len(CHECK_DIR) :] if a.startswith(CHECK_DIR + "/") else a for a in args]
        args = [sys.executable if a == "python3" else a for a in args]
        self.execs.append(args)
        started = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            *args,
            cwd=self._host(cwd or WORKSPACE),
            env=_environ(self.root, env),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        try:
            async with asyncio.timeout(timeout_s):
                out, err = await proc.communicate(input)
        except TimeoutError:
            await _kill(proc)
            return ExecResult(None, b"", b"", True, time.perf_counter() - started)
        return ExecResult(proc.returncode, out, err, False, time.perf_counter() - started)

    async def shell(self) -> Shell:
        if self._shell is None:
            self._shell = HostShell(self.root)
        return self._shell

    def read_file(self, path: str) -> bytes:
        target = self._host(path)
        if not target.is_file():
            raise FileNotFoundError(path)
        return target.read_bytes()

    def write_file(self, path: str, data: bytes | str) -> None:
        target = self._host(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.encode() if isinstance(data, str) else data)

    def list_files(self) -> list[str]:
        found = []
        for folder, _dirs, names in os.walk(self.root):  # links to folders are not followed
            for name in names:
                path = Path(folder) / name
                if path.is_file() and not path.is_symlink():
                    found.append(path.relative_to(self.root).as_posix())
        return sorted(found)

    def initial_file(self, path: str) -> bytes | None:
        return self._initial.get(path)

    def add_check_files(self, files: Mapping[str, bytes]) -> None:
        for name, data in files.items():
            target = self.check_dir / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)

    # list_links and remove: the Environment defaults (``find`` and ``rm`` run by exec in the workspace)

    async def stop_programs(self) -> None:
        """End the shell and every program it started, keeping the files."""
        shell, self._shell = self._shell, None
        if shell is not None:
            await shell.close()

    async def close(self) -> None:
        await self.stop_programs()
        if self._owned:
            shutil.rmtree(self.folder, ignore_errors=True)
