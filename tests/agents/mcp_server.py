"""A small stdio MCP server for the agent tests: `add`, a stateful `count` and a `fail` tool.

Run as ``python mcp_server.py``; ``MCP_GREETING`` (from the task's env) is what `greet` says.
"""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("assay-test-tools")
COUNT = [0]


@server.tool()
def add(x: int, y: int) -> int:
    """Add two numbers."""
    return x + y


@server.tool()
def count() -> int:
    """Count calls made to this server process."""
    COUNT[0] += 1
    return COUNT[0]


@server.tool()
def greet(name: str) -> str:
    """Greet someone with the configured greeting."""
    return f"{os.environ.get('MCP_GREETING', 'hello')} {name}"


@server.tool()
def fail() -> str:
    """Always fails."""
    raise ValueError("the tool failed on purpose")


if __name__ == "__main__":
    server.run()
