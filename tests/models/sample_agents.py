"""Agents loaded by dotted path in the Python-provider tests."""

from __future__ import annotations

from typing import Any

from assay.models.base import Request


def echo(request: Request) -> str:
    """Answers with the last message's content."""
    return str(request.messages[-1]["content"])


async def async_upper(messages: list[dict[str, Any]], repeat: int) -> str:
    """An async agent taking keyword arguments."""
    return f"{messages[-1]['content'].upper()}#{repeat}"


class Calculator:
    """A class agent: instantiated with kwargs, answers through generate()."""

    def __init__(self, offset: int = 0, api_key: str | None = None) -> None:
        self.offset = offset

    def generate(self, doc: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        total = doc["a"] + doc["b"] + self.offset
        return str(total), [{"name": "add", "arguments": {"a": doc["a"], "b": doc["b"]}, "result": total}]


class Failing:
    """Always raises."""

    def __call__(self, request: Request) -> str:
        raise RuntimeError("tool backend unavailable")


NOT_CALLABLE = 42
