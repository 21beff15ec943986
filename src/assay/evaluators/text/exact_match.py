"""exact_match: the output equals an acceptable answer after lm-eval / HF `evaluate` normalisation."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from assay.evaluators.base import BatchResult, Evaluator, Options, as_text
from assay.evaluators.normalize import NormalizeOptions, Normalizer
from assay.evaluators.registry import register
from assay.evaluators.text import common
from assay.evaluators.text.common import chunked_batch, clip, compared_answer, cut, references
from assay.verdict import Verdict

if TYPE_CHECKING:
    from assay.evaluators.text.common import Columns
    from assay.reductions import BoolArray, FloatArray


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
        answers = references(expected, self.name)
        norm = self.normalize(text)
        norm_answers = [self.normalize(a) for a in answers]
        if norm in norm_answers:
            return Verdict.pass_(details={"matched": cut(answers[norm_answers.index(norm)])})
        return self._failure(text, norm, answers, norm_answers)

    def _failure(self, text: str, norm: str, answers: list[str], norm_answers: list[str]) -> Verdict:
        reason, feedback, details = failure_parts(text, norm, answers, norm_answers)
        return Verdict.fail(reason, feedback=feedback, details=details)

    def evaluate_batch(self, actuals: Sequence[Any], expecteds: Sequence[Any] | None = None) -> BatchResult:
        """Vectorised: one C-level pass of each normalisation step over a chunk of texts, then equal keys.

        Chunks holding lists of answers or non-text outputs are judged pair by pair.
        """
        return chunked_batch(self, actuals, expecteds, self._vector, self._fast_dicts)

    def _vector(self, actuals: Sequence[Any], expecteds: Sequence[Any]) -> tuple[FloatArray, BoolArray] | None:
        import numpy as np

        keys_a = self.normalize.batch_keys(actuals)
        keys_e = None if keys_a is None else self.normalize.batch_keys(expecteds)
        if keys_a is None or keys_e is None:
            return None
        passed = np.frombuffer(bytes(map(operator.eq, keys_a, keys_e)), dtype=np.bool_)
        return passed.astype(np.float64), passed

    def _fast_dicts(
        self, actuals: Sequence[Any], expecteds: Sequence[Any], scores: FloatArray, passed: BoolArray, columns: Columns
    ) -> Callable[[int], dict[str, Any]]:
        """The JSON form of a vectorised pair's verdict, as :meth:`check` gives it: a passing pair's is constant
        but for the (one) answer it matched; a failing pair's reason and feedback come from its normalised texts,
        computed here rather than in the scoring pass (only the dicts need them), one batch pass per chunk."""
        import numpy as np

        ok = passed.tolist()
        chunk = common.BATCH_CHUNK  # the batch was scored in chunks of this size, each all-str when vectorised
        failed = ~passed  # a copy: what the dicts say does not follow later changes to the batch's arrays
        # the dicts of the last chunk's failing pairs not handed out yet, built together when its first one is asked
        # for (one normalisation pass per side); each is handed out once, so no two callers share a dict, and the
        # whole is replaced at once, so concurrent readers stay safe
        pending: list[dict[int, dict[str, Any]]] = [{}]

        def build(i: int) -> dict[str, Any]:
            if ok[i]:
                details = {"matched": cut(expecteds[i])}
                return {
                    "score": 1.0,
                    "passed": True,
                    "reason": None,
                    "feedback": None,
                    "details": details,
                    "error": None,
                }
            got = pending[0].pop(i, None)
            if got is None:
                start = i - i % chunk
                failing = (np.flatnonzero(failed[start : start + chunk]) + start).tolist()
                texts, answers = [actuals[j] for j in failing], [expecteds[j] for j in failing]
                norm_a, norm_e = self.normalize.many(texts), self.normalize.many(answers)
                dicts = dict(zip(failing, map(_failure_dict, texts, norm_a, answers, norm_e), strict=True))
                got = dicts.pop(i)
                pending[0] = dicts
            return got

        return build


def _failure_dict(text: str, norm: str, answer: str, norm_answer: str) -> dict[str, Any]:
    """The JSON form of a failing pair's verdict (one text answer)."""
    reason, feedback, details = failure_parts(text, norm, [answer], [norm_answer])
    return {"score": 0.0, "passed": False, "reason": reason, "feedback": feedback, "details": details, "error": None}


def failure_parts(text: str, norm: str, answers: list[str], norm_answers: list[str]) -> tuple[str, str, dict[str, Any]]:
    """(reason, feedback, details) of a failing pair, from the output and answers with their normalised forms; an
    answer is quoted as it was compared (:func:`compared_answer`), not as the raw target."""
    details = {"normalized_output": cut(norm), "normalized_expected": [cut(a) for a in norm_answers]}
    inside = [compared_answer(a, n) for a, n in zip(answers, norm_answers, strict=True) if n and n in norm]
    shown = clip(text)
    if inside:
        # a distinct reason, so that "right answer, wrong form" is its own theme in `assay feedback`
        answer = clip(inside[0])
        reason = f"output {shown} contains the expected answer {answer} but also other text"
        if norm != text:
            reason += f" (after normalisation: {clip(norm)})"
        feedback = (
            f"The answer {answer} is in the output but surrounded by other text; "
            f"answer with {answer} only, nothing else."
        )
        return reason, feedback, details
    quoted = [compared_answer(a, n) for a, n in zip(answers[:5], norm_answers[:5], strict=False)]
    first = clip(quoted[0])
    if len(answers) == 1:
        reason = f"output {shown} does not equal expected {first}"
        if norm != text or norm_answers[0] != quoted[0]:
            reason += f" (after normalisation: {clip(norm)} vs {clip(norm_answers[0])})"
    else:
        listed = ", ".join(clip(a, 40) for a in quoted)
        reason = f"output {shown} equals none of {len(answers)} acceptable answers ({listed})"
    if not text.strip():
        feedback = f"The output is empty; answer with {first}."
    else:
        feedback = f"Answer with exactly {first}; the output was {shown}."
    return reason, feedback, details
