"""``tool_usage`` options, and the per-sample expectation read from a metric's expected value."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from assay.errors import EvaluationInputError
from assay.evaluators.agent.arguments import Comparators
from assay.evaluators.agent.calls import has_arguments, read_call
from assay.evaluators.base import Options
from assay.evaluators.jsonparse import show

CHECK_KINDS = ("required", "forbidden", "min_calls", "max_calls", "args", "order", "extra", "output_contains", "match")
MATCH_MODES = ("strict", "unordered", "subset", "superset", "in_order")

ArgsSpec = dict[str, Any] | list[dict[str, Any]]
MatchMode = Literal["strict", "unordered", "subset", "superset", "in_order"]


class ToolUsageOptions(Options):
    """What the tool calls must satisfy; each set option becomes one or more named checks."""

    required: list[str] = Field(
        default_factory=list,
        description="Tools that must be called at least once, and succeed (a call that failed does not count); one "
        "check per tool.",
    )
    forbidden: list[str] = Field(default_factory=list, description="Tools that must never be called; one check each.")
    min_calls: int | None = Field(None, ge=0, description="The fewest tool calls the output may make.")
    max_calls: int | None = Field(None, ge=0, description="The most tool calls the output may make.")
    args: dict[str, ArgsSpec] = Field(
        default_factory=dict,
        description="Per tool, the arguments some call of it must carry (a mapping, or a list of mappings that "
        "must each be matched by a call); compared as args_match and compare say.",
    )
    args_match: Literal["subset", "exact"] = Field(
        "subset",
        description="subset: a call may carry arguments besides the expected ones; exact: exactly the expected ones.",
    )
    order: Literal["any", "subsequence", "exact"] = Field(
        "any",
        description="Order of the calls named by expected_sequence (else required): any; subsequence (in this "
        "order, other calls between allowed); exact (exactly these calls in this order).",
    )
    expected_sequence: list[str] | None = Field(None, description="The tool names that order is checked against.")
    penalize_extra: bool = Field(
        False, description="Fail a check when a tool is called that no option expects (required, args, sequence)."
    )
    output_contains: list[str] = Field(
        default_factory=list, description="Substrings the final text answer must contain; one check each."
    )
    weights: dict[str, float] = Field(
        default_factory=dict,
        description="Weight of each check in the score, by kind (required, args, order, match, …) or by "
        "'kind:subject'; unlisted checks weigh 1.",
    )
    threshold: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="Pass when the weighted score reaches this; unset, the verdict passes only if every check passes.",
    )
    expected_calls: list[dict[str, Any]] | None = Field(
        None,
        description="The calls every sample must make (name and arguments), as a per-sample expected list says "
        "it; implies required, args and exact order unless those options are set beside it.",
    )
    match: MatchMode | None = Field(
        None,
        description="Judge the expected calls as one sequence with partial credit: strict, unordered, subset, "
        "superset or in_order (unset: the separate checks above).",
    )
    compare: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Per tool (or '*'), per argument (dotted when nested): how values compare, exact, ignore, "
        "numeric (with a tolerance), regex, or a dotted-path function.",
    )
    count_submit: bool = Field(
        False, description="Count the submit call that ended an agent's trajectory as a tool call (it is the answer)."
    )

    @field_validator("required", "forbidden", "expected_sequence", "output_contains")
    @classmethod
    def _no_empty_names(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and any(not v for v in value):
            raise ValueError("must not contain empty strings")
        return value

    @field_validator("weights")
    @classmethod
    def _known_checks(cls, value: dict[str, float]) -> dict[str, float]:
        for key, weight in value.items():
            if key.partition(":")[0] not in CHECK_KINDS:
                raise ValueError(f"unknown check {key!r}; weights are keyed by {', '.join(CHECK_KINDS)} or 'kind:name'")
            if not math.isfinite(weight) or weight < 0:
                raise ValueError(f"weight of {key!r} must be a finite number >= 0, got {weight!r}")
        return value

    @field_validator("compare")
    @classmethod
    def _comparators_build(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        Comparators(value)  # a bad comparator (unknown name, bad regex, missing function) is refused here
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ToolUsageOptions:
        if self.min_calls is not None and self.max_calls is not None and self.min_calls > self.max_calls:
            raise ValueError(f"min_calls ({self.min_calls}) is greater than max_calls ({self.max_calls})")
        forbidden = set(self.forbidden)
        for option, names in (
            ("required", self.required),
            ("expected_sequence", self.expected_sequence or []),
            ("args", list(self.args)),
        ):
            clash = sorted(forbidden.intersection(names))
            if clash:
                raise ValueError(f"{clash} are both forbidden and in '{option}'")
        return self

    def comparators(self) -> Comparators:
        """The ``compare`` option built (validated when the options were)."""
        return Comparators(self.compare)

    def effective(self, evaluator: str = "tool_usage") -> ToolUsageOptions:
        """These options with ``expected_calls`` turned into the checks it implies (required, args, exact order),
        under the options set beside it (with ``match`` set the calls stay a sequence for it to judge);
        EvaluationInputError for a call that cannot be read."""
        if self.expected_calls is None:
            return self
        calls = checked_calls(self.expected_calls, evaluator, "option 'expected_calls'")
        if self.match is not None:
            return self
        implied = implied_checks(calls)
        given = {key: getattr(self, key) for key in self.model_fields_set if key != "expected_calls"}
        try:
            return ToolUsageOptions(**{**self.model_dump(), **implied, **given, "expected_calls": None})
        except ValidationError as err:
            problem = "; ".join(e["msg"].removeprefix("Value error, ") for e in err.errors())
            raise EvaluationInputError(f"{evaluator}: option 'expected_calls': {problem}") from None

    def sequence(self) -> list[str] | None:
        """The names ``order`` applies to: ``expected_sequence``, else ``required`` (None when neither is set)."""
        if self.expected_sequence is not None:
            return self.expected_sequence
        return self.required or None


@dataclass(frozen=True, slots=True)
class Expectation:
    """What a per-sample expected value says about tool use: option overrides and/or expected calls (both None:
    nothing; the value is not a tool-call expectation, ``ignored`` says what it was)."""

    overrides: dict[str, Any] | None
    ignored: str | None = None
    calls: list[Any] | None = None  # expected calls, judged under ``match`` or as the checks they imply


def _is_call(item: Any) -> bool:
    """Whether a list item is meant as a tool call (a dict, a ToolCall), not an answer string or number."""
    return isinstance(item, dict) or (not isinstance(item, str | int | float) and hasattr(item, "name"))


def expectation_of(expected: Any, evaluator: str = "tool_usage") -> Expectation:
    """Read a per-sample expected value: tool calls or option overrides (a malformed one is an
    EvaluationInputError naming what is wrong), or a value that is not about tools (the task's answer)."""
    if expected is None:
        return Expectation(None)
    if isinstance(expected, str):
        try:
            parsed = json.loads(expected)
        except ValueError:
            return Expectation(None, f"the text {show(expected, 60)}")
        if not isinstance(parsed, dict | list):
            return Expectation(None, f"the text {show(expected, 60)}")
        expected = parsed
    if isinstance(expected, dict) and "tool_calls" in expected:  # a recorded response: its calls, plus any options
        options = {k: v for k, v in expected.items() if k in ToolUsageOptions.model_fields}
        return Expectation(options, calls=_calls_list(expected["tool_calls"] or [], evaluator))
    if isinstance(expected, dict):
        if not any(key in ToolUsageOptions.model_fields for key in expected):
            return Expectation(None, f"a dict with keys {sorted(map(str, expected))[:5]}")
        return Expectation(dict(expected))  # option overrides (an unknown key among them is an error)
    if isinstance(expected, list | tuple):
        if expected and not any(_is_call(item) for item in expected):  # answer strings, numbers
            return Expectation(None, f"a list of {type(expected[0]).__name__} {show(list(expected), 60)}")
        return Expectation({}, calls=_calls_list(expected, evaluator))
    if hasattr(expected, "tool_calls"):  # a Response: a reference trajectory
        return Expectation({}, calls=_calls_list(list(expected.tool_calls or []), evaluator))
    return Expectation(None, f"{type(expected).__name__} {show(expected, 60)}")


def _calls_list(expected: Any, evaluator: str) -> list[Any]:
    if not isinstance(expected, list | tuple):
        raise EvaluationInputError(f"{evaluator}: expected: tool calls must be a list, got {type(expected).__name__}")
    checked_calls(expected, evaluator)
    return list(expected)


def options_from_expected(base: ToolUsageOptions, expected: Any, evaluator: str) -> ToolUsageOptions:
    """The options for one sample: ``expected`` (a dict of option overrides or a list of calls) over ``base``;
    ``base`` itself when the value is not a tool-call expectation. Expected calls become ``expected_calls`` when a
    ``match`` mode judges them, else the checks they imply (required, args, exact order)."""
    expectation = expectation_of(expected, evaluator)
    if expectation.overrides is None:
        return base
    overrides = dict(expectation.overrides)
    calls = expectation.calls
    if calls is None and overrides.get("expected_calls") is not None:
        calls = _calls_list(overrides.pop("expected_calls"), evaluator)
    merged = base.model_dump()
    if calls is not None:
        if overrides.get("match", base.match) is None:
            merged.update(implied_checks(checked_calls(calls, evaluator)))
            merged["expected_calls"] = None
        else:
            merged["expected_calls"] = [_as_dict(c) for c in calls]
    merged.update(overrides)
    try:
        opts = ToolUsageOptions(**merged)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(expected)'}: {e['msg'].removeprefix('Value error, ')}"
            for e in err.errors()
        )
        raise EvaluationInputError(f"{evaluator}: invalid expected ({problems})") from None
    return opts


def _as_dict(call: Any) -> dict[str, Any]:
    """An expected call as a dict (a ToolCall as its name and arguments)."""
    if isinstance(call, dict):
        return call
    return {"name": call.name, "arguments": getattr(call, "arguments", None)}


@dataclass(frozen=True, slots=True)
class ExpectedCall:
    """One expected call: its position, name, and arguments (None: any arguments)."""

    index: int
    name: str
    arguments: dict[str, Any] | None


def checked_calls(expected: Sequence[Any], evaluator: str, where: str = "expected") -> list[ExpectedCall]:
    """Expected calls read and checked: each has a name, and its arguments (if stated) are a JSON object."""
    if not isinstance(expected, list | tuple):
        raise EvaluationInputError(f"{evaluator}: {where}: tool calls must be a list, got {type(expected).__name__}")
    out = []
    for i, raw in enumerate(expected):
        call = read_call(i, raw, f"{evaluator}: {where}")
        if call.problem:
            raise EvaluationInputError(f"{evaluator}: {where} tool call {call.index}: {call.problem}")
        out.append(ExpectedCall(i, call.name, call.arguments if has_arguments(raw) else None))
    return out


def implied_checks(calls: list[ExpectedCall]) -> dict[str, Any]:
    """The options a list of expected calls implies: these tools required, with these arguments, in this order."""
    names = [c.name for c in calls]
    args: dict[str, list[dict[str, Any]]] = {}
    for call in calls:
        if call.arguments is not None:
            args.setdefault(call.name, []).append(call.arguments)
    return {
        "required": list(dict.fromkeys(names)),
        "args": args,
        "order": "exact",
        "expected_sequence": names,
    }
