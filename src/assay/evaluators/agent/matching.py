"""Matching executed calls against expected calls under a named mode, with partial credit.

- ``strict``: the same calls in the same order, nothing else (score: longest common in-order run / the longer list)
- ``unordered``: the same calls in any order, nothing else (score: calls paired / the longer list)
- ``subset``: every call made was expected; expected calls may be missing (score: calls paired / calls made)
- ``superset``: every expected call was made; other calls are allowed (score: calls paired / calls expected)
- ``in_order``: the expected calls were made in this order; other calls may come between (score: in-order run /
  calls expected)

A call matches an expected one when the names are equal and the arguments compare equal (``args_match``, the
``compare`` comparators). What is left over is told: an expected call not made (*missing*), a call not expected
(*extra*), one made at the wrong place (*out of order*, ordered modes), or one whose arguments differ.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.evaluators.agent.arguments import Comparators, argument_diffs
from assay.evaluators.agent.calls import Call
from assay.evaluators.agent.options import ExpectedCall
from assay.evaluators.jsonparse import show

ORDERED = ("strict", "in_order")


@dataclass
class MatchResult:
    """The outcome of one match: score, passed, the pairs found and what went wrong, each as a sentence."""

    mode: str
    score: float
    passed: bool
    pairs: list[tuple[int, int]]  # (expected index, call index)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    out_of_order: list[str] = field(default_factory=list)
    arguments: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """Every problem, in the order a reader fixes them."""
        return [*self.arguments, *self.missing, *self.out_of_order, *self.extra]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form kept in the verdict's details."""
        return {
            "mode": self.mode,
            "score": self.score,
            "pairs": [list(p) for p in self.pairs],
            "missing": self.missing,
            "extra": self.extra,
            "out_of_order": self.out_of_order,
            "arguments": self.arguments,
        }


def describe(name: str, arguments: dict[str, Any] | None) -> str:
    """A call as ``name(a=1, b='x')`` (``name(…)`` when any arguments will do)."""
    if arguments is None:
        return f"{name}(…)"
    inner = ", ".join(f"{k}={show(v, 30)}" for k, v in arguments.items())
    return f"{name}({inner})"


Differ = Callable[[ExpectedCall, Call], list[str]]


def differ_for(exact: bool, comparators: Comparators) -> Differ:
    """What differs between an expected call and a call ([] when they match)."""

    def differ(want: ExpectedCall, call: Call) -> list[str]:
        if want.name != call.name:
            return [f"is {call.name!r}, not {want.name!r}"]
        if want.arguments is None:
            return []
        if call.arguments is None:
            return [call.problem or "arguments could not be read"]
        return argument_diffs(want.arguments, call.arguments, exact, tool=want.name, comparators=comparators)

    return differ


def _lcs(ok: list[list[bool]]) -> list[tuple[int, int]]:
    """The longest in-order pairing of expected (rows) with calls (columns) where ``ok``; earliest pairs first."""
    n, m = len(ok), len(ok[0]) if ok else 0
    best = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            best[i][j] = best[i + 1][j + 1] + 1 if ok[i][j] else max(best[i + 1][j], best[i][j + 1])
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if ok[i][j] and best[i][j] == best[i + 1][j + 1] + 1:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif best[i][j + 1] >= best[i + 1][j]:  # on a tie skip the call: the expected order is the reference
            j += 1
        else:
            i += 1
    return pairs


def _pairing(ok: list[list[bool]], rows: Sequence[int], cols: Sequence[int]) -> list[tuple[int, int]]:
    """A largest pairing of ``rows`` with ``cols`` where ``ok`` (augmenting paths: a call is used at most once)."""
    owner: dict[int, int] = {}

    def place(r: int, seen: set[int]) -> bool:
        for c in cols:
            if ok[r][c] and c not in seen:
                seen.add(c)
                if c not in owner or place(owner[c], seen):
                    owner[c] = r
                    return True
        return False

    for r in rows:
        place(r, set())
    return sorted((r, c) for c, r in owner.items())


def match_calls(mode: str, expected: list[ExpectedCall], calls: list[Call], differ: Differ) -> MatchResult:
    """Judge ``calls`` against ``expected`` under ``mode``."""
    ok = [[not differ(e, c) for c in calls] for e in expected]
    n_exp, n_calls = len(expected), len(calls)
    pairs = _lcs(ok) if mode in ORDERED else _pairing(ok, range(n_exp), range(n_calls))
    matched = len(pairs)
    denominator = {
        "strict": max(n_exp, n_calls),
        "unordered": max(n_exp, n_calls),
        "subset": n_calls,
        "superset": n_exp,
        "in_order": n_exp,
    }[mode]
    score = matched / denominator if denominator else 1.0
    result = MatchResult(mode, score, False, pairs)
    left_exp = [i for i in range(n_exp) if i not in {p[0] for p in pairs}]
    left_calls = [j for j in range(n_calls) if j not in {p[1] for p in pairs}]
    if mode in ORDERED:  # made, but not where the order needs it
        for i, j in _pairing(ok, left_exp, left_calls):
            where = _where(pairs, i, calls)
            result.out_of_order.append(
                f"call {j} {describe(calls[j].name, calls[j].arguments)} is out of order: expected call {i} "
                f"should come {where}"
            )
            result.fixes.append(f"call {expected[i].name!r} {where}")
            left_exp.remove(i)
            left_calls.remove(j)
    # an expected call not made, told through a call of the same tool left over: its arguments differed
    for i in list(left_exp):
        same = [j for j in left_calls if calls[j].name == expected[i].name]
        if not same:
            continue
        j = min(same, key=lambda k: len(differ(expected[i], calls[k])))
        diffs = "; ".join(differ(expected[i], calls[j]))
        result.arguments.append(f"call {j} {expected[i].name!r}: {diffs}")
        result.fixes.append(f"call {describe(expected[i].name, expected[i].arguments)}")
        left_exp.remove(i)
        left_calls.remove(j)
    report_missing = mode != "subset"
    report_extra = mode in ("strict", "unordered", "subset")
    for i in left_exp:
        if report_missing:
            want = expected[i]
            result.missing.append(f"expected call {i} {describe(want.name, want.arguments)} was not made")
            result.fixes.append(f"call {describe(want.name, want.arguments)}")
    for j in left_calls:
        if report_extra:
            result.extra.append(f"call {j} {describe(calls[j].name, calls[j].arguments)} was not expected")
            result.fixes.append(f"do not call {describe(calls[j].name, calls[j].arguments)}")
    result.passed = matched == denominator  # strict, unordered: the longer list, so both lengths are equal
    return result


def _where(pairs: list[tuple[int, int]], i: int, calls: list[Call]) -> str:
    """Where expected call ``i`` belongs among the calls matched in order: after the nearest one before it, else
    before the nearest one after it."""
    before = [p for p in pairs if p[0] < i]
    if before:
        return f"after call {before[-1][1]} ({calls[before[-1][1]].name!r})"
    after = [p for p in pairs if p[0] > i]
    if after:
        return f"before call {after[0][1]} ({calls[after[0][1]].name!r})"
    return "first"
