"""Tools an agent loop runs: Python functions, sandboxed python/bash, MCP servers; and declared-only schemas."""

from assay.tools.base import SampleTools, Tool, ToolError, ToolSet, ToolStartError
from assay.tools.python import function_tool, tool

__all__ = ["SampleTools", "Tool", "ToolError", "ToolSet", "ToolStartError", "function_tool", "tool"]
