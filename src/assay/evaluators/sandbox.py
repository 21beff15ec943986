"""Run untrusted Python in a separate, limited process: a temp work directory (removed afterwards), a clean
environment, time/memory/CPU/process limits and, where the OS allows, no network and a read-only filesystem.

The isolation itself is done by ``sandbox_launch.py`` inside the child; this module prepares, waits, kills what
is left and reads the outcome. An infrastructure failure raises :class:`SandboxError` (an error verdict).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
LAUNCHER = HERE / "sandbox_launch.py"
HARNESS = HERE / "sandbox_harness.py"
CGROUP_PIDS = Path("/sys/fs/cgroup/pids")
SETUP_FAILED = 97
MAX_OUTPUT = 1 << 20  # bytes of stdout/stderr kept from a program


class SandboxError(Exception):
    """The sandbox could not run the program (cannot start Python, cannot set up isolation)."""


@dataclass
class Limits:
    """What a sandboxed program may use."""

    timeout_s: float = 10.0
    memory_mb: int = 512
    max_processes: int = 32
    file_mb: int = 16


@dataclass
class Outcome:
    """How a sandboxed program ended: ``outcome`` passed | failed | timed_out | crashed, with the harness result."""

    outcome: str
    result: dict[str, Any] = field(default_factory=dict)
    isolation: dict[str, Any] = field(default_factory=dict)
    returncode: int | None = None
    stderr_tail: str = ""
    seconds: float = 0.0


def clean_env(workdir: str) -> dict[str, str]:
    """The only environment a program sees: no variable of the user's (no keys, no tokens, no proxies)."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": workdir,
        "TMPDIR": workdir,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
    }


def _make_cgroup(max_processes: int) -> Path | None:
    """A pids cgroup capping the program's processes (root on cgroup v1 or v2); None where unavailable."""
    if os.geteuid() != 0:
        return None
    base = CGROUP_PIDS if CGROUP_PIDS.is_dir() else Path("/sys/fs/cgroup")
    if not (base / "cgroup.procs").exists():
        return None
    path = base / f"assay-exec-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        path.mkdir()
        (path / "pids.max").write_text(str(max_processes))
    except OSError:
        with contextlib.suppress(OSError):
            path.rmdir()
        return None
    return path


def _kill_cgroup(path: Path, *, remove: bool = True) -> None:
    for _ in range(50):
        try:
            pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
        except OSError:
            return
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)
    for _ in range(50 if remove else 0):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)


async def _bounded(stream: asyncio.StreamReader) -> bytes:
    """Read a pipe to its end keeping at most the first and the last MAX_OUTPUT // 2 bytes: a program that
    prints without end costs the parent no more memory than that (the isolation line comes first, the result last)."""
    half = MAX_OUTPUT // 2
    head = bytearray()
    tail = bytearray()
    dropped = False
    while chunk := await stream.read(65536):
        if len(head) < half:
            take = half - len(head)
            head += chunk[:take]
            chunk = chunk[take:]
        tail += chunk
        if len(tail) > half:
            del tail[: len(tail) - half]
            dropped = True
    return bytes(head) + (b"\n" if dropped else b"") + bytes(tail)


def _marker_result(stdout: str, nonce: str) -> dict[str, Any] | None:
    marker = f"ASSAY-RESULT-{nonce} "
    for line in reversed(stdout.splitlines()):
        if line.startswith(marker):
            try:
                value = json.loads(line[len(marker) :])
            except json.JSONDecodeError:
                return None
            return value if isinstance(value, dict) else None
    return None


def _isolation(stderr: str) -> dict[str, Any]:
    for line in stderr.splitlines():
        if line.startswith("ASSAY-ISOLATION "):
            with contextlib.suppress(json.JSONDecodeError):
                value = json.loads(line.removeprefix("ASSAY-ISOLATION "))
                return value if isinstance(value, dict) else {}
    return {}


async def run_python(code: str, tests: dict[str, Any], limits: Limits) -> Outcome:
    """Run ``code`` and its ``tests`` (the harness spec: style, tests, entry_point, …) under ``limits``."""
    workdir = tempfile.mkdtemp(prefix="assay-exec-")
    cgroup = _make_cgroup(limits.max_processes)
    started = time.perf_counter()
    nonce = secrets.token_hex(16)
    try:
        spec_path = os.path.join(workdir, ".assay-spec.json")
        with open(spec_path, "w", encoding="utf-8") as fh:
            json.dump({"code": code, **tests}, fh)
        launch = {
            "workdir": workdir,
            "python": sys.executable,
            "harness": str(HARNESS),
            "spec_path": spec_path,
            "env": clean_env(workdir),
            "memory_mb": limits.memory_mb,
            "cpu_s": max(1, int(limits.timeout_s + 0.999)),
            "file_mb": limits.file_mb,
            "max_processes": limits.max_processes,
            "cgroup": str(cgroup) if cgroup else None,
        }
        launch_path = os.path.join(workdir, ".assay-launch.json")
        with open(launch_path, "w", encoding="utf-8") as fh:
            json.dump(launch, fh)
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-I",
                "-S",
                str(LAUNCHER),
                launch_path,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=clean_env(workdir),
                cwd=workdir,
                start_new_session=True,
            )
        except OSError as err:
            raise SandboxError(f"cannot start {sys.executable}: {err}") from None
        timed_out = False
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        readers = asyncio.gather(_bounded(proc.stdout), _bounded(proc.stderr))
        try:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                proc.stdin.write((nonce + "\n").encode())
                await proc.stdin.drain()
                proc.stdin.close()
            await asyncio.wait_for(proc.wait(), limits.timeout_s)
        except TimeoutError:
            timed_out = True
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            if cgroup is not None:  # a process that left the group (setsid) is still in the cgroup
                _kill_cgroup(cgroup, remove=False)
        finally:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()
        try:  # a descendant that escaped every kill may hold the pipes open: stop reading after a grace
            out, err_bytes = await asyncio.wait_for(readers, 5.0)
        except TimeoutError:
            out, err_bytes = b"", b""
        stdout = out.decode("utf-8", "replace")
        stderr = err_bytes.decode("utf-8", "replace")
        seconds = time.perf_counter() - started
        isolation = _isolation(stderr)
        tail = "\n".join(ln for ln in stderr.splitlines() if not ln.startswith("ASSAY-ISOLATION "))[-2000:]
        if proc.returncode == SETUP_FAILED and "ASSAY-SETUP-FAILED" in stderr:
            raise SandboxError("could not set up the sandbox: " + stderr.split("ASSAY-SETUP-FAILED", 1)[1].strip())
        if timed_out:
            return Outcome("timed_out", {}, isolation, proc.returncode, tail, seconds)
        result = _marker_result(stdout, nonce)
        if result is None:
            return Outcome("crashed", {}, isolation, proc.returncode, tail, seconds)
        return Outcome(str(result.get("outcome", "crashed")), result, isolation, proc.returncode, tail, seconds)
    finally:
        if cgroup is not None:
            _kill_cgroup(cgroup)
        shutil.rmtree(workdir, ignore_errors=True)
