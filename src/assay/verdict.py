"""The Verdict: what one evaluator concluded about one output."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Verdict:
    """One evaluator's judgement of one output.

    ``score`` is in [0, 1]; ``reason`` says what differed (None when passed); ``feedback`` says what
    would make the output pass. An *error* verdict (``error`` set, ``score`` NaN) means the evaluator
    could not judge; it is never a failure and never silently a zero.
    """

    score: float
    passed: bool
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    feedback: str | None = None
    error: str | None = None

    def __post_init__(self) -> None:
        if self.error is None:
            if not isinstance(self.score, int | float) or not (0.0 <= self.score <= 1.0):
                raise ValueError(f"Verdict.score must be a number in [0, 1], got {self.score!r}")
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
        """A JSON-safe dict (an error's score is ``None``, since JSON has no NaN)."""
        return {
            "score": None if self.is_error else self.score,
            "passed": self.passed,
            "reason": self.reason,
            "feedback": self.feedback,
            "details": self.details,
            "error": self.error,
        }

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
        )
