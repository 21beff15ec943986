"""``{mcp: {command, args, env, per_sample}}``: every tool an MCP server offers over stdio (the ``mcp`` package).

The server starts once per run (its tools are listed then) and stops at the end; with ``per_sample: true`` each
trajectory gets its own server process, started at its first call and stopped when it ends (a server that keeps
state between calls). The connection lives in a task of its own, as the mcp client's task groups require."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from assay.tools.base import SampleTools, Tool, ToolError

START_TIMEOUT_S = 30.0


class MCPSpec(BaseModel):
    """How to start the server: ``command`` (a string or argv list), more ``args``, extra ``env``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str | list[str]
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    per_sample: bool = False

    def argv(self) -> list[str]:
        head = [self.command] if isinstance(self.command, str) else list(self.command)
        return head + list(self.args)


def _need_mcp() -> Any:
    try:
        import mcp
    except ImportError:
        raise ToolError("MCP tools need the mcp package: pip install 'assay[agents]'") from None
    return mcp


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

    async def start(self) -> MCPConnection:
        self._task = asyncio.create_task(self._hold())
        try:
            async with asyncio.timeout(START_TIMEOUT_S):
                await self._ready.wait()
        except TimeoutError:
            await self.close()
            raise ToolError(f"the MCP server {self.spec.argv()} did not start within {START_TIMEOUT_S:g}s") from None
        if self._error is not None:
            raise ToolError(f"the MCP server {self.spec.argv()} failed to start: {self._error}") from None
        return self

    async def _hold(self) -> None:
        mcp = _need_mcp()
        from mcp.client.stdio import stdio_client

        argv = self.spec.argv()
        env = {**os.environ, **self.spec.env}
        params = mcp.StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=self.cwd)
        try:
            with open(os.devnull, "w") as errlog:
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
        self._stop.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None


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
