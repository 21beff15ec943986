"""The ``custom`` evaluator: any Python callable, given as an object or as a ``package.module:function`` path.

The callable is called as ``fn(actual, expected)`` (or ``fn(actual)`` when it takes one positional parameter),
plus ``options=<kwargs option>`` when it has an ``options`` parameter and ``context=<the sample's context>``
(input, prompt, doc, metadata, target, as the runner passes it) when it has a ``context`` parameter. It may
return a bool, a number in [0, 1] (passes at ``threshold``), a dict ``{score, passed?, reason?, feedback?,
details?}`` or a Verdict.
A wrong return type, a score outside [0, 1] or an exception becomes an error verdict that says so; a score within
1e-9 outside [0, 1] is float rounding (sacrebleu's perfect 100.00000000000004, divided by 100) and is clipped into
it. A failing result without feedback gets feedback naming the function, the first line of its docstring (say what
the check wants there) and the reason it gave.

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
from typing import Any

import numpy as np
from pydantic import Field, field_validator

from assay.errors import ConfigError
from assay.evaluators.base import Evaluator, Options
from assay.evaluators.registry import register
from assay.importing import dotted_path, import_object
from assay.verdict import Verdict, unit_score

_KEYWORDS = ("options", "context")
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


class CustomOptions(Options):
    """Options of custom: the callable, keyword options handed to it, and the pass threshold for numbers."""

    fn: str | Callable[..., Any]
    kwargs: dict[str, Any] = Field(default_factory=dict)
    threshold: float = Field(0.5, ge=0.0, le=1.0)

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
        self._arity, self._keywords = self._calling_convention(fn)
        doc = inspect.getdoc(fn) if inspect.isfunction(fn) or inspect.ismethod(fn) else None
        self.purpose = doc.strip().splitlines()[0].strip() if doc and doc.strip() else None

    def _calling_convention(self, fn: Callable[..., Any]) -> tuple[int, frozenset[str]]:
        """How many positionals to pass (1 or 2) and which keywords (options, context); ConfigError if unusable."""
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):  # some builtins have no signature: assume fn(actual, expected)
            return 2, frozenset({"options"} if self.options.kwargs else ())
        kinds = inspect.Parameter
        by_name = {p.name for p in params if p.kind != kinds.POSITIONAL_ONLY} & set(_KEYWORDS)
        var_keyword = any(p.kind == kinds.VAR_KEYWORD for p in params)
        positional = [
            p
            for p in params
            if p.kind == kinds.POSITIONAL_ONLY or (p.kind == kinds.POSITIONAL_OR_KEYWORD and p.name not in _KEYWORDS)
        ]
        var_positional = any(p.kind == kinds.VAR_POSITIONAL for p in params)
        required = [p.name for p in positional if p.default is inspect.Parameter.empty]
        if len(required) > 2:
            raise ConfigError(
                f"custom: option 'fn': {self.label} requires {len(required)} positional parameters "
                f"({', '.join(required)}); it is called as fn(actual, expected)"
            )
        unfilled = [
            p.name
            for p in params
            if p.kind == kinds.KEYWORD_ONLY and p.default is inspect.Parameter.empty and p.name not in _KEYWORDS
        ]
        if unfilled:
            raise ConfigError(
                f"custom: option 'fn': {self.label} has required keyword-only parameters {unfilled}; "
                "only 'options' and 'context' are passed by keyword"
            )
        if not positional and not var_positional:
            raise ConfigError(f"custom: option 'fn': {self.label} takes no positional parameter for the output")
        if self.options.kwargs and not ("options" in by_name or var_keyword):
            raise ConfigError(
                f"custom: option 'kwargs' is set but {self.label} has no 'options' parameter to receive it"
            )
        if self.options.kwargs:
            by_name.add("options")
        arity = 2 if var_positional or len(positional) >= 2 else 1
        return arity, frozenset(by_name)

    def _call(self, actual: Any, expected: Any, context: Mapping[str, Any] | None) -> Any:
        args = (actual,) if self._arity == 1 else (actual, expected)
        keywords: dict[str, Any] = {}
        if "options" in self._keywords:
            keywords["options"] = dict(self.options.kwargs)
        if "context" in self._keywords:
            keywords["context"] = dict(context or {})
        return self.fn(*args, **keywords)

    def _raised(self, exc: BaseException) -> Verdict:
        return Verdict.errored(f"custom function {self.label} raised {type(exc).__name__}: {exc}")

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
        or what is wrong with it."""
        if isinstance(score, bool | np.bool_) or not isinstance(score, numbers.Real):
            return f"a score of type {type(score).__name__} (expected a number in [0, 1])"
        value = float(score)
        clipped = unit_score(value)
        if clipped is None:
            return f"the score {value!r}, outside [0, 1]"
        return clipped

    def _from_score(self, score: numbers.Real) -> Verdict:
        value = self._score(score)
        if isinstance(value, str):
            return Verdict.errored(f"custom function {self.label} returned {value}")
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
        passed = result.get("passed")
        if passed is None:
            passed = score >= self.options.threshold
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
            return Verdict(score, True, None, dict(details or {}), None)
        reason = (
            result.get("reason") or f"{self.label} scored {score:.4g}, below the threshold {self.options.threshold:g}"
        )
        return Verdict(score, False, reason, dict(details or {}), result.get("feedback"))

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
        return config

    def __repr__(self) -> str:
        extra = "".join(
            f", {k}={v!r}" for k, v in (("kwargs", self.options.kwargs), ("threshold", self.options.threshold))
        )
        return f"Custom(fn={self.label!r}{extra})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Custom)
            and self.fn == other.fn
            and self.options.kwargs == other.options.kwargs
            and self.options.threshold == other.options.threshold
        )

    def __hash__(self) -> int:
        return hash((self.name, self.options.threshold))
