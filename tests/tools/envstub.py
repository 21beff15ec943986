"""A TEST DOUBLE of an Environment: a host temp folder as the workspace, programs run by plain subprocess (no
sandbox, no limits), its shell a real persistent bash. Only for testing the tools' logic until (and beside) the
real providers; never use it to run untrusted code."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from assay.environments.base import WORKSPACE, Environment, Shell, ShellResult
from assay.sandbox.box import ExecResult


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
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.root)},
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
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            await self.proc.wait()
        self.proc = None


class HostEnvironment(Environment):
    """The workspace is a temp folder; /workspace in argv cwd is mapped to it (paths inside argv are not)."""

    def __init__(self, files: Mapping[str, str] | None = None) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="assay-envstub-")).resolve()
        self._shell: HostShell | None = None
        self.check_files: dict[str, bytes] = {}
        for name, text in (files or {}).items():
            self.write_file(name, text)
        self.initial = {name: self.read_file(name) for name in self.list_files()}

    def _host(self, path: str) -> Path:
        if path == WORKSPACE or path.startswith(WORKSPACE + "/"):
            path = path[len(WORKSPACE) :].lstrip("/")
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
        started = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=self._host(cwd or WORKSPACE),
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.root), **(env or {})},
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        try:
            async with asyncio.timeout(timeout_s):
                out, err = await proc.communicate(input)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            return ExecResult(None, b"", b"", True, time.perf_counter() - started)
        return ExecResult(proc.returncode, out, err, False, time.perf_counter() - started)

    async def shell(self) -> Shell:
        if self._shell is None:
            self._shell = HostShell(self.root)
        return self._shell

    def read_file(self, path: str) -> bytes:
        return self._host(path).read_bytes()

    def write_file(self, path: str, data: bytes | str) -> None:
        target = self._host(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.encode() if isinstance(data, str) else data)

    def list_files(self) -> list[str]:
        found = []
        for dirpath, _dirs, names in os.walk(self.root):
            for name in names:
                path = Path(dirpath) / name
                if path.is_file() and not path.is_symlink():
                    found.append(path.relative_to(self.root).as_posix())
        return sorted(found)

    def initial_file(self, path: str) -> bytes | None:
        return self.initial.get(path)

    def add_check_files(self, files: Mapping[str, bytes]) -> None:
        self.check_files.update(files)

    async def close(self) -> None:
        if self._shell is not None:
            await self._shell.close()
        shutil.rmtree(self.root, ignore_errors=True)
