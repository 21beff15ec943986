"""Tools an agent loop runs: the standard ones (bash, python, text_editor, think) acting in the sample's environment,
Python functions, stateful worlds' methods, sandboxed python/bash, MCP servers; and declared-only schemas."""

from assay.tools.base import SampleTools, Tool, ToolError, ToolSet, ToolStartError
from assay.tools.python import function_tool, tool
from assay.tools.standard import STANDARD_TOOLS, BashTool, PythonCodeTool, TextEditorTool, ThinkTool
from assay.tools.world import WorldError, make_world, world_state, world_tools

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
