"""The ``tool_usage`` evaluator: did an agent call the right tools, with the right arguments, in the right order?

Each configured expectation becomes one named check (``required:search``, ``args:search``, ``order``,
``match:strict``, …); the score is the weighted mean of the checks' credit (a ``match`` earns partial credit, the
others all or nothing) and the verdict passes when every check passes (or the score reaches ``threshold``).

Expectations come from the options (``expected_calls`` is a list of calls, as below), and per sample from the
metric's expected value (``expected: doc.<field>`` names the row's field; by default it is the task's target)
when that value is a tool-call expectation: a dict with option keys overriding the options, or expected tool
calls — a list ``[{name, arguments?}, …]`` (``[]``: no calls), a Response, or a dict with ``"tool_calls"`` (whose
option keys also apply) — meaning, without ``match``, "these tools (required), with these arguments, in exactly
this order", and with ``match`` the sequence that mode judges. Any other value (a task's answer such as 'Paris', a
list of answer strings, a number) is not about tools: the sample is judged by the options alone, and its details
say the value was not used (:func:`expectation_of`).
"""

from __future__ import annotations

from typing import Any

from assay.errors import ConfigError, EvaluationInputError
from assay.evaluators.agent.calls import read_calls
from assay.evaluators.agent.checks import run_checks
from assay.evaluators.agent.options import ToolUsageOptions, expectation_of, options_from_expected
from assay.evaluators.base import Evaluator
from assay.evaluators.registry import register
from assay.verdict import Verdict

_MAX_FEEDBACK = 10


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@register("tool_usage")
class ToolUsage(Evaluator):
    """Judges an agent's tool calls (the executed ones, for an agent loop): required/forbidden tools, call
    counts, arguments, order, extra calls, what the final text says, and ``expected_calls`` under a ``match`` mode
    (strict, unordered, subset, superset, in_order) with per-argument comparators (``compare``). ``order`` uses
    ``expected_sequence``, or the ``required`` list when not given; ``penalize_extra`` treats tools outside
    required, expected_sequence, args and expected_calls as unexpected. The score is the weighted mean of the
    checks' credit (``weights`` by kind or by ``kind:subject``; when every weight is 0, the score is 1 if all checks
    pass, else 0)."""

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
        calls, text = read_calls(actual, self.name, keep_submit=opts.count_submit)
        checks = run_checks(opts, calls, text, self.name)
        if not checks:
            not_used = f"; the expected value ({expectation.ignored}) is not tool calls" if expectation.ignored else ""
            raise EvaluationInputError(
                f"{self.name} has nothing to check{not_used}: set required, forbidden, min_calls, max_calls, args, "
                "order, expected_calls, match, penalize_extra or output_contains, or give the calls per sample from "
                "a row's field (expected: doc.<field>)"
            )
        weights = [opts.weights.get(c.name, opts.weights.get(c.kind, 1.0)) for c in checks]
        total = sum(weights)
        all_passed = all(c.passed for c in checks)
        if total > 0:
            score = sum(w * c.credit for w, c in zip(weights, checks, strict=True)) / total
        else:
            score = 1.0 if all_passed else 0.0
        score = min(1.0, max(0.0, score))
        details: dict[str, Any] = {
            "checks": [
                {"name": c.name, "passed": c.passed, "detail": c.detail, "weight": w}
                | ({"score": c.score} if c.score is not None else {})
                for c, w in zip(checks, weights, strict=True)
            ],
            "calls": [c.name for c in calls],
            "n_calls": len(calls),
        }
        matched = next((c.data for c in checks if c.data is not None), None)
        if matched is not None:
            details["match"] = matched
        errored = [c.index for c in calls if c.error]
        if errored:
            details["tool_errors"] = errored
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
        fixes = [fix for c in failed for fix in (c.fixes or ((c.fix,) if c.fix else ()))][:_MAX_FEEDBACK]
        feedback = "Fix the tool use: " + "; ".join(fixes) + "." if fixes else None
        return Verdict(score, False, reason, details, feedback)
