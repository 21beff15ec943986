"""One ``code_exec`` run: the code in a sandbox serving calls, the task's tests in a trusted process calling it,
a socket between them and nothing else; the verdict is what the trusted process reports.

The program under test writes only to its own stdout/stderr (kept for the details, never parsed) and to its end
of the socket, where all it can send is data. The test process gets its spec on stdin and reports on its stdout,
which nothing in the sandbox can reach.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from assay.evaluators.code import programs, wire
from assay.sandbox.box import PIPE, Sandbox, SandboxError, SandboxProcess
from assay.sandbox.bwrap import sandbox_env
from assay.sandbox.limits import Limits

MAX_EVENT = 1 << 22  # bytes of one event line of the test process (it caps its own far below this)
MAX_LABEL = 2000  # characters of the running test's text kept
EXIT_GRACE_S = 1.0  # for a program the tests saw end to exit by itself, so its exit code tells why


@dataclass
class Outcome:
    """How a run ended: ``outcome`` passed | failed | timed_out | crashed | error, with the test process's result."""

    outcome: str
    result: dict[str, Any] = field(default_factory=dict)
    isolation: dict[str, Any] = field(default_factory=dict)
    returncode: int | None = None  # the sandboxed program's (128+N: killed by signal N)
    stdout_tail: str = ""
    stderr_tail: str = ""
    seconds: float = 0.0
    running: str | None = None  # the test that was running when time ran out
    out_of_memory: bool = False  # a sandboxed process was killed at the memory limit of them all together


async def _start_runner(fd: int, spec: dict[str, Any], limits: Limits) -> tuple[asyncio.subprocess.Process, str]:
    """The trusted test process: this Python, with this process's ``sys.path`` (tests may import what assay can)."""
    cwd = tempfile.mkdtemp(prefix="assay-tests-")
    body = {**spec, "fd": fd, "memory_mb": limits.memory_mb, "cpu_s": limits.cpu_seconds, "file_mb": limits.file_mb}
    body["sys_path"] = [p for p in sys.path if p]  # without site's start-up cost, tests import what assay can
    loader, first = programs.launch("runner", f"{sys.version_info[0]}.{sys.version_info[1]}")
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            "-S",
            "-c",
            loader,
            stdin=PIPE,
            stdout=PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            pass_fds=(fd,),
            cwd=cwd,
            env={k: v for k, v in sandbox_env().items() if k not in ("HOME", "TMPDIR")} | {"HOME": cwd, "TMPDIR": cwd},
            start_new_session=True,
            limit=MAX_EVENT,
        )
    except OSError as err:
        shutil.rmtree(cwd, ignore_errors=True)
        raise SandboxError(f"cannot start the test process ({sys.executable}): {err}") from None
    assert proc.stdin is not None
    proc.stdin.write(first + wire.encode(body).encode("ascii"))
    proc.stdin.close()
    return proc, cwd


@dataclass
class Events:
    """What the test process reported: the test running last, and its result (a dict when it reported one)."""

    running: str | None = None
    result: Any = None

    def add(self, event: object) -> None:
        if not (isinstance(event, list) and len(event) == 2):
            return
        if event[0] == "test":
            self.running = str(event[1])[:MAX_LABEL]
        elif event[0] == "result":
            self.result = event[1]

    @property
    def program_ended(self) -> bool:
        """Whether the test process saw the program end before the tests did (a crash rather than a verdict)."""
        return isinstance(self.result, dict) and self.result.get("outcome") == "crashed"


async def _events(stream: asyncio.StreamReader, events: Events) -> None:
    """Read the test process's events to the end of its output, keeping only what :class:`Events` keeps (the
    process is never left blocked on a full pipe, and a line past MAX_EVENT is skipped, not an error)."""
    while True:
        try:
            line = await stream.readline()
        except ValueError:  # a line past the reader's limit: dropped (the rest of it fails to decode below)
            continue
        if not line:
            return
        with contextlib.suppress(wire.WireError, UnicodeDecodeError):
            events.add(wire.decode(line.decode("ascii").rstrip("\n")))


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


async def run_tests(code: str, spec: dict[str, Any], limits: Limits, *, python: str | None = None) -> Outcome:
    """Run ``code`` against the tests in ``spec`` (style, tests | cases, entry_point | function, prefix, setup)."""
    started = time.perf_counter()
    events = Events()
    cwd: str | None = None
    try:
        async with Sandbox(limits, python=python) as box:
            box.write_file("solution.py", code)
            ours, theirs = socket.socketpair()
            try:
                loader, first = programs.launch("serve", box.host.python_version)
                argv = [box.python, "-I", "-S", "-c", loader, str(theirs.fileno()), "solution.py"]
                served = await box.spawn(argv, stdin=PIPE, pass_fds=(theirs.fileno(),))
                assert served.stdin is not None
                served.stdin.write(first)  # then end of file: the code's input() sees nothing
                served.stdin.close()
                runner, cwd = await _start_runner(ours.fileno(), spec, limits)
            finally:
                ours.close()
                theirs.close()
            timed_out = await _watch(runner, served, events, limits)
            out, err = await served.output()
            out_of_memory = box.out_of_memory()
    finally:
        if cwd is not None:
            shutil.rmtree(cwd, ignore_errors=True)
    outcome = Outcome(
        "",
        isolation=box.host.isolation(limits),
        returncode=served.returncode,
        stdout_tail=out.decode("utf-8", "replace")[-2000:],
        stderr_tail=err.decode("utf-8", "replace")[-2000:],
        seconds=time.perf_counter() - started,
        out_of_memory=out_of_memory,
    )
    if timed_out:
        outcome.outcome = "timed_out"
        outcome.running = events.running
        return outcome
    result = events.result
    if not isinstance(result, dict):
        if runner.returncode is not None and runner.returncode < 0:  # killed at its own limits: by the code's data
            outcome.outcome = "crashed"
            outcome.result = {"message": f"the test process was killed by signal {-runner.returncode}"}
            return outcome
        raise SandboxError(f"the test process ended without a result (exit code {runner.returncode})")
    if result.get("outcome") == "error" and result.get("sandbox_started") is False:
        said = outcome.stderr_tail.strip().splitlines()
        raise SandboxError("the sandbox did not start" + (f": {said[-1]}" if said else ""))
    outcome.outcome, outcome.result = str(result.get("outcome", "crashed")), result
    return outcome


async def _watch(runner: asyncio.subprocess.Process, served: SandboxProcess, events: Events, limits: Limits) -> bool:
    """Wait for the tests to finish (or the time limit), then end both processes; whether time ran out."""
    assert runner.stdout is not None
    reader = asyncio.create_task(_events(runner.stdout, events))
    timed_out = False
    try:
        await asyncio.wait_for(runner.wait(), limits.timeout_s)
    except TimeoutError:
        timed_out = True
    finally:
        _kill_group(runner)
        if not timed_out:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(reader), 5.0)
            if events.program_ended:  # its own exit code says why (e.g. SIGXCPU): let it exit, not kill it
                with contextlib.suppress(TimeoutError):
                    await served.wait(EXIT_GRACE_S)
        served.kill()
        await runner.wait()
        await served.wait()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(reader, 5.0)
    return timed_out
