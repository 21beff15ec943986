"""The named checks of ``tool_usage``: each configured expectation judged on its own, with a detail and a fix."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from assay.errors import EvaluationInputError
from assay.evaluators.agent.arguments import Comparators, argument_diffs
from assay.evaluators.agent.calls import Call
from assay.evaluators.agent.matching import MatchResult, differ_for, match_calls
from assay.evaluators.agent.options import ToolUsageOptions, checked_calls
from assay.evaluators.jsonparse import show


@dataclass(frozen=True, slots=True)
class Check:
    """One expectation judged: its name (``kind`` or ``kind:subject``), outcome, detail, fix and partial credit."""

    name: str
    kind: str
    passed: bool
    detail: str
    fix: str | None = None
    score: float | None = None  # partial credit in [0, 1] (None: 1 when passed, else 0)
    fixes: tuple[str, ...] = ()  # several fixes (a match names each call to change)
    data: dict[str, Any] | None = None  # what a match found (pairs, missing, extra, …), for the verdict's details

    @property
    def credit(self) -> float:
        """The share of this check's weight earned."""
        if self.score is not None:
            return self.score
        return 1.0 if self.passed else 0.0


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
    comparators = opts.comparators()
    checks: list[Check] = []
    if opts.match is not None:
        checks.append(_match_check(opts, calls, comparators, evaluator))
    for tool in dict.fromkeys(opts.required):
        checks.append(_required_check(tool, calls, names))
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
    exact = opts.args_match == "exact"
    for tool, spec in opts.args.items():
        checks.append(_args_check(tool, spec if isinstance(spec, list) else [spec], calls, exact, comparators))
    if opts.order != "any":
        checks.append(_order_check(opts, names, evaluator))
    if opts.penalize_extra:
        allowed = set(opts.required) | set(opts.expected_sequence or []) | set(opts.args)
        allowed |= {c.name for c in checked_calls(opts.expected_calls or [], evaluator)}
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


def _required_check(tool: str, calls: list[Call], names: list[str]) -> Check:
    """``required:tool``: passed when a call of the tool succeeded. A call that failed (the tool raised, timed out,
    or does not exist in the run) is not a use of the tool, however right the model was to make it."""
    made = [c for c in calls if c.name == tool]
    failed = [c for c in made if c.error]
    fix = f"call the tool {tool!r}"
    if not made:
        seen = f"calls made: {_quoted(names)}" if names else "no tool calls were made"
        return Check(f"required:{tool}", "required", False, f"never called ({seen})", fix)
    if len(failed) == len(made):
        first = show(failed[0].error, 120)
        detail = f"called {_plural(len(made), 'time')}, every call failed (call {failed[0].index}: {first})"
        return Check(f"required:{tool}", "required", False, detail, f"call the tool {tool!r} so that it succeeds")
    detail = f"called {_plural(len(made), 'time')}" + (f", {len(failed)} failed" if failed else "")
    return Check(f"required:{tool}", "required", True, detail, fix)


def _match_check(opts: ToolUsageOptions, calls: list[Call], comparators: Comparators, evaluator: str) -> Check:
    if opts.expected_calls is None:
        raise EvaluationInputError(
            f"{evaluator}: option 'match' is {opts.match!r} but no expected calls are given: set expected_calls, "
            "or give them per sample from a row's field (expected: doc.<field>)"
        )
    assert opts.match is not None
    expected = checked_calls(opts.expected_calls, evaluator, "expected_calls")
    result = match_calls(opts.match, expected, calls, differ_for(opts.args_match == "exact", comparators))
    return Check(
        f"match:{opts.match}",
        "match",
        result.passed,
        _match_detail(result, len(expected), len(calls)),
        score=result.score,
        fixes=tuple(dict.fromkeys(result.fixes)),
        data=result.to_dict(),
    )


def _match_detail(result: MatchResult, n_expected: int, n_calls: int) -> str:
    paired = len(result.pairs)
    head = f"{paired} of {_plural(n_expected, 'expected call')} matched by {_plural(n_calls, 'call')} made"
    problems = result.problems()
    return head + (": " + "; ".join(problems) if problems else "")


def _args_check(
    tool: str, wanted: list[dict[str, Any]], calls: list[Call], exact: bool, comparators: Comparators
) -> Check:
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
                if c.index not in used
                and c.arguments is not None
                and not argument_diffs(want, c.arguments, exact, tool=tool, comparators=comparators)
            ),
            None,
        )
        if hit is None:
            return Check(
                name,
                "args",
                False,
                _closest(tool, want, mine, used, exact, comparators),
                f"call {tool!r} with arguments {show(want, 80)}",
            )
        used.add(hit.index)
        matched.append(hit.index)
    return Check(name, "args", True, f"matched by call {', '.join(map(str, matched))}")


def _closest(
    tool: str, want: dict[str, Any], calls: list[Call], used: set[int], exact: bool, comparators: Comparators
) -> str:
    """Why no call matched ``want``, told through the closest unused call."""
    best: tuple[int, str] | None = None
    for call in calls:
        if call.index in used:
            continue
        if call.arguments is None:
            candidate = (10**9, f"call {call.index}: {call.problem}")
        else:
            diffs = argument_diffs(want, call.arguments, exact, tool=tool, comparators=comparators)
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
