"""Field-by-field comparison of a final state with an expected one: every expected leaf is a field that matches or
not, named by its dotted path (``orders.O2.status``); objects by key, lists by position or by an id-like key."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


class _Marker:
    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


MISSING: Any = _Marker("nothing (missing)")  # the actual state has nothing at the path
UNEXPECTED: Any = _Marker("nothing")  # the expected state names nothing at the path


@dataclass(frozen=True)
class Difference:
    """One place that differs: its dotted path, what was expected there and what was there."""

    path: str
    expected: Any
    actual: Any

    def describe(self, width: int = 120) -> str:
        """``orders.O2.status: expected 'cancelled', got 'pending'`` (values shortened to ``width``)."""
        where = self.path or "(the state)"
        if self.expected is UNEXPECTED:
            return f"{where}: not expected, got {_show(self.actual, width)}"
        return f"{where}: expected {_show(self.expected, width)}, got {_show(self.actual, width)}"

    def to_dict(self) -> dict[str, Any]:
        """The record's form: the path and both values (None where one side has nothing, with a flag)."""
        out: dict[str, Any] = {"path": self.path}
        for side in ("expected", "actual"):
            value = getattr(self, side)
            out[side] = None if isinstance(value, _Marker) else value
            if isinstance(value, _Marker):
                out[f"{side}_missing"] = True
        return out


@dataclass
class Comparison:
    """The expected leaves counted, those that differ, unexpected extras, and the differences to show."""

    total: int = 0
    mismatched: int = 0
    extras: int = 0
    differences: list[Difference] = field(default_factory=list)

    @property
    def matched(self) -> int:
        return self.total - self.mismatched

    @property
    def score(self) -> float:
        """The share of fields that match, unexpected extras counting against it."""
        denominator = self.total + self.extras
        return 1.0 if denominator == 0 else self.matched / denominator


@dataclass(frozen=True)
class Rules:
    """How two states are compared."""

    key_fields: Sequence[str] = ()  # list items that are objects are matched by the first of these they all have
    tolerance: float = 0.0  # numbers match within this absolute difference
    ignore: Sequence[re.Pattern[str]] = ()  # paths left out (see ignore_pattern)
    allow_extra: bool = True  # object keys the expected state does not name are ignored (else each is a difference)


def ignore_pattern(pattern: str) -> re.Pattern[str]:
    """A dotted path pattern: ``*`` within one segment, a ``**`` segment any number of segments."""
    parts = [".*" if segment == "**" else re.escape(segment).replace(r"\*", "[^.]*") for segment in pattern.split(".")]
    return re.compile(r"\.".join(parts) + r"\Z")


def compare(expected: Any, actual: Any, rules: Rules) -> Comparison:
    """Compare ``actual`` with ``expected`` under ``rules``."""
    out = Comparison()
    _walk(expected, actual, "", rules, out)
    return out


def _join(path: str, segment: Any) -> str:
    return f"{path}.{segment}" if path else str(segment)


def _ignored(path: str, rules: Rules) -> bool:
    return bool(path) and any(p.match(path) for p in rules.ignore)


def _walk(expected: Any, actual: Any, path: str, rules: Rules, out: Comparison) -> None:
    if _ignored(path, rules):
        return
    if isinstance(expected, Mapping) and expected:
        if not isinstance(actual, Mapping):
            _group_differs(expected, actual, path, rules, out)
            return
        for key, want in expected.items():
            _walk(want, actual.get(key, MISSING), _join(path, key), rules, out)
        if not rules.allow_extra:
            for key in sorted(actual.keys() - expected.keys(), key=str):
                _extra(actual[key], _join(path, key), rules, out)
    elif isinstance(expected, list) and expected:
        if not isinstance(actual, list):
            _group_differs(expected, actual, path, rules, out)
        else:
            _walk_list(expected, actual, path, rules, out)
    else:
        out.total += 1
        if not _leaf_equal(expected, actual, rules):
            out.mismatched += 1
            out.differences.append(Difference(path, expected, actual))


def _walk_list(expected: list[Any], actual: list[Any], path: str, rules: Rules, out: Comparison) -> None:
    """Items by the list's key field when it has one (``orders.O2``), else by position (``items.0``); the actual
    list's other items are differences (a list's length always counts)."""
    key = _list_key(expected, rules)
    if key is None:
        for i, want in enumerate(expected):
            _walk(want, actual[i] if i < len(actual) else MISSING, _join(path, i), rules, out)
        for i in range(len(expected), len(actual)):
            _extra(actual[i], _join(path, i), rules, out)
        return
    by_key = {repr(item[key]): item for item in actual if isinstance(item, Mapping) and key in item}
    for want in expected:
        _walk(want, by_key.get(repr(want[key]), MISSING), _join(path, want[key]), rules, out)
    wanted = {repr(want[key]) for want in expected}
    for i, item in enumerate(actual):
        ident = item.get(key) if isinstance(item, Mapping) else None
        if ident is None or repr(ident) not in wanted:
            _extra(item, _join(path, i if ident is None else ident), rules, out)


def _list_key(expected: list[Any], rules: Rules) -> str | None:
    """The first key field every expected item has, with distinct values; None to match by position."""
    for key in rules.key_fields:
        if all(isinstance(item, Mapping) and key in item for item in expected):
            values = [repr(item[key]) for item in expected]
            if len(set(values)) == len(values):
                return key
    return None


def _leaves(expected: Any, path: str, rules: Rules) -> int:
    """The expected leaves under ``path`` that are compared (not ignored)."""
    if _ignored(path, rules):
        return 0
    if isinstance(expected, Mapping) and expected:
        return sum(_leaves(v, _join(path, k), rules) for k, v in expected.items())
    if isinstance(expected, list) and expected:
        key = _list_key(expected, rules)
        return sum(_leaves(v, _join(path, v[key] if key else i), rules) for i, v in enumerate(expected))
    return 1


def _group_differs(expected: Any, actual: Any, path: str, rules: Rules, out: Comparison) -> None:
    """An expected object or list where the state has something else: each of its leaves differs, shown once."""
    count = _leaves(expected, path, rules)
    out.total += count
    out.mismatched += count
    if count:
        out.differences.append(Difference(path, expected, actual))


def _extra(actual: Any, path: str, rules: Rules, out: Comparison) -> None:
    if not _ignored(path, rules):
        out.extras += 1
        out.differences.append(Difference(path, UNEXPECTED, actual))


def _leaf_equal(expected: Any, actual: Any, rules: Rules) -> bool:
    if actual is MISSING:
        return False
    if isinstance(expected, Mapping):  # {}: an object is there (and, without allow_extra, an empty one)
        return isinstance(actual, Mapping) and (rules.allow_extra or not actual)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return abs(expected - actual) <= rules.tolerance
    return bool(expected == actual)  # strings, null, and [] (the state's list is empty)


def _show(value: Any, width: int) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"
