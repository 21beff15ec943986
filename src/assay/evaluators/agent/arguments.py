"""Comparing a call's arguments with the expected ones, argument by argument: ``exact`` (JSON equality, the
default), ``ignore``, ``numeric`` (with ``tolerance`` / ``rel_tolerance``), ``regex`` and a custom function."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from assay.errors import EvaluationInputError
from assay.evaluators.jsonparse import show

COMPARATOR_NAMES = ("exact", "ignore", "numeric", "regex")
ANY_TOOL = "*"


@dataclass(frozen=True)
class Comparator:
    """How one argument is compared. ``pattern``: a fixed regex (None: the expected value is the pattern)."""

    kind: str  # exact | ignore | numeric | regex | function
    tolerance: float = 0.0
    rel_tolerance: float = 0.0
    pattern: re.Pattern[str] | None = None
    function: Callable[[Any, Any], Any] | None = None
    label: str = ""

    def differs(self, expected: Any, actual: Any) -> str | None:
        """None when ``actual`` is acceptable for ``expected``, else what is wrong with it."""
        if self.kind == "ignore":
            return None
        if self.kind == "numeric":
            return self._numeric(expected, actual)
        if self.kind == "regex":
            return self._regex(expected, actual)
        if self.kind == "function":
            assert self.function is not None
            try:
                outcome = self.function(actual, expected)
            except Exception as err:
                raise EvaluationInputError(f"comparator {self.label} raised {type(err).__name__}: {err}") from None
            if not (isinstance(outcome, bool) or type(outcome).__name__ == "bool_"):
                raise EvaluationInputError(
                    f"comparator {self.label} must return True or False, got {type(outcome).__name__}"
                )
            return None if outcome else f"is {show(actual, 40)}, which {self.label} rejects for {show(expected, 40)}"
        return None if values_equal(expected, actual) else f"is {show(actual, 40)}, expected {show(expected, 40)}"

    def _numeric(self, expected: Any, actual: Any) -> str | None:
        want, got = as_number(expected), as_number(actual)
        if want is None:
            raise EvaluationInputError(f"a numeric comparator needs a number to expect, got {show(expected, 40)}")
        if got is None:
            return f"is {show(actual, 40)}, not a number (expected {show(expected, 40)})"
        allowed = max(self.tolerance, self.rel_tolerance * abs(want))
        if abs(got - want) <= allowed or got == want:
            return None
        within = f" within {allowed:g}" if allowed else ""
        return f"is {show(actual, 40)}, expected {show(expected, 40)}{within}"

    def _regex(self, expected: Any, actual: Any) -> str | None:
        pattern = self.pattern
        if pattern is None:
            if not isinstance(expected, str):
                raise EvaluationInputError(f"a regex comparator needs a pattern to expect, got {show(expected, 40)}")
            try:
                pattern = re.compile(expected)
            except re.error as err:
                raise EvaluationInputError(f"expected pattern {show(expected, 40)} is not a regex: {err}") from None
        text = actual if isinstance(actual, str) else json.dumps(actual, ensure_ascii=False)
        if pattern.search(text):
            return None
        return f"is {show(actual, 40)}, which does not match /{pattern.pattern}/"


EXACT = Comparator("exact")


def as_number(value: Any) -> float | None:
    """A number, or numeric text ('3', ' 2.5 ') as one; booleans and anything else are None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def build_comparator(spec: Any, where: str) -> Comparator:
    """A Comparator from its option form: a name (exact, ignore, numeric, regex) or a mapping with one of
    ``tolerance`` / ``rel_tolerance``, ``regex: PATTERN`` or ``function: 'module:name'``; ValueError names ``where``."""
    if isinstance(spec, str):
        if spec not in COMPARATOR_NAMES:
            raise ValueError(
                f"{where}: unknown comparator {spec!r}; use one of {', '.join(COMPARATOR_NAMES)}, "
                "{tolerance: 0.01}, {regex: PATTERN} or {function: 'module:name'}"
            )
        return Comparator(spec, label=spec)
    if not isinstance(spec, Mapping) or not spec:
        raise ValueError(f"{where}: a comparator is a name or a mapping, got {spec!r}")
    keys = set(spec)
    if keys <= {"tolerance", "rel_tolerance"}:
        values = {}
        for key in keys:
            value = spec[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{where}: {key} must be a finite number >= 0, got {value!r}")
            values[key] = float(value)
        tolerance, relative = values.get("tolerance", 0.0), values.get("rel_tolerance", 0.0)
        return Comparator("numeric", tolerance=tolerance, rel_tolerance=relative, label="numeric")
    if keys == {"regex"}:
        try:
            return Comparator("regex", pattern=re.compile(str(spec["regex"])), label=f"/{spec['regex']}/")
        except re.error as err:
            raise ValueError(f"{where}: regex {spec['regex']!r} does not compile: {err}") from None
    if keys == {"function"}:
        from assay.importing import import_object

        try:
            function = import_object(str(spec["function"]))
        except ValueError as err:
            raise ValueError(f"{where}: function: {err}") from None
        if not callable(function):
            raise ValueError(f"{where}: function {spec['function']!r} is not callable")
        return Comparator("function", function=function, label=str(spec["function"]))
    raise ValueError(
        f"{where}: a comparator mapping has tolerance/rel_tolerance, regex or function, got keys {sorted(keys)}"
    )


class Comparators:
    """The comparators of the ``compare`` option, looked up by tool and argument path (``"*"``: any tool)."""

    def __init__(self, compare: Mapping[str, Mapping[str, Any]]) -> None:
        self._by: dict[tuple[str, str], Comparator] = {}
        for tool, arguments in compare.items():
            if not isinstance(arguments, Mapping):
                raise ValueError(f"compare.{tool}: map argument names to comparators, got {arguments!r}")
            for path, spec in arguments.items():
                self._by[(tool, path)] = build_comparator(spec, f"compare.{tool}.{path}")

    def get(self, tool: str, path: str) -> Comparator | None:
        """The comparator for argument ``path`` (dotted for nested arguments) of ``tool``, None when none is set."""
        return self._by.get((tool, path)) or self._by.get((ANY_TOOL, path))

    def __bool__(self) -> bool:
        return bool(self._by)


NO_COMPARATORS = Comparators({})


def argument_diffs(
    expected: dict[str, Any],
    actual: dict[str, Any],
    exact: bool,
    prefix: str = "",
    *,
    tool: str = "",
    comparators: Comparators = NO_COMPARATORS,
) -> list[str]:
    """How ``actual`` arguments differ from ``expected`` (subset: only expected keys matter; exact: all keys),
    each argument by its comparator in ``comparators`` (JSON equality when none is set)."""
    diffs = []
    for key, want in expected.items():
        name = f"{prefix}{key}"
        comparator = comparators.get(tool, name)
        if comparator is not None and comparator.kind == "ignore":
            continue
        if key not in actual:
            diffs.append(f"{name} missing")
        elif comparator is None and isinstance(want, dict) and isinstance(actual[key], dict):
            diffs.extend(argument_diffs(want, actual[key], exact, f"{name}.", tool=tool, comparators=comparators))
        else:
            problem = (comparator or EXACT).differs(want, actual[key])
            if problem is not None:
                diffs.append(f"{name} {problem}")
    if exact:
        diffs.extend(
            f"unexpected argument {prefix}{key}"
            for key in actual
            if key not in expected and not _ignored(comparators, tool, f"{prefix}{key}")
        )
    return diffs


def _ignored(comparators: Comparators, tool: str, path: str) -> bool:
    comparator = comparators.get(tool, path)
    return comparator is not None and comparator.kind == "ignore"


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
