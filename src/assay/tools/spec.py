"""A task's ``tools:`` entries read into a ToolSet: a standard tool by name (``bash``, ``python``, ``text_editor``,
``think``) or with options (``{tool: bash, timeout_s: 30, name: shell}``), ``{python: "mod:fn"}``,
``{sandbox: python|bash}``, ``{mcp: {command, args, env, per_sample}}``, or an OpenAI tool schema (declared only:
sent, never run)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from assay.tools.base import Tool, ToolSet
from assay.tools.standard import STANDARD_TOOLS

RUNNABLE_KEYS = ("tool", "python", "sandbox", "mcp")

Fail = Callable[[tuple[Any, ...], str], Exception]  # (key path, message) -> the error to raise


def is_runnable(entry: Any) -> bool:
    """True for an entry the loop runs (not an OpenAI schema)."""
    return isinstance(entry, str) or (isinstance(entry, dict) and any(k in entry for k in RUNNABLE_KEYS))


def needs_environment(toolset: ToolSet) -> bool:
    """True when a tool acts on the sample's environment (its workspace, programs or world state)."""
    return any(t.needs_environment for t in toolset.tools)


def needs_workspace(toolset: ToolSet) -> bool:
    """True when a tool reads or writes workspace files or runs programs (a world's state alone is not enough)."""
    return any(t.needs_workspace for t in toolset.tools)


def _standard(name: Any, options: dict[str, Any], path: tuple[Any, ...], fail: Fail) -> Tool:
    """A standard tool by name with its options (``timeout_s`` of bash and python; ``name`` of any)."""
    if name not in STANDARD_TOOLS:
        raise fail(path, f"unknown tool {name!r}; the standard tools are {list(STANDARD_TOOLS)}")
    cls = STANDARD_TOOLS[name]
    allowed = ["tool", *getattr(cls, "OPTIONS", ()), "name"]
    extra = sorted(set(options) - set(allowed))
    if extra:
        raise fail(path[:2], f"unknown key(s) {extra} of the {name} tool (it takes {', '.join(allowed)})")
    try:
        return cls(**{k: v for k, v in options.items() if k != "tool"})
    except (TypeError, ValueError) as err:
        raise fail(path[:2], f"bad options for the {name} tool: {err}") from None


def _python(entry: dict[str, Any], i: int, base_dir: Path | None, fail: Fail) -> Tool:
    from assay.importing import import_object
    from assay.tools.python import function_tool

    ref = entry["python"]
    extra = sorted(set(entry) - {"python", "name"})
    if extra:
        raise fail(("tools", i), f"unknown key(s) {extra} of a python tool (it takes python, name)")
    if callable(ref):
        target = ref
    elif isinstance(ref, str):
        if base_dir is not None and str(base_dir) not in sys.path:
            sys.path.append(str(base_dir))  # my_tools.py beside the task file
        try:
            target = import_object(ref)
        except (ValueError, ImportError, AttributeError) as err:
            raise fail(("tools", i, "python"), f"cannot import {ref!r}: {err}") from None
    else:
        raise fail(("tools", i, "python"), "must be 'module:function'")
    if not callable(target):
        raise fail(("tools", i, "python"), f"{ref!r} is not a function")
    try:
        return function_tool(target, entry.get("name"))
    except Exception as err:
        raise fail(("tools", i, "python"), f"cannot make a tool of {ref!r}: {err}") from None


def _sandbox(entry: dict[str, Any], i: int, fail: Fail) -> Tool:
    from assay.tools.sandboxed import KINDS, SandboxTool

    kind = entry["sandbox"]
    extra = sorted(set(entry) - {"sandbox", "name", "timeout_s", "memory_mb"})
    if extra:
        raise fail(
            ("tools", i), f"unknown key(s) {extra} of a sandbox tool (it takes sandbox, name, timeout_s, memory_mb)"
        )
    if kind not in KINDS:
        raise fail(("tools", i, "sandbox"), f"must be one of {list(KINDS)}, got {kind!r}")
    return SandboxTool(
        kind,
        timeout_s=float(entry.get("timeout_s", 30.0)),
        memory_mb=int(entry.get("memory_mb", 512)),
        name=entry.get("name"),
    )


def _mcp(entry: dict[str, Any], i: int, base_dir: Path | None, fail: Fail) -> Tool:
    from assay.tools.mcp import MCPServerTools, MCPSpec

    spec = entry["mcp"]
    if not isinstance(spec, dict):
        raise fail(("tools", i, "mcp"), "is {command: [...], args: [...], env: {...}, per_sample: false}")
    try:
        parsed = MCPSpec.model_validate(spec)
    except Exception as err:
        raise fail(("tools", i, "mcp"), str(err).splitlines()[-1] if str(err) else "invalid") from None
    return MCPServerTools(parsed, cwd=base_dir)


def parse_tools(entries: Sequence[Any], *, base_dir: Path | None = None, fail: Fail) -> ToolSet:
    """The ToolSet of a task's ``tools:`` list; a bad entry raises ``fail(path, message)``."""
    tools: list[Tool] = []
    declared: list[dict[str, Any]] = []
    for i, entry in enumerate(entries):
        if isinstance(entry, Tool):
            tools.append(entry)
        elif callable(entry):
            from assay.tools.python import function_tool

            tools.append(function_tool(entry))
        elif isinstance(entry, str):
            tools.append(_standard(entry, {}, ("tools", i), fail))
        elif not is_runnable(entry):
            declared.append(entry)
        elif "tool" in entry:
            tools.append(_standard(entry["tool"], entry, ("tools", i, "tool"), fail))
        elif "python" in entry:
            tools.append(_python(entry, i, base_dir, fail))
        elif "sandbox" in entry:
            tools.append(_sandbox(entry, i, fail))
        else:
            tools.append(_mcp(entry, i, base_dir, fail))
    names = [t.name for t in tools] + [str((d.get("function") or {}).get("name")) for d in declared]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise fail(("tools",), f"two tools are named {dupes[0]!r}; give one a 'name'")
    return ToolSet(tools, declared)
