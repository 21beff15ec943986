"""Reading the tool calls an output made: a Response (an agent's executed calls), a dict, a list, or JSON text."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from assay.errors import EvaluationInputError
from assay.evaluators.jsonparse import show

ARGUMENT_KEYS = ("arguments", "args", "input", "parameters")
SUBMIT_TOOL = "submit"  # assay.agents.config.SUBMIT_TOOL: the loop's answer tool, not one the task offers


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call as judged: its position, name, and arguments (None when they could not be read)."""

    index: int
    name: str
    arguments: dict[str, Any] | None
    problem: str | None = None  # why the arguments could not be read
    error: str | None = None  # the executed tool failed (raised, timed out)


def read_calls(
    actual: Any, evaluator: str = "tool_usage", *, keep_submit: bool = True
) -> tuple[list[Call], str | None]:
    """The tool calls and the final text of an output: a Response, an object with ``.tool_calls``, a dict with
    ``"tool_calls"``, a list of calls, or JSON text of one of these. Without ``keep_submit``, the ``submit`` call that
    ended a trajectory (``stop_reason: submit``) is left out: it carries the answer, not a use of a tool."""
    if isinstance(actual, str):
        try:
            actual = json.loads(actual)
        except ValueError:
            raise EvaluationInputError(
                f"{evaluator} expects tool calls (a Response, a dict with 'tool_calls' or a list of calls), "
                "got text that is not JSON"
            ) from None
        if isinstance(actual, str):
            raise EvaluationInputError(f"{evaluator} expects tool calls, got a JSON string")
    text: Any = None
    stop: Any = None
    if isinstance(actual, dict):
        if "tool_calls" not in actual:
            raise EvaluationInputError(
                f"{evaluator}: a dict output needs a 'tool_calls' key (got keys {sorted(actual)})"
            )
        raw = actual["tool_calls"]
        text = actual.get("text", actual.get("content"))
        stop = actual.get("stop_reason")
    elif isinstance(actual, list | tuple):
        raw = actual
    elif actual is not None and hasattr(actual, "tool_calls"):
        raw = actual.tool_calls
        text = getattr(actual, "text", None)
        stop = getattr(actual, "stop_reason", None)
    else:
        raise EvaluationInputError(
            f"{evaluator} expects tool calls (a Response, a dict with 'tool_calls' or a list of calls), "
            f"got {type(actual).__name__}"
        )
    if raw is None:
        raw = []
    if not isinstance(raw, list | tuple):
        raise EvaluationInputError(f"{evaluator}: tool_calls must be a list, got {type(raw).__name__}")
    if text is not None and not isinstance(text, str):
        text = str(text)
    calls = [read_call(i, c, evaluator) for i, c in enumerate(raw)]
    if not keep_submit and stop == "submit" and calls and calls[-1].name == SUBMIT_TOOL:
        calls.pop()
    return calls, text


def read_call(index: int, call: Any, evaluator: str) -> Call:
    """One call from a dict (plain, OpenAI ``function``, Anthropic ``input``) or a ToolCall-like object."""
    error: Any = None
    if isinstance(call, dict):
        source: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else call
        name = source.get("name")
        raw_args = next((source[k] for k in ARGUMENT_KEYS if k in source), None)
        error = call.get("error")
    elif isinstance(call, BaseModel) or hasattr(call, "name"):
        name = getattr(call, "name", None)
        raw_args = getattr(call, "arguments", None)
        error = getattr(call, "error", None)
    else:
        raise EvaluationInputError(f"{evaluator}: tool call {index} is {type(call).__name__}, not a call")
    if not isinstance(name, str) or not name:
        raise EvaluationInputError(f"{evaluator}: tool call {index} has no name (got {show(name, 40)})")
    arguments, problem = parse_arguments(raw_args)
    return Call(index, name, arguments, problem, str(error) if error else None)


def parse_arguments(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Arguments as a dict (JSON text is parsed); ``(None, why)`` when they are not a JSON object."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as err:
            return None, f"arguments are not valid JSON ({err}): {show(raw, 60)}"
    if isinstance(raw, BaseModel):
        raw = raw.model_dump(mode="json")
    if not isinstance(raw, dict):
        return None, f"arguments are {type(raw).__name__}, not a JSON object: {show(raw, 60)}"
    if set(raw) == {"_raw"} and isinstance(raw["_raw"], str):  # how clients keep arguments that were not JSON
        return None, f"arguments are not a JSON object: {show(raw['_raw'], 60)}"
    return raw, None


def has_arguments(raw: Any) -> bool:
    """Whether an expected call states its arguments (one that does not matches any arguments)."""
    if isinstance(raw, dict):
        inner = raw.get("function")
        return any(k in raw for k in ARGUMENT_KEYS) or (
            isinstance(inner, dict) and any(k in inner for k in ARGUMENT_KEYS)
        )
    return getattr(raw, "arguments", None) is not None
