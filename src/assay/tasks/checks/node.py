"""One Node.js process per row_checks evaluator (per event loop) runs every javascript check, JS transform and
is-sql of a run: requests are JSON lines tagged with an id, answered as they finish, so a 200-row config with a
transform starts Node once, not 200 times. ``worker.js`` beside this file is the program."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
from pathlib import Path
from typing import Any

from assay.errors import ConfigError

WORKER = Path(__file__).with_name("worker.js")
NODE_TIMEOUT = 30.0  # seconds one request may take (a check in an endless loop errors, and the worker restarts)
LIMIT = 1 << 26  # bytes of one reply line


class NodeError(Exception):
    """The code a request ran threw (its message), or the worker failed."""


class NodeWorker:
    """A long-lived ``node worker.js`` answering requests concurrently; restarted after a timeout or a crash."""

    def __init__(self, base_dir: Path) -> None:
        self.base_dir = base_dir
        self._proc: asyncio.subprocess.Process | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._next = 0
        self._lock: asyncio.Lock | None = None
        self.started = 0  # how many node processes this worker has started (measured in the tests)

    def __reduce__(self) -> tuple[Any, ...]:
        return (NodeWorker, (self.base_dir,))  # a copy (a Ray worker's) starts its own process when first used

    async def _ensure(self) -> asyncio.subprocess.Process:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a new event loop (the sync evaluate path): the old process belongs to the old one
            self._forget()
            self._loop, self._lock = loop, asyncio.Lock()
        assert self._lock is not None
        async with self._lock:
            if self._proc is None or self._proc.returncode is not None:
                node = shutil.which("node")
                if node is None:
                    raise ConfigError("javascript checks, JS transforms and is-sql need Node.js ('node' on PATH)")
                self._proc = await asyncio.create_subprocess_exec(
                    node,
                    str(WORKER),
                    str(self.base_dir),
                    cwd=str(self.base_dir) if self.base_dir.is_dir() else None,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.DEVNULL,
                    limit=LIMIT,
                )
                self.started += 1
                self._reader = loop.create_task(self._read(self._proc))
            return self._proc

    async def _read(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        while True:
            line = await proc.stdout.readline()
            if not line:
                break
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                continue
            future = self._pending.pop(int(message.get("id", -1)), None)
            if future is not None and not future.done():
                future.set_result(message)
        for future in self._pending.values():  # the process ended with requests unanswered
            if not future.done():
                future.set_exception(NodeError("the Node.js worker exited"))
        self._pending.clear()

    async def request(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send one request and wait for its reply (``{ok, value, undef, type}``); raises NodeError on ``ok: false``."""
        proc = await self._ensure()
        assert proc.stdin is not None
        self._next += 1
        rid = self._next
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[rid] = future
        proc.stdin.write(json.dumps({"id": rid, **message}, default=_jsonable).encode() + b"\n")
        await proc.stdin.drain()
        try:
            reply = await asyncio.wait_for(future, NODE_TIMEOUT)
        except TimeoutError:
            self._pending.pop(rid, None)
            self._forget()  # the worker may be stuck in that code: start afresh
            raise NodeError(f"the code ran longer than {NODE_TIMEOUT:.0f} s") from None
        if not reply.get("ok"):
            raise NodeError(str(reply.get("error")))
        return reply

    def _forget(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        if self._reader is not None:
            self._reader.cancel()
            self._reader = None
        self._pending.clear()

    async def aclose(self) -> None:
        proc = self._proc
        if proc is not None and proc.returncode is None and self._loop is asyncio.get_running_loop():
            assert proc.stdin is not None
            proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), 5)
            except TimeoutError:
                self._forget()
        self._forget()


def _jsonable(value: Any) -> Any:
    """What json.dumps cannot write as is (a pydantic model, a set): its plain form."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)
