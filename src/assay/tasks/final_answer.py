"""An agent's final answer as text: the value it submitted, or its last assistant message (the ``final_answer``
filter step gives it to text evaluators)."""

from __future__ import annotations

import json
from typing import Any, Literal

from assay.models.base import Message, Response

SUBMIT_TOOL = "submit"  # assay.agents.config.SUBMIT_TOOL (the tasks layer does not import the agents package)
Source = Literal["auto", "submit", "last_message"]


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return str(content)


def _answer_text(arguments: Any) -> str:
    """A submit call's answer: its ``answer`` argument as text (the arguments as JSON when there is none)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return arguments
    if isinstance(arguments, dict) and "answer" in arguments:
        answer = arguments["answer"]
        return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
    return json.dumps(arguments, ensure_ascii=False)


def submitted(response: Response) -> str | None:
    """The answer of the last ``submit`` call (executed calls first, then the transcript), None when none."""
    for call in reversed(response.tool_calls):
        if call.name == SUBMIT_TOOL:
            return _answer_text(call.arguments)
    for message in reversed(response.transcript):
        for call in reversed(message.get("tool_calls") or []):
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and function.get("name") == SUBMIT_TOOL:
                return _answer_text(function.get("arguments"))
    return None


def last_message(transcript: list[Message]) -> str | None:
    """The text of the last assistant message that has any, None when there is none."""
    for message in reversed(transcript):
        if message.get("role") == "assistant":
            text = _text(message.get("content"))
            if text.strip():
                return text
    return None


def final_answer(response: Response, source: Source = "auto") -> str:
    """The answer to judge: ``submit`` the submitted value, ``last_message`` the last assistant message (the
    response's text when it has no transcript), ``auto`` the submitted value, else the response's text, else the
    last assistant message; '' when there is none."""
    if source == "submit":
        return submitted(response) or ""
    if source == "last_message":
        found = last_message(response.transcript) if response.transcript else response.text
        return found or ""
    value = submitted(response)
    if value is not None:
        return value
    if response.text:
        return response.text
    return last_message(response.transcript) or ""
