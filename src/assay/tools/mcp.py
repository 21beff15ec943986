"""``{mcp: {command, args, env, per_sample, start_timeout_s}}``: every tool an MCP server offers over stdio (the
``mcp`` package).

The server starts once per run (its tools are listed then) and stops at the end; with ``per_sample: true`` each
trajectory gets its own server process, started at its first call and stopped when it ends (a server that keeps
state between calls). The connection lives in a task of its own, as the mcp client's task groups require. The
server's stderr goes to a temporary file, so that a server that fails to start is reported with its own last words
(an import error, a missing key) rather than the client's "unhandled errors in a TaskGroup"."""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO, cast

from pydantic import BaseModel, ConfigDict, Field

from assay.tools.base import SampleTools, Tool, ToolError

START_TIMEOUT_S = 30.0
CLOSE_TIMEOUT_S = 10.0  # a server past this after being asked to stop is cancelled (its process is then killed)
STDERR_TAIL_CHARS = 1500  # of the server's stderr, quoted when it fails to start


class MCPSpec(BaseModel):
    """How to start the server: ``command`` (a string or argv list), more ``args``, extra ``env``; how long it may
    take to start and list its tools (``start_timeout_s``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str | list[str]
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    per_sample: bool = False
    start_timeout_s: float = Field(default=START_TIMEOUT_S, gt=0)

    def argv(self) -> list[str]:
        head = [self.command] if isinstance(self.command, str) else list(self.command)
        return head + list(self.args)


def _need_mcp() -> Any:
    try:
        import mcp
    except ImportError:
        raise ToolError("MCP tools need the mcp package: pip install 'assay[agents]'") from None
    return mcp


def _causes(err: BaseException) -> str:
    """What went wrong, with exception groups (the mcp client's task groups) opened to the errors inside them."""
    if isinstance(err, BaseExceptionGroup):
        return "; ".join(dict.fromkeys(_causes(e) for e in err.exceptions))
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__


class MCPConnection:
    """One running MCP server and its client session, held open by a background task until ``close``."""

    def __init__(self, spec: MCPSpec, cwd: Path | None) -> None:
        self.spec = spec
        self.cwd = cwd
        self.session: Any = None
        self.tools: list[Any] = []
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._error: BaseException | None = None
        self._errlog: TextIO | None = None  # the server's stderr, kept until close

    async def start(self) -> MCPConnection:
        """Start the server and list its tools; a ToolError says why it could not, with the end of its stderr."""
        errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115 - closed in close()
        self._errlog = cast(TextIO, errlog)
        self._task = asyncio.create_task(self._hold())
        timeout = self.spec.start_timeout_s
        try:
            async with asyncio.timeout(timeout):
                await self._ready.wait()
        except TimeoutError:
            why = f"did not start within {timeout:g}s (start_timeout_s)"
        else:
            if self._error is None:
                return self
            why = f"failed to start: {_causes(self._error)}"
        said = self.stderr_tail()
        await self.close()
        raise ToolError(
            f"the MCP server {self.spec.argv()} {why}" + (f"; its stderr ended with:\n{said}" if said else "")
        )

    def stderr_tail(self) -> str:
        """The last lines the server wrote to its stderr (at most STDERR_TAIL_CHARS), indented, or ''."""
        if self._errlog is None:
            return ""
        fd = self._errlog.fileno()
        size = os.fstat(fd).st_size
        data = os.pread(fd, min(size, STDERR_TAIL_CHARS), max(0, size - STDERR_TAIL_CHARS))
        lines = data.decode("utf-8", errors="replace").strip().splitlines()
        if size > STDERR_TAIL_CHARS:
            lines = lines[1:]  # whole lines only
        return "\n".join(f"  {line}" for line in lines)

    async def _hold(self) -> None:
        mcp = _need_mcp()
        from mcp.client.stdio import stdio_client

        argv = self.spec.argv()
        env = {**os.environ, **self.spec.env}
        params = mcp.StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=self.cwd)
        errlog = self._errlog if self._errlog is not None else sys.stderr
        try:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                mcp.ClientSession(read, write) as session,
            ):
                await session.initialize()
                self.tools = list((await session.list_tools()).tools)
                self.session = session
                self._ready.set()
                await self._stop.wait()
        except Exception as err:  # reported by start() or by the next call
            self._error = err
        finally:
            self.session = None
            self._ready.set()

    async def call(self, name: str, arguments: dict[str, Any]) -> str:
        if self.session is None:
            raise ToolError(f"the MCP server {self.spec.argv()} is not running ({self._error or 'stopped'})")
        result = await self.session.call_tool(name, arguments)
        parts = []
        for block in getattr(result, "content", None) or []:
            text = getattr(block, "text", None)
            parts.append(text if isinstance(text, str) else block.model_dump_json(exclude_none=True))
        text = "\n".join(parts)
        if getattr(result, "is_error", False):
            raise ToolError(text or f"{name} failed")
        return text

    async def close(self) -> None:
        """Stop the server: a running one is asked to (its session closes, the process is stopped); one still
        starting, stuck in its handshake, or slower than CLOSE_TIMEOUT_S to stop is cancelled, never waited on."""
        self._stop.set()
        task, self._task = self._task, None
        if task is not None:
            if self.session is None and not task.done():
                task.cancel()
            done, _ = await asyncio.wait({task}, timeout=CLOSE_TIMEOUT_S)
            if not done:
                task.cancel()
                await asyncio.wait({task})
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None


class MCPTool(Tool):
    """One tool of an MCP server."""

    def __init__(self, server: MCPServerTools, name: str, description: str, parameters: dict[str, Any]) -> None:
        self.server = server
        self.name = name
        self.description = description
        self.parameters = parameters or {"type": "object", "properties": {}}

    async def call(self, arguments: dict[str, Any], state: SampleTools) -> str:
        connection = await self.server.connection(state)
        return await connection.call(self.name, arguments)

    async def close_sample(self, state: SampleTools) -> None:
        connection = state.resources.pop(self.server.key, None)
        if connection is not None:
            await connection.close()


class MCPServerTools(Tool):
    """An MCP server's tools; stands for all of them until ``start`` lists them (``offered``)."""

    def __init__(self, spec: MCPSpec, cwd: Path | None = None) -> None:
        self.spec = spec
        self.cwd = cwd
        self.name = f"mcp:{' '.join(spec.argv())}"
        self.parameters = {}
        self.key = f"mcp-{id(self)}"
        self.offered: list[Tool] = []
        self._shared: MCPConnection | None = None
        self._locks: dict[int, asyncio.Lock] = {}

    async def start(self) -> None:
        first = await MCPConnection(self.spec, self.cwd).start()
        self.offered = [MCPTool(self, t.name, t.description or "", dict(t.input_schema or {})) for t in first.tools]
        if self.spec.per_sample:
            await first.close()  # each trajectory starts its own
        else:
            self._shared = first

    async def connection(self, state: SampleTools) -> MCPConnection:
        if self._shared is not None:
            return self._shared
        lock = self._locks.setdefault(id(state), asyncio.Lock())
        async with lock:
            connection = state.resources.get(self.key)
            if connection is None:
                connection = state.resources[self.key] = await MCPConnection(self.spec, self.cwd).start()
        return connection

    async def call(self, arguments: dict[str, Any], state: SampleTools) -> str:
        raise ToolError("an MCP server is not a tool itself; its tools are")

    async def aclose(self) -> None:
        if self._shared is not None:
            await self._shared.close()
            self._shared = None
