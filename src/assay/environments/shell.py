"""A persistent bash session in a sandbox: one long-lived ``bash --noprofile --norc`` fed commands on its stdin.

Each :meth:`BashShell.run` writes ``eval '<command>' < /dev/null`` (a command that reads stdin gets end-of-file,
never the protocol; a syntax error is the command's, not the session's) and then a line printing a marker unique to
that call with the exit code; stdout and stderr (merged by ``exec 2>&1`` at start) are read up to the marker and
capped at ~64 KiB (the first and last halves). The working directory, variables and background jobs carry over.
On time-out the session is killed; the next call starts a fresh one and says so in its output.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import uuid
from collections.abc import Callable

from assay.environments.base import Shell, ShellResult
from assay.sandbox.box import PIPE, Sandbox, SandboxProcess

MAX_OUTPUT = 64 * 1024  # bytes of one command's output kept (its first and last halves)
_HALF = MAX_OUTPUT // 2


class BashShell(Shell):
    """The session; ``before_run(timeout_s)`` checks the environment may still run and returns the time allowed."""

    def __init__(self, box: Sandbox, before_run: Callable[[float], float] | None = None) -> None:
        self._box = box
        self._before_run = before_run
        self._proc: SandboxProcess | None = None
        self._reader: asyncio.StreamReader | None = None
        self._transport: asyncio.ReadTransport | None = None
        self._restarted: str | None = None  # why the previous session ended, told at the next call

    async def _start(self) -> None:
        """Start bash with stdout and stderr on one pipe that this session reads (not the sandbox's reader)."""
        read_fd, write_fd = os.pipe()
        try:
            self._proc = await self._box.spawn(
                ["bash", "--noprofile", "--norc"], stdin=PIPE, stdout=write_fd, stderr=write_fd
            )
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        reader = asyncio.StreamReader(limit=1 << 20)
        loop = asyncio.get_running_loop()
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", buffering=0)
        )
        self._reader, self._transport = reader, transport
        await self._send(b"exec 2>&1\n")

    async def _send(self, data: bytes) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(data)
        await self._proc.stdin.drain()

    async def run(self, command: str, *, timeout_s: float) -> ShellResult:
        """Run one command line in the session (see the module docstring)."""
        timeout = self._before_run(timeout_s) if self._before_run is not None else timeout_s
        note = ""
        if self._proc is None or self._proc.returncode is not None:
            if self._restarted is not None:
                note = f"[{self._restarted}; a new shell session started: cwd and variables are reset]\n"
                self._restarted = None
            await self._stop()
            await self._start()
        marker = f"__assay_done_{uuid.uuid4().hex}__"
        script = f"eval {shlex.quote(command)} < /dev/null\nprintf '\\n{marker}%d\\n' \"$?\"\n"
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # it ended: read what it said, report it
            await self._send(script.encode())
        output, code, ended = await self._read(marker, timeout)
        if code is not None:
            return ShellResult(note + output, code)
        if ended:
            assert self._proc is not None
            status = await self._proc.wait()
            self._restarted = f"the previous shell exited with {status}"
            await self._stop()
            return ShellResult(note + output, status)
        self._restarted = "the previous command timed out"
        await self._stop()
        return ShellResult(f"{note}{output}\n[timed out after {timeout:g} s: the shell session was killed]", None, True)

    async def _read(self, marker: str, timeout: float) -> tuple[str, int | None, bool]:
        """Output up to the marker (capped), the exit code it carries (None if not reached), whether bash ended."""
        assert self._reader is not None
        pattern = re.compile(rb"\n" + re.escape(marker.encode()) + rb"(\d+)\n")
        keep = len(marker) + 32  # never moved out of the tail: a marker arriving in pieces is still found
        head, tail, dropped = bytearray(), bytearray(), False
        code: int | None = None
        ended = False
        try:
            async with asyncio.timeout(max(timeout, 0.001)):
                while True:
                    chunk = await self._reader.read(65536)
                    if not chunk:
                        ended = True
                        break
                    tail += chunk
                    found = pattern.search(tail)
                    if found:
                        code = int(found.group(1))
                        del tail[found.start() :]
                        break
                    movable = len(tail) - keep
                    if movable > 0 and len(head) < _HALF:
                        take = min(_HALF - len(head), movable)
                        head += tail[:take]
                        del tail[:take]
                    if len(tail) > _HALF + keep:
                        del tail[: len(tail) - _HALF - keep]
                        dropped = True
        except TimeoutError:
            pass
        # the last read (which held the marker) may have brought more than the cap keeps: head first, then the end
        if len(head) < _HALF:
            take = min(_HALF - len(head), len(tail))
            head += tail[:take]
            del tail[:take]
        if len(tail) > _HALF:
            del tail[: len(tail) - _HALF]
            dropped = True
        text = bytes(head) + (b"\n[... output truncated ...]\n" if dropped else b"") + bytes(tail)
        return text.decode("utf-8", "replace"), code, ended

    async def _stop(self) -> None:
        """Kill the session (and everything it started: its sandbox's PID namespace ends) and close its pipe."""
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            with contextlib.suppress(Exception):
                await proc.wait()
        transport, self._transport, self._reader = self._transport, None, None
        if transport is not None:
            transport.close()

    async def close(self) -> None:
        """End the session and every process it started."""
        self._restarted = None
        await self._stop()
