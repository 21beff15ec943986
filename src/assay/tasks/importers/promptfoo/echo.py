"""promptfoo's ``echo`` provider: the reply is the prompt itself (the last user message)."""

from __future__ import annotations

from typing import Any


def echo(messages: list[dict[str, Any]]) -> str:
    """The last user message's text, as promptfoo's echo provider returns the prompt."""
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else str(content)
    return ""
