"""Checking a standard tool's arguments as the model sent them: the messages say which argument and what it takes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from assay.tools.base import ToolError

MAX_OUTPUT_CHARS = 16_000  # of a program's output sent back per call (the loop may cut it further)


def check_names(arguments: dict[str, Any], allowed: Iterable[str], tool: str) -> None:
    """Refuse arguments the tool does not take."""
    known = list(allowed)
    unknown = sorted(set(arguments) - set(known))
    if unknown:
        raise ToolError(f"{tool} takes no argument(s) {unknown}; it takes {known}")


def text(arguments: dict[str, Any], key: str, tool: str) -> str:
    """A required string argument."""
    value = arguments.get(key)
    if not isinstance(value, str):
        got = "nothing" if value is None else type(value).__name__
        raise ToolError(f"{tool} needs a string argument {key!r} (got {got})")
    return value


def clip(output: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    """A long output's head and tail with a line saying what was left out."""
    if len(output) <= limit:
        return output
    half = limit // 2
    return f"{output[:half]}\n[... {len(output) - 2 * half} characters left out ...]\n{output[-half:]}"
