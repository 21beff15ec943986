"""The Verdict: what one evaluator concluded about one output."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.reductions import FloatArray

# How far outside [0, 1] a score may be and still be read as in range (then clipped to it): float rounding, never a
# real score. sacrebleu's perfect sentence BLEU is 100.00000000000004, so a metric scaled by /100 gives
# 1.0000000000000004 for exactly the best outputs; a score further out is a bug in the evaluator and stays an error.
SCORE_TOLERANCE = 1e-9


def unit_score(score: float) -> float | None:
    """``score`` as a score in [0, 1]: itself when inside, clipped when within :data:`SCORE_TOLERANCE` of the range
    (float rounding), None when clearly outside or NaN. The one rule every evaluator path applies."""
    if 0.0 <= score <= 1.0:
        return score
    if -SCORE_TOLERANCE <= score < 0.0:
        return 0.0
    if 1.0 < score <= 1.0 + SCORE_TOLERANCE:
        return 1.0
    return None


def clip_unit_scores(scores: FloatArray) -> None:
    """:func:`unit_score` over a batch's scores, in place: those within the tolerance outside [0, 1] are clipped
    (NaN, an error, and scores clearly outside are left for the caller to see)."""
    low, high = scores < 0.0, scores > 1.0  # NaN compares False: errors are untouched
    if low.any() or high.any():
        scores[low & (scores >= -SCORE_TOLERANCE)] = 0.0
        scores[high & (scores <= 1.0 + SCORE_TOLERANCE)] = 1.0


@dataclass(frozen=True, slots=True)
class Verdict:
    """One evaluator's judgement of one output.

    ``score`` is in [0, 1] (one within :data:`SCORE_TOLERANCE` outside it, float rounding, is clipped); ``reason``
    says what differed (None when passed); ``feedback`` says what would make the output pass. An *error* verdict
    (``error`` set, ``score`` NaN) means the evaluator could not judge; it is never a failure and never a zero.
    ``own_scale``: the score is a metric's value on its own scale (any finite number: a length, a BLEU difference),
    averaged and given an interval as it is, never clipped into [0, 1]; ``passed`` is then the metric's own rule.
    """

    score: float
    passed: bool
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    feedback: str | None = None
    error: str | None = None
    own_scale: bool = False

    def __post_init__(self) -> None:
        if self.error is None and self.own_scale:
            score = self.score
            if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
                raise ValueError(f"Verdict.score on its own scale must be a finite number, got {score!r}")
            object.__setattr__(self, "score", float(score))
        elif self.error is None:
            score = self.score
            if not (isinstance(score, int | float) and 0.0 <= score <= 1.0):  # the usual score passes this alone
                clipped = unit_score(score) if isinstance(score, int | float) else None
                if clipped is None:
                    raise ValueError(f"Verdict.score must be a number in [0, 1], got {score!r}")
                object.__setattr__(self, "score", clipped)
        elif not math.isnan(self.score):
            raise ValueError("an error verdict has no score (NaN)")

    @property
    def is_error(self) -> bool:
        """True when the evaluator could not judge the output."""
        return self.error is not None

    @classmethod
    def pass_(cls, score: float = 1.0, details: dict[str, Any] | None = None) -> Verdict:
        """A passing verdict."""
        return cls(float(score), True, None, details or {}, None)

    @classmethod
    def fail(
        cls,
        reason: str,
        *,
        score: float = 0.0,
        feedback: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> Verdict:
        """A failing verdict with the reason it failed and, ideally, feedback on how to pass."""
        return cls(float(score), False, reason, details or {}, feedback)

    @classmethod
    def partial(
        cls,
        score: float,
        reason: str | None,
        threshold: float = 0.5,
        *,
        feedback: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> Verdict:
        """Partial credit: passes when ``score >= threshold``; reason and feedback kept only on failure."""
        score = _clipped(score)
        passed = score >= threshold
        return cls(
            float(score),
            passed,
            None if passed else reason,
            details or {},
            None if passed else feedback,
        )

    @classmethod
    def errored(cls, message: str, details: dict[str, Any] | None = None) -> Verdict:
        """The evaluator could not judge (bad output type, evaluator raised, judge unparseable)."""
        return cls(math.nan, False, None, details or {}, None, message)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict (an error's score is ``None``, since JSON has no NaN); ``own_scale`` only when set."""
        out = {
            "score": None if self.is_error else self.score,
            "passed": self.passed,
            "reason": self.reason,
            "feedback": self.feedback,
            "details": self.details,
            "error": self.error,
        }
        if self.own_scale:
            out["own_scale"] = True
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        """Inverse of :meth:`to_dict`."""
        score = data.get("score")
        return cls(
            math.nan if score is None else float(score),
            bool(data.get("passed", False)),
            data.get("reason"),
            dict(data.get("details") or {}),
            data.get("feedback"),
            data.get("error"),
            bool(data.get("own_scale", False)),
        )


def _clipped(score: float) -> float:
    """``score`` by :func:`unit_score` where it applies (a score clearly outside is left for the Verdict to refuse)."""
    clipped = unit_score(score) if isinstance(score, int | float) else None
    return score if clipped is None else clipped
