"""Text evaluators: exact_match, fuzzy_match, contains, regex, token_f1."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from assay.evaluators.base import BatchResult, Evaluator, Options, _expecteds, as_text, expected_texts
from assay.evaluators.normalize import NormalizeOptions, Normalizer
from assay.evaluators.registry import register
from assay.verdict import Verdict


def clip(text: str, limit: int = 120) -> str:
    """A repr of ``text`` short enough for a reason or feedback line."""
    if len(text) <= limit:
        return repr(text)
    return repr(text[: limit - 1] + "…")


class ExactMatchOptions(Options, NormalizeOptions):
    """Options of exact_match: normalisation only."""


@register("exact_match")
class ExactMatch(Evaluator):
    """Output equals an acceptable answer after normalisation (lm-eval / HF `evaluate` semantics)."""

    Options = ExactMatchOptions
    options: ExactMatchOptions

    def setup(self) -> None:
        self.normalize = Normalizer.from_options(self.options)

    def check(self, actual: Any, expected: Any) -> Verdict:
        text = as_text(actual, self.name)
        answers = expected_texts(expected)
        norm = self.normalize(text)
        norm_answers = [self.normalize(a) for a in answers]
        if norm in norm_answers:
            return Verdict.pass_(details={"matched": answers[norm_answers.index(norm)]})
        return self._failure(text, norm, answers, norm_answers)

    def _failure(self, text: str, norm: str, answers: list[str], norm_answers: list[str]) -> Verdict:
        details = {"normalized_output": norm, "normalized_expected": norm_answers}
        if len(answers) == 1:
            reason = f"output {clip(text)} does not equal expected {clip(answers[0])}"
            if norm != text or norm_answers[0] != answers[0]:
                reason += f" (after normalisation: {clip(norm)} vs {clip(norm_answers[0])})"
        else:
            shown = ", ".join(clip(a, 40) for a in answers[:5])
            reason = f"output {clip(text)} equals none of {len(answers)} acceptable answers ({shown})"
        inside = [a for a, n in zip(answers, norm_answers, strict=True) if n and n in norm]
        if inside:
            feedback = (
                f"The answer {clip(inside[0])} is in the output but surrounded by other text; "
                f"answer with {clip(inside[0])} only, nothing else."
            )
        elif not text.strip():
            feedback = f"The output is empty; answer with {clip(answers[0])}."
        else:
            feedback = f"Answer with exactly {clip(answers[0])}; the output was {clip(text)}."
        return Verdict.fail(reason, feedback=feedback, details=details)

    def evaluate_batch(self, actuals: Sequence[Any], expecteds: Sequence[Any] | None = None) -> BatchResult:
        """Vectorised: one C-level pass of each normalisation step over all strings, then equality."""
        exp = _expecteds(actuals, expecteds)
        if not all(type(a) is str for a in actuals) or not all(type(e) is str for e in exp):
            return super().evaluate_batch(actuals, exp)  # lists of answers or non-text: the general path
        norm_a = self.normalize.many(actuals)
        norm_e = self.normalize.many(exp)
        n = len(norm_a)
        passed = np.fromiter(map(operator.eq, norm_a, norm_e), dtype=np.bool_, count=n)
        return BatchResult.lazy(self, passed.astype(np.float64), passed, actuals, exp)
