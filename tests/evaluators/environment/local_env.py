"""A test double of an Environment: a folder on this machine as the workspace and programs run as plain processes
(no sandbox), so the environment evaluators' own logic is tested without bubblewrap."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.environments.base import CHECK_DIR, Environment, Shell
from assay.sandbox.box import ExecResult


class LocalEnvironment(Environment):
    """``workspace`` is a real folder; ``/check/...`` in a check's argv is the folder its check files went to, and
    ``python3`` is this interpreter (which has pytest)."""

    def __init__(self, root: Path, files: Mapping[str, str] | None = None, state: Any = None) -> None:
        self.root = root
        self.workspace = str(root / "workspace")
        self.check_dir = root / "check"
        Path(self.workspace).mkdir(parents=True)
        for path, text in (files or {}).items():
            self.write_file(path, text)
        self._initial = {name: self.read_file(name) for name in self.list_files()}
        self.state = state
        self.execs: list[list[str]] = []

    def _path(self, path: str) -> Path:
        rel = path.removeprefix(self.workspace + "/").removeprefix("/workspace/")
        full = Path(self.workspace) / rel
        if not os.path.realpath(full).startswith(os.path.realpath(self.workspace) + os.sep):
            raise ValueError(f"{path!r} leaves the workspace")
        return full

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
        args = [sys.executable if a == "python3" else a for a in argv]
        if check_files:
            args = [str(self.check_dir) + a[len(CHECK_DIR) :] if a.startswith(CHECK_DIR + "/") else a for a in args]
        self.execs.append(args)
        environ = {"PATH": os.environ["PATH"], "HOME": self.workspace, **(env or {})}
        start = time.monotonic()
        proc = await asyncio.create_subprocess_exec(
            *args,
            cwd=cwd or self.workspace,
            env=environ,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(input or b""), timeout_s)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return ExecResult(None, b"", b"", True, time.monotonic() - start)
        return ExecResult(proc.returncode, out, err, False, time.monotonic() - start)

    async def shell(self) -> Shell:
        raise NotImplementedError("the evaluators never use the shell")

    def read_file(self, path: str) -> bytes:
        full = self._path(path)
        if not full.is_file():
            raise FileNotFoundError(path)
        return full.read_bytes()

    def write_file(self, path: str, data: bytes | str) -> None:
        full = self._path(path)
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_bytes(data.encode() if isinstance(data, str) else data)

    def list_files(self) -> list[str]:
        out = []
        for folder, _, names in os.walk(self.workspace):  # links to folders are not followed
            for name in names:
                full = Path(folder) / name
                if full.is_file() and not full.is_symlink():
                    out.append(str(full.relative_to(self.workspace)))
        return sorted(out)

    def initial_file(self, path: str) -> bytes | None:
        return self._initial.get(path)

    def add_check_files(self, files: Mapping[str, bytes]) -> None:
        for name, data in files.items():
            target = self.check_dir / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)

    async def close(self) -> None:
        """Nothing to do: the test's tmp_path goes with the test."""
