"""The ``tool_usage`` evaluator: did an agent call the right tools, with the right arguments, in the right order?

Each configured expectation becomes one named check (``required:search``, ``args:search``, ``order``, …);
the score is the weighted share of checks passed and the verdict passes when every check passes (or the
score reaches ``threshold``).

Expectations come from the options (``expected_calls`` is a list of calls, as below), and per sample from the
metric's expected value (``expected: doc.<field>`` names the row's field; by default it is the task's target)
when that value is a tool-call expectation: a dict with option keys overriding the options, or expected tool
calls — a list ``[{name, arguments?}, …]`` (``[]``: no calls), a Response, or a dict with ``"tool_calls"`` (whose
option keys also apply) — meaning "these tools (required), with these arguments, in exactly this order". Any other
value (a task's answer such as 'Paris', a list of answer strings, a number) is not about tools: the sample is
judged by the options alone, and its details say the value was not used (:func:`expectation_of`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from assay.errors import ConfigError, EvaluationInputError
from assay.evaluators.base import Evaluator, Options
from assay.evaluators.jsonparse import show
from assay.evaluators.registry import register
from assay.verdict import Verdict

CHECK_KINDS = ("required", "forbidden", "min_calls", "max_calls", "args", "order", "extra", "output_contains")
_ARGUMENT_KEYS = ("arguments", "args", "input", "parameters")
_MAX_FEEDBACK = 10

ArgsSpec = dict[str, Any] | list[dict[str, Any]]


# ---------------------------------------------------------------------------------------------- reading calls


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call as judged: its position, name, and arguments (None when they could not be read)."""

    index: int
    name: str
    arguments: dict[str, Any] | None
    problem: str | None = None  # why the arguments could not be read


def read_calls(actual: Any, evaluator: str = "tool_usage") -> tuple[list[Call], str | None]:
    """The tool calls and the final text of an output: a Response, an object with ``.tool_calls``, a dict with
    ``"tool_calls"``, a list of calls, or JSON text of one of these."""
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
    if isinstance(actual, dict):
        if "tool_calls" not in actual:
            raise EvaluationInputError(
                f"{evaluator}: a dict output needs a 'tool_calls' key (got keys {sorted(actual)})"
            )
        raw = actual["tool_calls"]
        text = actual.get("text", actual.get("content"))
    elif isinstance(actual, list | tuple):
        raw = actual
    elif actual is not None and hasattr(actual, "tool_calls"):
        raw = actual.tool_calls
        text = getattr(actual, "text", None)
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
    return [_read_call(i, c, evaluator) for i, c in enumerate(raw)], text


def _read_call(index: int, call: Any, evaluator: str) -> Call:
    if isinstance(call, dict):
        source: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else call
        name = source.get("name")
        raw_args = next((source[k] for k in _ARGUMENT_KEYS if k in source), None)
    elif isinstance(call, BaseModel) or hasattr(call, "name"):
        name = getattr(call, "name", None)
        raw_args = getattr(call, "arguments", None)
    else:
        raise EvaluationInputError(f"{evaluator}: tool call {index} is {type(call).__name__}, not a call")
    if not isinstance(name, str) or not name:
        raise EvaluationInputError(f"{evaluator}: tool call {index} has no name (got {show(name, 40)})")
    arguments, problem = parse_arguments(raw_args)
    return Call(index, name, arguments, problem)


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
    return raw, None


# ---------------------------------------------------------------------------------------------- argument matching


def argument_diffs(expected: dict[str, Any], actual: dict[str, Any], exact: bool, prefix: str = "") -> list[str]:
    """How ``actual`` arguments differ from ``expected`` (subset: only expected keys matter; exact: all keys)."""
    diffs = []
    for key, want in expected.items():
        name = f"{prefix}{key}"
        if key not in actual:
            diffs.append(f"{name} missing")
        elif isinstance(want, dict) and isinstance(actual[key], dict):
            diffs.extend(argument_diffs(want, actual[key], exact, f"{name}."))
        elif not values_equal(want, actual[key]):
            diffs.append(f"{name} is {show(actual[key], 40)}, expected {show(want, 40)}")
    if exact:
        diffs.extend(f"unexpected argument {prefix}{key}" for key in actual if key not in expected)
    return diffs


def values_equal(expected: Any, actual: Any) -> bool:
    """JSON equality: booleans are not numbers, 1 equals 1.0, containers compare element by element."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return expected == actual or (math.isnan(expected) and math.isnan(actual))
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(values_equal(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list | tuple) and isinstance(actual, list | tuple):
        return len(expected) == len(actual) and all(values_equal(e, a) for e, a in zip(expected, actual, strict=True))
    return type(expected) is type(actual) and bool(expected == actual)


# ---------------------------------------------------------------------------------------------- options


class ToolUsageOptions(Options):
    """What the tool calls must satisfy; each set option becomes one or more named checks."""

    required: list[str] = Field(default_factory=list)
    forbidden: list[str] = Field(default_factory=list)
    min_calls: int | None = Field(None, ge=0)
    max_calls: int | None = Field(None, ge=0)
    args: dict[str, ArgsSpec] = Field(default_factory=dict)
    args_match: Literal["subset", "exact"] = "subset"
    order: Literal["any", "subsequence", "exact"] = "any"
    expected_sequence: list[str] | None = None
    penalize_extra: bool = False
    output_contains: list[str] = Field(default_factory=list)
    weights: dict[str, float] = Field(default_factory=dict)
    threshold: float | None = Field(None, ge=0.0, le=1.0)
    # the calls every sample is expected to make, as a per-sample list of calls says it (required, args, exact
    # order); options set beside it (order: subsequence, args_match, …) win over what it implies
    expected_calls: list[dict[str, Any]] | None = None

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

    def effective(self, evaluator: str = "tool_usage") -> ToolUsageOptions:
        """These options with ``expected_calls`` turned into the checks it implies (required, args, exact order),
        under the options set beside it; EvaluationInputError for a call that cannot be read."""
        if self.expected_calls is None:
            return self
        implied = _overrides_from_calls(self.expected_calls, evaluator, "option 'expected_calls'")
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
    """What a per-sample expected value says about tool use: option overrides (None: nothing; the value is not a
    tool-call expectation, ``ignored`` says what it was)."""

    overrides: dict[str, Any] | None
    ignored: str | None = None


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
        return Expectation({**_overrides_from_calls(expected["tool_calls"] or [], evaluator), **options})
    if isinstance(expected, dict):
        if not any(key in ToolUsageOptions.model_fields for key in expected):
            return Expectation(None, f"a dict with keys {sorted(map(str, expected))[:5]}")
        return Expectation(expected)  # option overrides (an unknown key among them is an error)
    if isinstance(expected, list | tuple):
        if expected and not any(_is_call(item) for item in expected):  # answer strings, numbers
            return Expectation(None, f"a list of {type(expected[0]).__name__} {show(list(expected), 60)}")
        return Expectation(_overrides_from_calls(expected, evaluator))
    if hasattr(expected, "tool_calls"):  # a Response: a reference trajectory
        return Expectation(_overrides_from_calls(list(expected.tool_calls or []), evaluator))
    return Expectation(None, f"{type(expected).__name__} {show(expected, 60)}")


def options_from_expected(base: ToolUsageOptions, expected: Any, evaluator: str) -> ToolUsageOptions:
    """The options for one sample: ``expected`` (a dict of option overrides or a list of calls) over ``base``;
    ``base`` itself when the value is not a tool-call expectation."""
    overrides = expectation_of(expected, evaluator).overrides
    if overrides is None:
        return base
    merged = {**base.model_dump(), **overrides, "expected_calls": None}
    try:
        return ToolUsageOptions(**merged)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(expected)'}: {e['msg'].removeprefix('Value error, ')}"
            for e in err.errors()
        )
        raise EvaluationInputError(f"{evaluator}: invalid expected ({problems})") from None


def _overrides_from_calls(expected: Sequence[Any], evaluator: str, where: str = "expected") -> dict[str, Any]:
    """The options a list of expected calls implies: these tools required, with these arguments, in this order."""
    if not isinstance(expected, list | tuple):
        raise EvaluationInputError(f"{evaluator}: {where}: tool calls must be a list, got {type(expected).__name__}")
    calls = [_read_call(i, c, f"{evaluator}: {where}") for i, c in enumerate(expected)]
    names = [c.name for c in calls]
    args: dict[str, list[dict[str, Any]]] = {}
    for raw, call in zip(expected, calls, strict=True):
        if call.problem:
            raise EvaluationInputError(f"{evaluator}: {where} tool call {call.index}: {call.problem}")
        has_args = (
            any(k in raw for k in _ARGUMENT_KEYS)
            or (isinstance(raw.get("function"), dict) and any(k in raw["function"] for k in _ARGUMENT_KEYS))
            if isinstance(raw, dict)
            else getattr(raw, "arguments", None) is not None
        )
        if has_args and call.arguments is not None:
            args.setdefault(call.name, []).append(call.arguments)
    return {
        "required": list(dict.fromkeys(names)),
        "args": args,
        "order": "exact",
        "expected_sequence": names,
    }


# ---------------------------------------------------------------------------------------------- checks


@dataclass(frozen=True, slots=True)
class Check:
    """One expectation judged: its name (``kind`` or ``kind:subject``), outcome, detail and fix."""

    name: str
    kind: str
    passed: bool
    detail: str
    fix: str | None = None


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _arrow(names: Sequence[str]) -> str:
    return " → ".join(names) if names else "(no calls)"


def _quoted(names: Sequence[str]) -> str:
    """A call sequence quoted as one value, so reasons differing only in it share a pattern (assay feedback)."""
    return repr(_arrow(names)) if names else "no calls"


def run_checks(opts: ToolUsageOptions, calls: list[Call], text: str | None, evaluator: str) -> list[Check]:
    """Every configured check over the calls and final text."""
    names = [c.name for c in calls]
    checks: list[Check] = []
    for tool in dict.fromkeys(opts.required):
        count = names.count(tool)
        made = f"calls made: {_quoted(names)}" if names else "no tool calls were made"
        detail = f"called {_plural(count, 'time')}" if count else f"never called ({made})"
        checks.append(Check(f"required:{tool}", "required", count > 0, detail, f"call the tool {tool!r}"))
    for tool in dict.fromkeys(opts.forbidden):
        at = [c.index for c in calls if c.name == tool]
        detail = f"called {_plural(len(at), 'time')} (call {', '.join(map(str, at))})" if at else "not called"
        checks.append(Check(f"forbidden:{tool}", "forbidden", not at, detail, f"do not call {tool!r}"))
    n = len(calls)
    if opts.min_calls is not None:
        fix = f"make at least {_plural(opts.min_calls, 'tool call')} (made {n})"
        detail = f"{_plural(n, 'call')} made, at least {opts.min_calls} required"
        checks.append(Check("min_calls", "min_calls", n >= opts.min_calls, detail, fix))
    if opts.max_calls is not None:
        fix = f"make at most {_plural(opts.max_calls, 'tool call')} (made {n})"
        detail = f"{_plural(n, 'call')} made, at most {opts.max_calls} allowed"
        checks.append(Check("max_calls", "max_calls", n <= opts.max_calls, detail, fix))
    for tool, spec in opts.args.items():
        checks.append(_args_check(tool, spec if isinstance(spec, list) else [spec], calls, opts.args_match == "exact"))
    if opts.order != "any":
        checks.append(_order_check(opts, names, evaluator))
    if opts.penalize_extra:
        allowed = set(opts.required) | set(opts.expected_sequence or []) | set(opts.args)
        extra = [c for c in calls if c.name not in allowed]
        detail = (
            "calls to tools not expected: " + ", ".join(f"{c.name!r} (call {c.index})" for c in extra)
            if extra
            else "no unexpected calls"
        )
        fix = "do not call " + ", ".join(dict.fromkeys(repr(c.name) for c in extra))
        checks.append(Check("extra", "extra", not extra, detail, fix))
    for needle in opts.output_contains:
        subject = needle if len(needle) <= 40 else needle[:39] + "…"
        if text is None:
            ok, detail = False, "the output has no final text"
        else:
            ok = needle in text
            detail = "found in the final text" if ok else f"not in the final text {show(text, 80)}"
        fix = f"say {show(needle, 60)} in the final answer"
        checks.append(Check(f"output_contains:{subject}", "output_contains", ok, detail, fix))
    return checks


def _args_check(tool: str, wanted: list[dict[str, Any]], calls: list[Call], exact: bool) -> Check:
    name = f"args:{tool}"
    mine = [c for c in calls if c.name == tool]
    if not mine:
        fix = f"call {tool!r} with arguments {show(wanted[0], 80)}"
        return Check(name, "args", False, f"{tool!r} was never called", fix)
    used: set[int] = set()
    matched: list[int] = []
    for want in wanted:
        hit = next(
            (
                c
                for c in mine
                if c.index not in used and c.arguments is not None and not argument_diffs(want, c.arguments, exact)
            ),
            None,
        )
        if hit is None:
            return Check(
                name, "args", False, _closest(want, mine, used, exact), f"call {tool!r} with arguments {show(want, 80)}"
            )
        used.add(hit.index)
        matched.append(hit.index)
    return Check(name, "args", True, f"matched by call {', '.join(map(str, matched))}")


def _closest(want: dict[str, Any], calls: list[Call], used: set[int], exact: bool) -> str:
    """Why no call matched ``want``, told through the closest unused call."""
    best: tuple[int, str] | None = None
    for call in calls:
        if call.index in used:
            continue
        if call.arguments is None:
            candidate = (10**9, f"call {call.index}: {call.problem}")
        else:
            diffs = argument_diffs(want, call.arguments, exact)
            candidate = (len(diffs), f"call {call.index}: {'; '.join(diffs)}")
        if best is None or candidate[0] < best[0]:
            best = candidate
    if best is None:
        return f"every call was already matched; another call with {show(want, 60)} is needed"
    return f"no call has arguments matching {show(want, 60)} ({'subset' if not exact else 'exact'}); closest {best[1]}"


def _order_check(opts: ToolUsageOptions, names: list[str], evaluator: str) -> Check:
    sequence = opts.sequence()
    if sequence is None:
        raise EvaluationInputError(
            f"{evaluator}: option 'order' is {opts.order!r} but neither 'expected_sequence' nor 'required' names a tool"
        )
    if opts.order == "exact":
        if names == sequence:
            return Check("order", "order", True, f"calls were exactly {_arrow(sequence)}")
        at = next(
            (i for i, (a, b) in enumerate(zip(names, sequence, strict=False)) if a != b), min(len(names), len(sequence))
        )
        if at < len(names) and at < len(sequence):
            where = f"call {at} was {names[at]!r}, expected {sequence[at]!r}"
        elif len(names) < len(sequence):
            where = f"{_plural(len(names), 'call')} made, {len(sequence)} expected; next expected {sequence[at]!r}"
        else:
            where = f"{_plural(len(names) - len(sequence), 'extra call')} from call {at} ({names[at]!r})"
        detail = f"{where} (made {_quoted(names)}; expected {_quoted(sequence)})"
        return Check("order", "order", False, detail, f"call exactly these tools in this order: {_arrow(sequence)}")
    position = 0
    for tool in names:
        if position < len(sequence) and tool == sequence[position]:
            position += 1
    if position == len(sequence):
        return Check("order", "order", True, f"{_arrow(sequence)} called in order")
    after = f" after {sequence[position - 1]!r}" if position else ""
    detail = f"{sequence[position]!r} not called{after} (made {_quoted(names)}; expected in order {_quoted(sequence)})"
    return Check("order", "order", False, detail, f"call these tools in this order: {_arrow(sequence)}")


# ---------------------------------------------------------------------------------------------- evaluator


@register("tool_usage")
class ToolUsage(Evaluator):
    """Judges an agent's tool calls: required/forbidden tools, call counts, arguments, order, extra calls and
    what the final text says. ``order`` uses ``expected_sequence``, or the ``required`` list when not given;
    ``penalize_extra`` treats tools outside required, expected_sequence and args as unexpected. The score is
    the weighted share of checks passed (``weights`` by kind or by ``kind:subject``; when every weight is 0,
    the score is 1 if all checks pass, else 0)."""

    Options = ToolUsageOptions
    options: ToolUsageOptions

    def setup(self) -> None:
        try:
            self._base = self.options.effective(self.name)
        except EvaluationInputError as err:
            raise ConfigError(str(err)) from None

    def check(self, actual: Any, expected: Any) -> Verdict:
        expectation = expectation_of(expected, self.name)
        opts = options_from_expected(self._base, expected, self.name)
        calls, text = read_calls(actual, self.name)
        checks = run_checks(opts, calls, text, self.name)
        if not checks:
            not_used = f"; the expected value ({expectation.ignored}) is not tool calls" if expectation.ignored else ""
            raise EvaluationInputError(
                f"{self.name} has nothing to check{not_used}: set required, forbidden, min_calls, max_calls, args, "
                "order, expected_calls, penalize_extra or output_contains, or give the calls per sample from a "
                "row's field (expected: doc.<field>)"
            )
        weights = [opts.weights.get(c.name, opts.weights.get(c.kind, 1.0)) for c in checks]
        total = sum(weights)
        all_passed = all(c.passed for c in checks)
        if total > 0:
            score = sum(w for w, c in zip(weights, checks, strict=True) if c.passed) / total
        else:
            score = 1.0 if all_passed else 0.0
        score = min(1.0, max(0.0, score))
        details = {
            "checks": [
                {"name": c.name, "passed": c.passed, "detail": c.detail, "weight": w}
                for c, w in zip(checks, weights, strict=True)
            ],
            "calls": [c.name for c in calls],
            "n_calls": len(calls),
        }
        if expectation.ignored:  # e.g. the task's answer as target: judged by the options alone
            details["expected_not_used"] = f"{expectation.ignored} is not a tool-call expectation"
        passed = all_passed if opts.threshold is None else score >= opts.threshold
        if passed:
            return Verdict(score, True, None, details, None)
        failed = [c for c in checks if not c.passed]
        causes = list(dict.fromkeys(f"tool check {c.name} failed" for c in failed)) or ["score below the threshold"]
        details["check"], details["failed_checks"] = causes[0], causes[:_MAX_FEEDBACK]
        reason = f"{len(failed)} of {_plural(len(checks), 'check')} failed: " + "; ".join(
            f"{c.name}: {c.detail}" for c in failed
        )
        fixes = [c.fix for c in failed if c.fix][:_MAX_FEEDBACK]
        feedback = "Fix the tool use: " + "; ".join(fixes) + "." if fixes else None
        return Verdict(score, False, reason, details, feedback)
