"""fuzzy_match: rapidfuzz similarity of the output to the closest acceptable answer, against a threshold."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator

from assay.evaluators.base import BatchResult, Evaluator, Options, as_text
from assay.evaluators.normalize import NormalizeOptions, Normalizer
from assay.evaluators.registry import register
from assay.evaluators.text.common import chunked_batch, clip, compared_answer, cut, listing, references
from assay.verdict import Verdict

if TYPE_CHECKING:
    from assay.reductions import BoolArray, FloatArray

FuzzyAlgorithm = Literal["ratio", "partial_ratio", "token_sort_ratio", "token_set_ratio", "levenshtein", "jaro_winkler"]

# Algorithms by which identical strings can score below 1 (token_set_ratio gives 0 for blank strings);
# the others give identical strings exactly 1, so the batch skips the equality pass for them.
_IDENTICAL_BELOW_ONE = frozenset({"token_set_ratio"})

# Word differences (feedback) are skipped above this many characters, to keep a failure cheap on huge outputs.
_DIFFERENCE_LIMIT = 10_000


class FuzzyMatchOptions(Options, NormalizeOptions):
    """Options of fuzzy_match: the similarity algorithm, the pass threshold and normalisation (as exact_match).

    - ``algorithm``: rapidfuzz's ``ratio`` (Indel similarity, default), ``partial_ratio`` (the best-matching
      substring of the longer text, for an answer inside a longer output), ``token_sort_ratio`` (word order
      ignored), ``token_set_ratio`` (word sets, so repeated or extra words cost little), ``levenshtein``
      (normalised Levenshtein similarity) or ``jaro_winkler`` (favours a shared beginning; short strings, names).
    - ``threshold``: the similarity (0–1, after normalisation, against the closest answer) at or above which a
      sample passes; raise it to demand near-exact text.
    - ``workers``: threads rapidfuzz scores a batch with (``-1``: one per core; default 1); the scores are the same,
      only batch scoring of large runs gets faster.
    """

    algorithm: FuzzyAlgorithm = "ratio"
    threshold: float = Field(0.8, ge=0.0, le=1.0)
    workers: int = 1

    @field_validator("workers")
    @classmethod
    def _valid_workers(cls, value: int) -> int:
        if value == 0 or value < -1:
            raise ValueError("give a number of threads (1 or more), or -1 for one per core")
        return value


def _fuzzy_scorer(algorithm: str) -> tuple[Callable[..., float], float]:
    """The rapidfuzz scorer for ``algorithm`` and the value it gives for identical strings (its scale)."""
    from rapidfuzz import fuzz
    from rapidfuzz.distance import JaroWinkler, Levenshtein

    scorers: dict[str, tuple[Callable[..., float], float]] = {
        "ratio": (fuzz.ratio, 100.0),
        "partial_ratio": (fuzz.partial_ratio, 100.0),
        "token_sort_ratio": (fuzz.token_sort_ratio, 100.0),
        "token_set_ratio": (fuzz.token_set_ratio, 100.0),
        "levenshtein": (Levenshtein.normalized_similarity, 1.0),
        "jaro_winkler": (JaroWinkler.normalized_similarity, 1.0),
    }
    return scorers[algorithm]


def describe_differences(output: str, target: str, limit: int = 3) -> list[str]:
    """What the output says differently from the target, word by word, as phrases for feedback.

    Runs of differing words become "says 'X' where the answer has 'Y'" (or "says 'X' instead" when no word is
    shared), words only in the output "adds 'X' and 'Y'", words only in the target "leaves out 'Z'".
    """
    from rapidfuzz.distance import Levenshtein

    said_words, target_words = output.split(), target.split()
    regions: list[tuple[int, int, int, int]] = []  # (output start, end, target start, end) of each differing run
    for op in Levenshtein.opcodes(said_words, target_words):
        if op.tag == "equal":
            continue
        if regions and regions[-1][1] == op.src_start and regions[-1][3] == op.dest_start:
            start, _, dest_start, _ = regions.pop()  # adjacent edits read as one difference
            regions.append((start, op.src_end, dest_start, op.dest_end))
        else:
            regions.append((op.src_start, op.src_end, op.dest_start, op.dest_end))
    replaced: list[str] = []
    added: list[str] = []
    left_out: list[str] = []
    for src_start, src_end, dest_start, dest_end in regions:
        said = " ".join(said_words[src_start:src_end])
        wanted = " ".join(target_words[dest_start:dest_end])
        if said and wanted:
            whole = src_end - src_start == len(said_words) and dest_end - dest_start == len(target_words)
            replaced.append(
                f"says {clip(said, 60)} instead"
                if whole
                else f"says {clip(said, 40)} where the answer has {clip(wanted, 40)}"
            )
        elif said:
            added.append(clip(said, 40))
        else:
            left_out.append(clip(wanted, 40))
    if len(replaced) > limit:
        replaced = [*replaced[:limit], f"differs in {len(replaced) - limit} more place(s)"]
    phrases = replaced
    if added:
        phrases.append(f"adds {listing(added, limit=limit)}")
    if left_out:
        phrases.append(f"leaves out {listing(left_out, limit=limit)}")
    return phrases


@register("fuzzy_match")
class FuzzyMatch(Evaluator):
    """Similarity in [0, 1] (rapidfuzz) of the output to the closest acceptable answer; passes at ``threshold``.

    The score is the similarity whether or not it passes. Identical strings (after normalisation) score 1.
    """

    Options = FuzzyMatchOptions
    options: FuzzyMatchOptions

    def setup(self) -> None:
        self.normalize = Normalizer.from_options(self.options)
        self._scorer, self._scale = _fuzzy_scorer(self.options.algorithm)

    def similarity(self, a: str, b: str) -> float:
        """Similarity of two already-normalised strings, in [0, 1]."""
        if a == b:
            return 1.0
        return min(1.0, max(0.0, self._scorer(a, b) / self._scale))

    def check(self, actual: Any, expected: Any) -> Verdict:
        text = as_text(actual, self.name)
        answers = references(expected, self.name)
        norm = self.normalize(text)
        norm_answers = [self.normalize(a) for a in answers]
        sims = [self.similarity(norm, n) for n in norm_answers]
        best = max(range(len(sims)), key=sims.__getitem__)
        score, threshold = sims[best], self.options.threshold
        details: dict[str, Any] = {
            "similarity": score,
            "threshold": threshold,
            "algorithm": self.options.algorithm,
            "matched": cut(answers[best]),
        }
        if len(sims) > 1:
            details["similarities"] = sims
        if score >= threshold:
            return Verdict.partial(score, None, threshold, details=details)
        details["normalized_output"] = cut(norm)
        details["normalized_expected"] = cut(norm_answers[best])
        reason = (
            f"{self.options.algorithm} similarity {score:.3f} of output {clip(text)} to "
            f"{'the closest answer ' if len(answers) > 1 else 'expected '}"
            f"{clip(compared_answer(answers[best], norm_answers[best]))} is below the threshold {threshold:g}"
        )
        return Verdict.partial(
            score,
            reason,
            threshold,
            feedback=self._feedback(text, norm, answers[best], norm_answers[best]),
            details=details,
        )

    def _feedback(self, text: str, norm: str, answer: str, norm_answer: str) -> str:
        """What would pass, quoting the answer as it was compared (:func:`compared_answer`)."""
        shown = compared_answer(answer, norm_answer)
        normalised = " (compared after normalisation)" if norm != text or norm_answer != shown else ""
        answer = shown
        if not text.strip():
            return f"The output is empty; answer with {clip(answer)}."
        if len(norm) + len(norm_answer) > _DIFFERENCE_LIMIT:
            return f"Answer with {clip(answer)}; the output ({len(text)} characters) is far from it."
        phrases = describe_differences(norm, norm_answer)
        if not phrases:
            return f"Answer with {clip(answer)} exactly; the output has the same words but differs in spacing."
        return f"Answer with {clip(answer)}: the output{normalised} {'; '.join(phrases)}."

    def evaluate_batch(self, actuals: Sequence[Any], expecteds: Sequence[Any] | None = None) -> BatchResult:
        """Vectorised for one text answer per output: normalise a chunk at once, then ``rapidfuzz.process.cpdist``.

        Chunks holding lists of answers or non-text outputs are judged pair by pair.
        """
        return chunked_batch(self, actuals, expecteds, self._vector)

    def _vector(self, actuals: Sequence[Any], expecteds: Sequence[Any]) -> tuple[FloatArray, BoolArray] | None:
        import numpy as np

        norm_a = self.normalize.batch(actuals)
        norm_e = None if norm_a is None else self.normalize.batch(expecteds)
        if norm_a is None or norm_e is None:
            return None
        scores = self._raw_similarities(norm_a, norm_e)
        if self._scale != 1.0:
            scores /= self._scale
        np.clip(scores, 0.0, 1.0, out=scores)
        if self.options.algorithm in _IDENTICAL_BELOW_ONE:
            identical = np.fromiter(map(operator.eq, norm_a, norm_e), dtype=np.bool_, count=len(norm_a))
            scores[identical] = 1.0
        return scores, scores >= self.options.threshold

    def _raw_similarities(self, norm_a: list[str], norm_e: list[str]) -> FloatArray:
        import numpy as np

        n = len(norm_a)
        if n == 0:
            return np.zeros(0, dtype=np.float64)
        if self.options.algorithm == "jaro_winkler":
            # cpdist's SIMD Jaro-Winkler differs from the scalar one in the last bit; stay equal to evaluate().
            return np.fromiter(map(self._scorer, norm_a, norm_e), dtype=np.float64, count=n)
        from rapidfuzz.process import cpdist

        return np.asarray(
            cpdist(norm_a, norm_e, scorer=self._scorer, dtype=np.float64, workers=self.options.workers),
            dtype=np.float64,
        )
