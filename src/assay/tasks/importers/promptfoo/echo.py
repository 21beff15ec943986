"""promptfoo's ``echo`` provider: the reply is the rendered prompt itself."""

from __future__ import annotations

import json
from typing import Any


def echo(messages: list[dict[str, Any]]) -> str:
    """The prompt as promptfoo's echo provider returns it: a text prompt's text (one user message); a chat prompt
    as promptfoo renders it, its messages as JSON indented by two spaces."""
    if len(messages) == 1 and messages[0].get("role") == "user":
        content = messages[0].get("content")
        return content if isinstance(content, str) else str(content)
    return json.dumps(messages, indent=2, ensure_ascii=False)
