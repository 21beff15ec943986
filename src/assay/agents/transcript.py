"""Read a transcript by turns: a turn is a user message and what followed it up to the next user message."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assay.models.base import Message, Response

# why a trajectory stopped: an answer (or a conversation's end) passes on to scoring; a limit is a scored failure
ANSWER_STOPS = frozenset({"answer", "submit", "user_done", "turns_done"})
LIMIT_STOPS = frozenset({"max_turns", "max_tool_calls", "token_budget", "time_limit"})


@dataclass
class Turn:
    """One turn of a conversation: the user's message, the last assistant reply, and every message between."""

    index: int
    user: str
    reply: str
    messages: list[Message] = field(default_factory=list)
    expected: Any = None


def content_text(message: Message) -> str:
    """A message's content as text (content parts joined; None as '')."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return str(content)


def _openers(transcript: list[Message], turns: list[int]) -> list[int]:
    """The transcript index of each user message that opens a turn (every user message when none are recorded)."""
    if turns:
        return [i for i in turns if 0 <= i < len(transcript)]
    return [i for i, m in enumerate(transcript) if m.get("role") == "user"]


def split_turns(response: Response, expected: list[Any] | None = None) -> list[Turn]:
    """The turns of a response's transcript, in order; ``expected`` gives each turn's expected value by position.

    A response without a transcript is one turn: no user text, its text as the reply.
    """
    transcript = response.transcript
    if not transcript:
        exp = expected[0] if expected else None
        return [Turn(index=0, user="", reply=response.text or "", messages=[], expected=exp)]
    openers = _openers(transcript, response.turns)
    if not openers:
        openers = [0]
    result: list[Turn] = []
    for n, start in enumerate(openers):
        end = openers[n + 1] if n + 1 < len(openers) else len(transcript)
        messages = transcript[start:end]
        replies = [m for m in messages if m.get("role") == "assistant"]
        reply = content_text(replies[-1]) if replies else ""
        user = content_text(transcript[start]) if transcript[start].get("role") == "user" else ""
        exp = expected[n] if expected is not None and n < len(expected) else None
        result.append(Turn(index=n, user=user, reply=reply, messages=list(messages), expected=exp))
    if response.text is not None and result and not result[-1].reply:
        result[-1].reply = response.text
    return result
