"""What a tool is (a name, an OpenAI schema, an async call), and the set of a task's tools with their lifetimes."""

from __future__ import annotations

import contextlib
import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.environments.base import Environment

# the id of the tool call running now, when the loop sets it: tools put it in what they record (``resources``)
CALL_ID: ContextVar[str | None] = ContextVar("assay_tool_call_id", default=None)


class ToolError(Exception):
    """A tool could not do what the model asked: its message goes back to the model as the tool's reply."""


class ToolStartError(Exception):
    """A run-long tool (an MCP server) could not start: no trajectory can run with the tools its task names."""


class Tool(ABC):
    """One tool the loop can run. ``per_sample`` tools get a fresh state per trajectory (``SampleTools``)."""

    name: str
    description: str = ""
    parameters: dict[str, Any]
    needs_environment: bool = False  # acts on the sample's environment (SampleTools.environment)
    needs_workspace: bool = False  # reads or writes its files or runs programs in it (a world's state is not enough)

    def schema(self) -> dict[str, Any]:
        """The OpenAI tool schema sent to the model."""
        fn = {"name": self.name, "description": self.description, "parameters": self.parameters}
        return {"type": "function", "function": fn}

    @abstractmethod
    async def call(self, arguments: dict[str, Any], state: SampleTools) -> str:
        """Run once with the model's arguments; the tool message's content. Raise ToolError (or anything) on failure."""

    async def start(self) -> None:
        """Start what lives for the whole run (an MCP server); called once before the first sample."""

    async def aclose(self) -> None:
        """Stop what ``start`` started."""

    async def close_sample(self, state: SampleTools) -> None:
        """Release what this tool made for one sample (a sandbox)."""


def as_text(value: Any) -> str:
    """A tool's return value as the tool message's content: text as is, anything else as JSON."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


class SampleTools:
    """The tools of one trajectory, with the per-sample state tools keep in ``resources`` (closed at its end)."""

    def __init__(self, toolset: ToolSet, environment: Environment | None = None) -> None:
        self.toolset = toolset
        self.resources: dict[str, Any] = {}
        self.environment = environment  # the sample's environment, set by the runner before the loop (or None)

    def require_environment(self, tool: str) -> Environment:
        """The sample's environment, or a ToolError saying that ``tool`` needs one (the task gave none)."""
        if self.environment is None:
            raise ToolError(f"{tool} needs an environment: give the task an `environment:` key")
        return self.environment

    async def aclose(self) -> None:
        """Release every per-sample resource (each tool's sandbox, a per-sample MCP server)."""
        for tool in self.toolset.tools:
            await tool.close_sample(self)


class ToolSet:
    """A task's tools: runnable ones (by name) and declared-only schemas (sent, never run)."""

    def __init__(self, tools: Sequence[Tool], declared: Sequence[dict[str, Any]] = ()) -> None:
        self.tools = list(tools)
        self.declared = list(declared)
        self.by_name = {t.name: t for t in self.tools}
        self._started = False
        self._expanded = False

    async def start(self) -> None:
        """Start run-long tools once (MCP servers list their tools here); later calls do nothing. A tool that cannot
        start raises :class:`ToolStartError` (saying why) after the ones already started are stopped again, and
        leaves the set unstarted: it never offers a partial set of tools."""
        if self._started:
            return
        started: list[Tool] = []
        try:
            for tool in list(self.tools):
                await tool.start()
                started.append(tool)
        except Exception as err:
            for tool in started:
                with contextlib.suppress(Exception):
                    await tool.aclose()
            why = str(err) if isinstance(err, ToolError) else f"{type(err).__name__}: {err}"
            raise ToolStartError(why) from None
        self._started = True
        expanded: list[Tool] = []
        for tool in self.tools:
            expanded.extend(getattr(tool, "offered", None) or [tool])
        self.tools = expanded
        self.by_name = {t.name: t for t in expanded}

    def schemas(self) -> list[dict[str, Any]]:
        """Every tool's schema, runnable first, in the order given."""
        return [t.schema() for t in self.tools] + list(self.declared)

    def declared_names(self) -> set[str]:
        return {str((d.get("function") or {}).get("name")) for d in self.declared}

    def for_sample(self, environment: Environment | None = None) -> SampleTools:
        """A trajectory's tool state, acting in ``environment`` when the sample has one."""
        return SampleTools(self, environment)

    async def aclose(self) -> None:
        """Stop every run-long tool."""
        for tool in self.tools:
            with contextlib.suppress(Exception):
                await tool.aclose()
        self._started = False
