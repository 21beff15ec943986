"""Tools an agent loop runs: the standard ones (bash, python, text_editor, think) acting in the sample's environment,
Python functions, stateful worlds' methods, sandboxed python/bash, MCP servers; and declared-only schemas.

The standard tools and the world helpers load on first use: a run without them (most runs) does not import them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay.lazyexports import lazy_exports
from assay.tools.base import SampleTools, Tool, ToolError, ToolSet, ToolStartError
from assay.tools.python import function_tool, tool

if TYPE_CHECKING:
    from assay.tools.standard import STANDARD_TOOLS, BashTool, PythonCodeTool, TextEditorTool, ThinkTool
    from assay.tools.world import WorldError, make_world, world_state, world_tools

_LAZY = {
    **dict.fromkeys(
        ("STANDARD_TOOLS", "BashTool", "PythonCodeTool", "TextEditorTool", "ThinkTool"), "assay.tools.standard"
    ),
    **dict.fromkeys(("WorldError", "make_world", "world_state", "world_tools"), "assay.tools.world"),
}

__getattr__ = lazy_exports(__name__, _LAZY)  # the standard tools' and worlds' names load on first use


__all__ = [
    "STANDARD_TOOLS",
    "BashTool",
    "PythonCodeTool",
    "SampleTools",
    "TextEditorTool",
    "ThinkTool",
    "Tool",
    "ToolError",
    "ToolSet",
    "ToolStartError",
    "WorldError",
    "function_tool",
    "make_world",
    "tool",
    "world_state",
    "world_tools",
]
