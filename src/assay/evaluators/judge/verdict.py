"""How the judgements of ``llm_judge`` become one verdict: every judge kept (errored ones too), ``min_judges``,
position-inconsistent pairwise judgements counted apart, and the judge's suggested fix as the feedback."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from assay.evaluators.judge.client import CallRecord, summarize_calls
from assay.evaluators.judge.options import JudgeOptions
from assay.evaluators.judge.parse import Scale
from assay.evaluators.judge.variants import combine, outcome_of, spread
from assay.verdict import Verdict


@dataclass
class Unit:
    """One judgement by one judge (one call, or the two orders of a pairwise comparison)."""

    judge: int
    sample: int
    calls: list[CallRecord]
    score: float | None = None
    error: str | None = None
    explanation: str = ""
    fix: str = ""
    problem: str = ""
    grade: Any = None
    inconsistent: str | None = None  # pairwise: "first" or "second", the position the judge preferred either way
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def model(self) -> str:
        """The judge model's name as recorded in the calls."""
        return self.calls[0].model if self.calls else "the judge"


def _clip(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _flip(preferred: str | None) -> str:
    if preferred == "first":
        return "won when shown first and lost when shown second"
    return "lost when shown first and won when shown second"


def base_details(options: JudgeOptions, calls: list[CallRecord]) -> dict[str, Any]:
    """The details every llm_judge verdict carries: the calls, their summed usage, mode, scale and threshold."""
    return {
        "judge": summarize_calls(calls),
        "judges": [c.to_dict() for c in calls],
        "mode": options.mode,
        "scale": options.scale if options.mode == "grade" else "win/tie/loss",
        "pass_threshold": options.pass_threshold,
    }


class VerdictBuilder:
    """Combines the units of one output into its verdict."""

    def __init__(self, options: JudgeOptions, scale: Scale, specs: list[Any]) -> None:
        self.options = options
        self.scale = scale
        self.specs = specs

    @property
    def min_judges(self) -> int:
        """How many judges must give a usable judgement (default: all)."""
        return self.options.min_judges or len(self.specs)

    def build(self, units: list[Unit], calls: list[CallRecord], steps: list[list[str] | None]) -> Verdict:
        """The verdict of one output from all its units (errored and inconsistent ones included in the details)."""
        options = self.options
        details = base_details(options, calls)
        if any(steps):
            details["evaluation_steps"] = steps if len(steps) > 1 else steps[0]
        per_judge, scores = self._per_judge(units)
        errored = [u for u in units if u.error is not None]
        inconsistent = [u for u in units if u.inconsistent is not None]
        if errored:
            details["errors"] = len(errored)
        if len(self.specs) > 1 or errored:
            details["per_judge"] = per_judge
        if options.mode == "pairwise":
            details["position"] = self._position(units)
            details["orders"] = [u.extra["orders"] for u in units if "orders" in u.extra]
        answered = [j for j, entry in enumerate(per_judge) if "score" in entry]
        if len(answered) < self.min_judges:
            return Verdict.errored(self._too_few(units, errored, inconsistent, len(answered)), details=details)
        combined = combine(scores, options.pass_threshold, options.combine)
        details["combine"] = combined.details
        details["score"] = combined.score
        if len(self.specs) == 1 and options.samples > 1:
            details["spread"] = per_judge[0]["spread"]
        scored = [u for u in units if u.score is not None]
        if len(scored) == 1:
            details["grade"] = scored[0].grade
            details["explanation"] = scored[0].explanation
            if scored[0].fix:
                details["fix"] = scored[0].fix
        if not combined.passed:
            ranked = sorted(scored, key=lambda u: u.score if u.score is not None else 0.0)
            details["problem"] = next((u.problem for u in ranked if u.problem), "")
        if options.mode == "pairwise":
            outcomes = [u.grade for u in scored]
            details["result"] = outcome_of(combined.score)
            details["outcomes"] = {o: outcomes.count(o) for o in ("win", "tie", "loss")}
            details["outcomes"]["inconsistent"] = len(inconsistent)
        if combined.passed:
            return Verdict(combined.score, True, None, details, None)
        return Verdict(combined.score, False, self._reason(scored, combined.score), details, self._feedback(scored))

    def _per_judge(self, units: list[Unit]) -> tuple[list[dict[str, Any]], list[float]]:
        per_judge: list[dict[str, Any]] = []
        scores: list[float] = []
        for j in range(len(self.specs)):
            mine = [u for u in units if u.judge == j]
            ok = [u.score for u in mine if u.score is not None]
            entry: dict[str, Any] = {"model": mine[0].model if mine and mine[0].calls else str(self.specs[j])}
            if ok:
                entry["score"] = statistics.fmean(ok)
                scores.append(entry["score"])
                if self.options.samples > 1:
                    entry["spread"] = spread(ok)
            errors = [u.error for u in mine if u.error is not None]
            if errors:
                entry["errors"] = errors
            biased = [u.inconsistent for u in mine if u.inconsistent is not None]
            if biased:
                entry["position_inconsistent"] = len(biased)
            entry["status"] = "ok" if ok else "error" if errors else "position-inconsistent" if biased else "none"
            per_judge.append(entry)
        return per_judge, scores

    @staticmethod
    def _position(units: list[Unit]) -> dict[str, Any]:
        """Pairwise judgements read in both orders and how many flipped with the order, in all and per judge."""
        both = [u for u in units if "orders" in u.extra]

        def counts(group: list[Unit]) -> dict[str, int]:
            return {
                "judgements": len(group),
                "inconsistent": sum(u.inconsistent is not None for u in group),
                "prefers_first": sum(u.inconsistent == "first" for u in group),
                "prefers_second": sum(u.inconsistent == "second" for u in group),
            }

        by_judge: dict[str, list[Unit]] = {}
        for unit in both:
            by_judge.setdefault(unit.model, []).append(unit)
        return {**counts(both), "by_judge": {model: counts(group) for model, group in by_judge.items()}}

    def _too_few(self, units: list[Unit], errored: list[Unit], inconsistent: list[Unit], answered: int) -> str:
        problems = [u.error or "" for u in errored]
        problems += [
            f"judge {u.model} was position-inconsistent: it preferred whichever response was shown "
            f"{u.inconsistent} (the output {_flip(u.inconsistent)}), so it expressed no preference between them"
            for u in inconsistent
        ]
        first = problems[0] if problems else "the judge gave no usable reply"
        more = f" (and {len(problems) - 1} more failed judgements)" if len(problems) > 1 else ""
        if len(self.specs) == 1 and self.min_judges == 1:
            return first + more
        return (
            f"{answered} of {len(self.specs)} judges gave a usable judgement, fewer than min_judges "
            f"{self.min_judges}: {first}{more}"
        )

    def _reason(self, scored: list[Unit], score: float) -> str:
        options = self.options
        threshold = options.pass_threshold
        worst = min(scored, key=lambda u: u.score if u.score is not None else 0.0)
        model = worst.model
        why = f": {_clip(worst.explanation)}" if worst.explanation else ""
        if options.mode == "pairwise":
            if len(scored) == 1:
                orders = " and ".join(worst.extra["orders"])
                return f"judge {model} did not prefer the output to the baseline ({orders} over the two orders){why}"
            return f"the judges did not prefer the output to the baseline (score {score:.2f} < {threshold:g}){why}"
        if len(scored) == 1:
            return (
                f"judge {model} graded {worst.grade!r} on the {self.scale.name} scale "
                f"(score {score:.2f} < pass threshold {threshold:g}){why}"
            )
        if len(self.specs) == 1:
            return (
                f"judge {model}'s mean score {score:.2f} over {len(scored)} samples is below the pass threshold "
                f"{threshold:g}{why}"
            )
        return (
            f"the judges' combined score {score:.2f} ({options.combine} of {len(self.specs)} judges, "
            f"{len(scored)} judgements) is below the pass threshold {threshold:g}{why}"
        )

    def _feedback(self, scored: list[Unit]) -> str:
        """The judge's suggested fix (of the worst judgement that has one); the criteria when no judge gave one."""
        ranked = sorted(scored, key=lambda u: u.score if u.score is not None else 0.0)
        for unit in ranked:
            if unit.fix:
                return unit.fix
        return f"Revise the output so that it meets the criteria: {self.options.criteria.strip()}"
