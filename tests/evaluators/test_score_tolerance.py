"""Scores a rounding error outside [0, 1] are clipped; scores clearly outside stay errors; batch and per-pair agree."""

from __future__ import annotations

import math

import numpy as np
import pytest

from assay import evaluators
from assay.evaluators.base import BatchResult
from assay.verdict import SCORE_TOLERANCE, Verdict, unit_score

PERFECT_BLEU = 100.00000000000004 / 100  # sacrebleu's perfect sentence score, scaled: 1.0000000000000004


def bleu_like(actual, expected):
    """Scores as a sacrebleu-based metric does: a perfect match is 1 plus a rounding error."""
    return PERFECT_BLEU if actual == expected else 0.25


@pytest.mark.parametrize(
    ("score", "clipped"),
    [(PERFECT_BLEU, 1.0), (1.0 + SCORE_TOLERANCE, 1.0), (-1e-12, 0.0), (-SCORE_TOLERANCE, 0.0), (0.5, 0.5), (1, 1)],
)
def test_a_rounding_error_outside_the_range_is_clipped(score, clipped):
    assert unit_score(score) == clipped
    verdict = Verdict(score, True)
    assert verdict.score == clipped and 0.0 <= verdict.score <= 1.0
    assert Verdict.partial(score, "low", threshold=0.0).score == clipped


@pytest.mark.parametrize("score", [1.0 + 1e-6, 1.5, -0.01, 100.0, math.nan, math.inf])
def test_a_score_clearly_outside_stays_an_error(score):
    assert unit_score(score) is None
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        Verdict(score, True)
    verdict = evaluators.get("custom", fn=lambda a, e: score).evaluate("x", "x")
    assert verdict.is_error and "outside [0, 1]" in verdict.error


def test_custom_keeps_the_best_samples_and_passes_them():
    ev = evaluators.get("custom", fn=bleu_like, threshold=1.0)
    perfect = ev.evaluate("the cat", "the cat")
    assert not perfect.is_error and perfect.score == 1.0 and perfect.passed  # passes a threshold of 1 too
    in_dict = evaluators.get("custom", fn=lambda a, e: {"score": PERFECT_BLEU}).evaluate("a", "a")
    assert in_dict.score == 1.0 and in_dict.passed


def test_batch_path_agrees_with_the_per_pair_path():
    ev = evaluators.get("custom", fn=bleu_like)
    actuals = ["the cat", "a dog", "the cat", "x"]
    expecteds = ["the cat", "the dog", "the cat", "y"]
    batch = ev.evaluate_batch(actuals, expecteds)
    singles = [ev.evaluate(a, e) for a, e in zip(actuals, expecteds, strict=True)]
    assert batch.scores.tolist() == [v.score for v in singles] == [1.0, 0.25, 1.0, 0.25]
    assert not batch.errored.any()


def test_a_columnar_batch_clips_as_a_verdict_does():
    scores = np.array([PERFECT_BLEU, -1e-12, 0.5, math.nan, 1.5])
    batch = BatchResult("m", scores, np.array([True, False, False, False, True]), verdicts=[])
    assert batch.scores[:3].tolist() == [1.0, 0.0, 0.5]
    assert math.isnan(batch.scores[3]) and batch.scores[4] == 1.5  # an error stays NaN; 1.5 is left to be seen
