"""What an assertion handler gets (promptfoo's AssertionParams) and the helpers every handler uses."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assay.tasks.checks.code import CodeRunner

if TYPE_CHECKING:
    from assay.models.base import Response

MISSING: Any = object()
SCRIPT_TYPES = ("javascript", "python")


@dataclass
class Row:
    """What one row's assertions see: the response, the vars, the rendered prompt, the test and the machinery."""

    response: Response | None
    vars: dict[str, Any]
    prompt: str
    test: dict[str, Any]
    code: CodeRunner
    services: Any  # the RowChecks evaluator: judge, embeddings, prices, tools
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def options(self) -> dict[str, Any]:
        return self.test.get("options") or {}


@dataclass
class Params:
    """One assertion's inputs, as promptfoo's handlers get them."""

    assertion: Mapping[str, Any]
    base: str
    inverse: bool
    value: Any  # promptfoo's renderedValue
    from_script: Any  # valueFromScript, MISSING when the value is no script
    output: Any  # the output after the test's and the assertion's transforms (a string or an object)
    row: Row
    context: dict[str, Any]  # assertionValueContext: what code checks get as ``context``

    @property
    def text(self) -> str:
        return coerce_string(self.output)

    @property
    def threshold(self) -> Any:
        return self.assertion.get("threshold")


Handler = Callable[[Params], "dict[str, Any] | Awaitable[dict[str, Any]]"]


def coerce_string(value: Any) -> str:
    """promptfoo's ``coerceString``: a string as is, anything else as JSON.stringify writes it."""
    return value if isinstance(value, str) else js_stringify(value)


def js_stringify(value: Any) -> str:
    """JSON as JavaScript's JSON.stringify writes it (compact; 1.0 is 1)."""
    return json.dumps(_js_numbers(value), separators=(",", ":"), ensure_ascii=False, default=str)


def _js_numbers(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _js_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_js_numbers(v) for v in value]
    return value


def result(passed: bool, reason: str, score: float | None = None) -> dict[str, Any]:
    return {"pass": passed, "score": (1.0 if passed else 0.0) if score is None else score, "reason": reason}
