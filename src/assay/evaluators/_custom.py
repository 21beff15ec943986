"""The ``custom`` evaluator: any Python callable, given as an object or as a ``package.module:function`` path.

The callable is called as ``fn(output, expected)`` (or ``fn(output)`` when it takes one positional parameter); the
output is text: the model's answer (a Response becomes its ``.text``), or what the task's filter made of it (a
string, or e.g. the object ``extract_json`` parsed). Parameters with these names get, wherever they stand:
``response`` the model's Response (tool calls, usage, finish reason; None when a filter made the value judged),
``expected`` the expected value, ``options`` the ``kwargs`` option, ``context`` the sample's context (input,
prompt, doc, metadata, target, as the runner passes it). The signature is read once, when the evaluator is
built, so ``def check(output, expected)``, ``def check(response, expected)`` and ``def check(output, *, context)``
all work; one that cannot be called so is a ConfigError naming the parameter.

It may return a bool, a number in [0, 1] (passes at ``threshold``), a dict ``{score, passed?, reason?, feedback?,
details?}`` or a Verdict. With ``scale: own`` the number is a metric on its own scale (a length, a difference of
BLEU scores): any finite number, reported as it is with its interval, passing within ``at_least`` / ``at_most`` when
they are set (every value passes when neither is). A wrong return type, a score outside [0, 1] (on the unit scale)
or an exception becomes an error verdict that says so; a score within 1e-9 outside [0, 1] is float rounding
(sacrebleu's perfect 100.00000000000004, divided by 100) and is clipped into it. A failing result without feedback
gets feedback naming the function, the first line of its docstring (say what the check wants there) and the reason
it gave.

Async callables are awaited by :meth:`Custom.aevaluate`. The sync :meth:`Custom.evaluate` runs them to
completion with ``asyncio.run``; when called from inside a running event loop (Jupyter, async code) it runs
them in a fresh event loop on a worker thread, so it never fails for want of a loop — but ``aevaluate`` is
the better choice in async code, since it does not block the caller's loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import numbers
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from assay.errors import ConfigError
from assay.evaluators.base import Evaluator, Options
from assay.evaluators.registry import register
from assay.importing import dotted_path, import_object
from assay.verdict import Verdict, unit_score

# parameters filled by name, wherever they stand; the other parameters get the output, then the expected value
BY_NAME = ("options", "context", "response", "expected")
_VALUES = ("output", "expected", "options", "context", "response")
_RESPONSE_FIELDS = frozenset({"text", "tool_calls", "usage", "finish_reason", "latency_s", "raw"})
_DICT_KEYS = ("score", "passed", "reason", "feedback", "details")
_RETURN_TYPES = "a bool, a number in [0, 1], a dict with a 'score' key, or a Verdict"


def describe_callable(fn: Any) -> str:
    """A short name for messages: the dotted path when there is one, else the qualified name."""
    try:
        return dotted_path(fn)
    except ValueError:
        return str(getattr(fn, "__qualname__", None) or type(fn).__name__)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def run_sync(awaitable: Awaitable[Any]) -> Any:
    """Run an awaitable to completion from sync code, in a worker thread's fresh loop if a loop is running."""

    async def wait() -> Any:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="assay-custom") as pool:
        return pool.submit(asyncio.run, wait()).result()


class Uncallable(ValueError):
    """A custom function that cannot be called as custom calls functions: the option at fault and why."""

    def __init__(self, option: str, problem: str) -> None:
        super().__init__(f"{option}: {problem}")
        self.option, self.problem = option, problem


@dataclass(frozen=True, slots=True)
class _Plan:
    """How a custom function is called: the values passed by position, in order, and by keyword (parameter,
    value); values are named as in :data:`_VALUES`."""

    positional: tuple[str, ...]
    keywords: tuple[tuple[str, str], ...] = ()

    @property
    def wants(self) -> frozenset[str]:
        return frozenset(self.positional) | {value for _, value in self.keywords}

    @property
    def needs_response(self) -> bool:
        return "response" in self.wants


def call_plan(params: list[inspect.Parameter], has_kwargs: bool) -> _Plan:
    """How to call a function with these parameters: ``options``, ``context``, ``response`` and ``expected`` by name
    (wherever they stand), the other parameters in order the output and then the expected value (unless a
    parameter named ``expected`` takes it). Values go by position while the parameters take them in order, by
    keyword after a parameter left to its default. :class:`Uncallable` says why a function cannot be called so."""
    kinds = inspect.Parameter
    named = {p.name for p in params if p.kind != kinds.POSITIONAL_ONLY and p.name in BY_NAME}
    unnamed = ["output"] if "expected" in named else ["output", "expected"]
    fillable = [p for p in params if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)]
    required = [p.name for p in fillable if p.name not in named and p.default is kinds.empty]
    if len(required) > len(unnamed):
        raise Uncallable(
            "fn",
            f"requires {len(required)} positional parameters ({', '.join(required)}); it is called as "
            f"fn(output, expected), with {', '.join(BY_NAME)} also passed by name when asked for",
        )
    unfilled = [p.name for p in params if p.kind == kinds.KEYWORD_ONLY and p.default is kinds.empty]
    unfilled = [name for name in unfilled if name not in named]
    if unfilled:
        raise Uncallable(
            "fn", f"has required keyword-only parameters {unfilled}; only {', '.join(BY_NAME)} are passed by keyword"
        )
    var_keyword = any(p.kind == kinds.VAR_KEYWORD for p in params)
    if has_kwargs and not ("options" in named or var_keyword):
        raise Uncallable("kwargs", "has no 'options' parameter to receive it")
    positional: list[str] = []
    keywords: list[tuple[str, str]] = []
    by_keyword = False  # after a parameter left to its default, the rest go by keyword
    for p in params:
        if p.kind == kinds.VAR_POSITIONAL:
            if not by_keyword:
                positional.extend(unnamed)
                unnamed = []
            continue
        if p.kind == kinds.VAR_KEYWORD:
            continue
        value = p.name if p.name in named else unnamed.pop(0) if p.kind != kinds.KEYWORD_ONLY and unnamed else None
        if value is None:
            by_keyword = by_keyword or p.kind != kinds.KEYWORD_ONLY
            continue
        if p.kind == kinds.KEYWORD_ONLY or by_keyword:
            if p.kind == kinds.POSITIONAL_ONLY:
                raise Uncallable("fn", f"parameter {p.name!r} is positional-only after one left to its default")
            keywords.append((p.name, value))
        else:
            positional.append(value)
    if has_kwargs and "options" not in named:
        keywords.append(("options", "options"))
    plan = _Plan(tuple(positional), tuple(keywords))
    if "output" not in plan.wants and not plan.needs_response:
        raise Uncallable("fn", "takes no positional parameter for the output (nor one named 'response')")
    return plan


def _is_response(value: Any) -> bool:
    """True for a model's Response (what the runner judges when no filter turned it into something else)."""
    from assay.models.base import Response

    return isinstance(value, Response)


class CustomOptions(Options):
    """Options of custom: the callable, keyword options handed to it, and the pass threshold for numbers."""

    fn: str | Callable[..., Any] = Field(
        description="the check: a dotted path 'package.module:function' (importable from where assay runs) or, "
        "from Python, the callable itself; called as fn(output, expected)"
    )
    kwargs: dict[str, Any] = Field(
        default_factory=dict,
        description="a mapping handed to the function's 'options' parameter, to reuse one function with settings",
    )
    threshold: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="the score (0–1) at or above which a returned number, or a dict without 'passed', passes",
    )
    scale: Literal["unit", "own"] = Field(
        "unit",
        description="'unit': the function returns scores in [0, 1]; 'own': a metric on its own scale (any finite "
        "number, e.g. a length), averaged and given an interval as it is, never clipped",
    )
    at_least: float | None = Field(
        None, description="scale 'own': a value passes when it is at least this (unset: no lower bound)"
    )
    at_most: float | None = Field(
        None, description="scale 'own': a value passes when it is at most this (unset: no upper bound)"
    )

    @model_validator(mode="after")
    def _bounds_need_own_scale(self) -> CustomOptions:
        if self.scale == "unit" and (self.at_least is not None or self.at_most is not None):
            raise ValueError("at_least and at_most bound a metric on its own scale: set scale: own")
        if self.scale == "own" and self.threshold != 0.5:
            raise ValueError("threshold is for scores in [0, 1]; on its own scale use at_least / at_most")
        return self

    @field_validator("fn", mode="before")
    @classmethod
    def _callable_or_path(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip():
            return value
        if callable(value) and not isinstance(value, str):
            return value
        raise ValueError("must be a callable or a dotted path 'package.module:function'")


@register("custom")
class Custom(Evaluator):
    """Judges with your own function and normalises whatever it returns into a Verdict."""

    Options = CustomOptions
    options: CustomOptions

    def setup(self) -> None:
        fn = self.options.fn
        if isinstance(fn, str):
            try:
                fn = import_object(fn)
            except ValueError as err:
                raise ConfigError(f"custom: option 'fn': {err}") from None
            if not callable(fn):
                raise ConfigError(f"custom: option 'fn': {self.options.fn!r} is {type(fn).__name__}, not callable")
        self.fn: Callable[..., Any] = fn
        self.label = self.options.fn if isinstance(self.options.fn, str) else describe_callable(fn)
        self._plan = self._calling_convention(fn)
        doc = inspect.getdoc(fn) if inspect.isfunction(fn) or inspect.ismethod(fn) else None
        self.purpose = doc.strip().splitlines()[0].strip() if doc and doc.strip() else None

    def _calling_convention(self, fn: Callable[..., Any]) -> _Plan:
        """How the function is called (see :func:`call_plan`); ConfigError naming the parameter if it cannot be."""
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):  # some builtins have no signature: assume fn(output, expected)
            return _Plan(("output", "expected"), (("options", "options"),) if self.options.kwargs else ())
        try:
            return call_plan(params, bool(self.options.kwargs))
        except Uncallable as err:
            raise ConfigError(f"custom: option {err.option!r}: {self.label} {err.problem}") from None

    def _call(self, actual: Any, expected: Any, context: Mapping[str, Any] | None) -> Any:
        values = {"output": actual, "expected": expected}
        plan = self._plan
        if plan.needs_response:
            values["response"] = actual if _is_response(actual) else None
        if _is_response(actual):  # the function is given the output's text; the Response only by name
            values["output"] = actual.text or ""
        if "options" in plan.wants:
            values["options"] = dict(self.options.kwargs)
        if "context" in plan.wants:
            values["context"] = dict(context or {})
        return self.fn(*[values[v] for v in plan.positional], **{name: values[v] for name, v in plan.keywords})

    def _raised(self, exc: BaseException) -> Verdict:
        hint = ""
        if isinstance(exc, AttributeError) and getattr(exc, "name", None) in _RESPONSE_FIELDS:
            hint = " (the output is given as text; take a parameter named 'response' for the model's Response)"
        return Verdict.errored(f"custom function {self.label} raised {type(exc).__name__}: {exc}{hint}")

    def check(self, actual: Any, expected: Any) -> Verdict:
        return self.evaluate(actual, expected)

    def evaluate(self, actual: Any, expected: Any = None, *, context: Mapping[str, Any] | None = None) -> Verdict:
        """Call the function (running an async one to completion) and normalise its result; never raises."""
        try:
            result = self._call(actual, expected, context)
            if inspect.isawaitable(result):
                result = run_sync(result)
        except Exception as exc:
            return self._raised(exc)
        return self._normalise_safely(result)

    def fork_safe(self) -> bool:
        """A plain function may run in a forked worker; an async one (which may hold connections) may not."""
        return not inspect.iscoroutinefunction(self.fn)

    async def aevaluate(
        self, actual: Any, expected: Any = None, *, context: Mapping[str, Any] | None = None
    ) -> Verdict:
        """Awaits an async function on the caller's loop; a sync function is called directly."""
        try:
            result = self._call(actual, expected, context)
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:
            return self._raised(exc)
        return self._normalise_safely(result)

    def _normalise_safely(self, result: Any) -> Verdict:
        try:
            return self.normalise(result)
        except Exception as exc:  # e.g. a number type whose float() raises
            return Verdict.errored(f"custom: could not use the result of {self.label}: {type(exc).__name__}: {exc}")

    def normalise(self, result: Any) -> Verdict:
        """Turn the callable's return value into a Verdict (an error verdict when it is unusable).

        A failing verdict always has a reason and feedback: the function's own, or written from its name,
        its docstring's first line and its reason.
        """
        verdict = self._verdict(result)
        if verdict.passed or verdict.is_error or (verdict.reason and verdict.feedback):
            return verdict
        own = (
            verdict.reason
            if isinstance(result, Verdict) or (isinstance(result, dict) and result.get("reason"))
            else None
        )
        reason = verdict.reason or f"{self.label} returned a failing verdict without a reason"
        return dataclasses.replace(verdict, reason=reason, feedback=verdict.feedback or self._feedback(own))

    def _feedback(self, reason: str | None) -> str:
        """Feedback for a failure the function gave none for, from its name, docstring and own reason."""
        wants = f" ({_clip(self.purpose.rstrip('.'), 160)})" if self.purpose else ""
        because = f": {_clip(reason, 300)}" if reason else ""
        return f"Change the output so that it passes the check {self.label}{wants}{because}."

    def _verdict(self, result: Any) -> Verdict:
        if isinstance(result, Verdict):
            return result
        if isinstance(result, bool | np.bool_):
            return Verdict.pass_() if result else Verdict.fail(f"{self.label} returned False")
        if isinstance(result, numbers.Real):
            return self._from_score(result)
        if isinstance(result, dict):
            return self._from_dict(result)
        return Verdict.errored(
            f"custom function {self.label} returned {type(result).__name__}; expected {_RETURN_TYPES}"
        )

    def _score(self, score: Any) -> float | str:
        """The returned score in [0, 1] (float rounding just outside is clipped: :func:`assay.verdict.unit_score`),
        or on scale 'own' any finite number; else what is wrong with it."""
        own = self.options.scale == "own"
        wanted = "a finite number" if own else "a number in [0, 1]"
        if isinstance(score, bool | np.bool_) or not isinstance(score, numbers.Real):
            return f"a score of type {type(score).__name__} (expected {wanted})"
        value = float(score)
        if own:
            return value if np.isfinite(value) else f"the score {value!r} (expected {wanted})"
        clipped = unit_score(value)
        if clipped is None:
            return f"the score {value!r}, outside [0, 1] (a metric on its own scale: set scale: own)"
        return clipped

    def _own_failure(self, value: float) -> str | None:
        """Why a value on its own scale fails its bounds (None: it passes)."""
        low, high = self.options.at_least, self.options.at_most
        if low is not None and value < low:
            return f"{self.label} gave {value:.4g}, below the minimum {low:g}"
        if high is not None and value > high:
            return f"{self.label} gave {value:.4g}, above the maximum {high:g}"
        return None

    def _from_score(self, score: numbers.Real) -> Verdict:
        value = self._score(score)
        if isinstance(value, str):
            return Verdict.errored(f"custom function {self.label} returned {value}")
        if self.options.scale == "own":
            failure = self._own_failure(value)
            return Verdict(value, failure is None, failure, {}, None, own_scale=True)
        threshold = self.options.threshold
        return Verdict.partial(value, f"{self.label} scored {value:.4g}, below the threshold {threshold:g}", threshold)

    def _from_dict(self, result: dict[Any, Any]) -> Verdict:
        unknown = sorted(str(k) for k in result if k not in _DICT_KEYS)
        if unknown:
            return Verdict.errored(
                f"custom function {self.label} returned a dict with unknown key(s) {unknown}; "
                f"allowed: {list(_DICT_KEYS)}"
            )
        if "score" not in result:
            return Verdict.errored(f"custom function {self.label} returned a dict without a 'score' key")
        score = self._score(result["score"])
        if isinstance(score, str):
            return Verdict.errored(f"custom function {self.label} returned {score}")
        own = self.options.scale == "own"
        passed = result.get("passed")
        failure = self._own_failure(score) if own else None
        if passed is None:
            passed = failure is None if own else score >= self.options.threshold
        elif not isinstance(passed, bool | np.bool_):
            return Verdict.errored(f"custom function {self.label} returned 'passed' of type {type(passed).__name__}")
        for key in ("reason", "feedback"):
            if result.get(key) is not None and not isinstance(result[key], str):
                return Verdict.errored(
                    f"custom function {self.label} returned {key!r} of type {type(result[key]).__name__}"
                )
        details = result.get("details")
        if details is not None and not isinstance(details, dict):
            return Verdict.errored(f"custom function {self.label} returned 'details' of type {type(details).__name__}")
        if passed:
            return Verdict(score, True, None, dict(details or {}), None, own_scale=own)
        fallback = failure or (
            f"{self.label} gave {score:.4g}, marked failing"
            if own
            else f"{self.label} scored {score:.4g}, below the threshold {self.options.threshold:g}"
        )
        reason = result.get("reason") or fallback
        return Verdict(score, False, reason, dict(details or {}), result.get("feedback"), own_scale=own)

    def to_config(self) -> dict[str, Any]:
        """The config, with the callable as its dotted path; ConfigError if it has none or kwargs are not JSON."""
        fn = self.options.fn
        if not isinstance(fn, str):
            try:
                fn = dotted_path(fn)
            except ValueError as err:
                raise ConfigError(f"custom: option 'fn' cannot be saved in a config: {err}") from None
        config: dict[str, Any] = {"name": self.name, "fn": fn}
        if self.options.kwargs:
            try:
                config["kwargs"] = json.loads(json.dumps(self.options.kwargs))
            except (TypeError, ValueError) as err:
                raise ConfigError(f"custom: option 'kwargs' cannot be saved in a config: {err}") from None
        if self.options.threshold != 0.5:
            config["threshold"] = self.options.threshold
        if self.options.scale != "unit":
            config["scale"] = self.options.scale
        for key in ("at_least", "at_most"):
            if getattr(self.options, key) is not None:
                config[key] = getattr(self.options, key)
        return config

    def __repr__(self) -> str:
        shown = [("kwargs", self.options.kwargs), ("threshold", self.options.threshold)]
        if self.options.scale == "own":
            shown += [("scale", "own"), ("at_least", self.options.at_least), ("at_most", self.options.at_most)]
        extra = "".join(f", {k}={v!r}" for k, v in shown)
        return f"Custom(fn={self.label!r}{extra})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Custom)
            and self.fn == other.fn
            and self.options.kwargs == other.options.kwargs
            and self.options.threshold == other.options.threshold
            and (self.options.scale, self.options.at_least, self.options.at_most)
            == (other.options.scale, other.options.at_least, other.options.at_most)
        )

    def __hash__(self) -> int:
        return hash((self.name, self.options.threshold, self.options.scale))
