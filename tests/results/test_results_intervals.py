"""The headline interval covers what it claims: exact coverage for pass/fail scores, simulated for skewed ones; and it
never says what the data cannot (issue 25: ten judge scores of mean 0.70, none below 0.2, were given [0.00, 0.83])."""

from __future__ import annotations

import math

import numpy as np
import pytest

from assay.results import stats
from assay.results.aggregate import SampleValues, summarize_metric
from assay.results.intervals import (
    bca_interval,
    bootstrap_t_interval,
    bounded_wilson_interval,
    clip_interval,
    headline_interval,
    wilson_interval,
)


def _values(scores: np.ndarray) -> SampleValues:
    n = scores.size
    return SampleValues(
        doc_ids=list(range(n)),
        values=scores.astype(np.float64),
        passed_frac=(scores >= 0.5).astype(np.float64),
        n_attempts=np.ones(n, dtype=np.int64),
        n_passed=(scores >= 0.5).astype(np.int64),
        n_errored_verdicts=0,
    )


def _summary(scores: np.ndarray, iters: int = 0, seed: int = 1) -> dict:
    """A metric's entry computed exactly as a run computes it."""
    return summarize_metric(
        _values(scores),
        task="t",
        filter_name="none",
        metric="m",
        higher_is_better=True,
        error_policy="exclude",
        repeat_reduction="mean",
        repeats=1,
        bootstrap_iters=iters,
        seed=seed,
    ).entry


def _binom_pmf(n: int, p: float) -> np.ndarray:
    k = np.arange(n + 1)
    logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in k]
    return np.exp(np.array(logs) + k * math.log(p) + (n - k) * math.log1p(-p))


def _exact_coverage(n: int, p: float) -> float:
    """P(the run's interval contains p) for n pass/fail samples: every possible count, weighted by its
    probability. Exact, so no simulation noise; each count goes through the run's own code path."""
    pmf = _binom_pmf(n, p)
    covered = 0.0
    for successes in range(n + 1):
        scores = np.zeros(n)
        scores[:successes] = 1.0
        lo, hi = _summary(scores)["ci"]
        covered += pmf[successes] * (lo <= p <= hi)
    return covered


@pytest.mark.parametrize("p", [0.05, 0.5, 0.9])
@pytest.mark.parametrize("n", [20, 100, 1000])
def test_pass_fail_interval_covers_95_percent(n: int, p: float) -> None:
    coverage = _exact_coverage(n, p)
    if (n, p) == (20, 0.05):
        # With 20 samples at p = 0.05 an interval that is a function of the count can only cover
        # P(X <= 2) = 0.925 or P(X <= 3) = 0.984 (the next count's interval starts above 0.05 or not): no method
        # lands in 93-97 %. Wilson takes the nearer one. The t and bootstrap intervals covered 66 % here.
        assert coverage == pytest.approx(0.9245, abs=0.001)
    else:
        assert 0.93 <= coverage <= 0.97, coverage


def test_skewed_continuous_scores_are_covered_95_percent() -> None:
    """Seeded simulation: scores ~ Beta(0.5, 5) (mean 1/11, long right tail), the shape of similarity or F1
    scores that mostly fail. The t and percentile intervals cover about 90 % at n = 20 (benchmarks/bench_coverage)."""
    rng = np.random.default_rng(20261201)
    true_mean = 0.5 / 5.5
    # at n = 20 the expanded BCa covers 93.4 % in the coverage table (1,000 reps; 92.75 % in these 400), where
    # bootstrap-t, the headline before, covered 94.8 % by leaving the data's range at small n: the bound is 92 %
    for n, reps, least in ((20, 400, 0.92), (100, 300, 0.93), (1000, 150, 0.93)):
        hits = 0
        for rep in range(reps):
            entry = _summary(rng.beta(0.5, 5.0, n), iters=1000, seed=rep)
            assert entry["ci_method"] == "bca_expanded"
            lo, hi = entry["ci"]
            hits += lo <= true_mean <= hi
        assert least <= hits / reps <= 0.97, (n, hits / reps)


def test_all_failing_is_not_a_zero_width_interval() -> None:
    entry = _summary(np.zeros(20), iters=2000)
    assert entry["ci_method"] == "wilson"
    lo, hi = entry["ci"]
    assert lo == 0.0 and hi == pytest.approx(3.8415 / (20 + 3.8415), rel=1e-4)  # z² / (n + z²)
    assert entry["ci_t"] == [0.0, 0.0]  # what the t interval says: no uncertainty at all, which is why it never leads


def test_nineteen_of_twenty_stays_within_one() -> None:
    entry = _summary(np.r_[np.ones(19), 0.0], iters=2000)
    assert entry["ci"][1] < 1.0 and entry["ci"][0] == pytest.approx(0.7639, abs=1e-4)
    assert entry["ci_t"][1] == 1.0  # the t interval (1.055 unclipped) is clipped to the score range


def test_a_single_sample_still_gets_an_interval() -> None:
    lo, hi = _summary(np.ones(1))["ci"]
    assert 0.2 < lo < hi == 1.0


def test_wilson_matches_the_closed_form() -> None:
    lo, hi = wilson_interval(8, 10)
    z = 1.959963984540054
    center = (0.8 + z * z / 20) / (1 + z * z / 10)
    half = z * math.sqrt(0.8 * 0.2 / 10 + z * z / 400) / (1 + z * z / 10)
    assert (lo, hi) == pytest.approx((center - half, center + half))
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(11, 10)


def test_bootstrap_t_counts_path_equals_index_path_in_distribution() -> None:
    """Few distinct values use multinomial counts; many use index draws: both estimate the same interval."""
    x = np.repeat([0.0, 0.25, 0.5, 1.0], [300, 100, 60, 40])
    by_counts = bootstrap_t_interval(x, 20_000, np.random.default_rng(1))
    jittered = x + np.random.default_rng(2).uniform(-1e-9, 1e-9, x.size)  # all distinct: index draws
    by_index = bootstrap_t_interval(jittered, 4_000, np.random.default_rng(3))
    assert by_counts is not None and by_index is not None
    assert by_counts == pytest.approx(by_index, abs=0.01)


def test_graded_scores_get_a_clipped_interval_inside_the_range() -> None:
    x = np.r_[np.full(6, 1.0), 0.5, 0.75, 0.9, 0.95]
    ci, method = headline_interval(x, binary=False, iters=2000, rng=np.random.default_rng(0))
    assert method == "bca_expanded" and ci is not None and 0.0 <= ci[0] <= ci[1] <= 1.0
    ci, method = headline_interval(x, binary=False, iters=0, rng=np.random.default_rng(0))
    t = stats.t_interval(stats.mean(x), stats.stderr(x), 9)
    assert method == "t" and ci == clip_interval(t) and t is not None and t[1] > 1.0


def test_nearly_constant_graded_scores_do_not_get_the_whole_range() -> None:
    """20 scores of 1.0 and one of 0.5: a third of the resamples have no spread, which made the studentized
    bootstrap's interval [0, 1]; the BCa interval is a range of resampled means, inside the data."""
    entry = _summary(np.r_[np.ones(20), 0.5], iters=2000)
    lo, hi = entry["ci"]
    assert entry["ci_method"] == "bca_expanded" and 0.8 < lo < entry["mean"] < hi == 1.0


ISSUE_SCORES = np.array([0.9, 0.3, 0.2] + [0.8] * 7)  # mean 0.70, none below 0.2


def test_ten_judge_scores_get_an_interval_inside_their_range() -> None:
    """Issue 25, at the run defaults (10,000 resamples, seed 1234): bootstrap-t said [0.0000, 0.8287]."""
    entry = _summary(ISSUE_SCORES, iters=10_000, seed=1234)
    lo, hi = entry["ci"]
    assert entry["mean"] == pytest.approx(0.7) and 0.2 <= lo < entry["mean"] < hi <= 0.9
    assert lo > 0.4 and hi - lo < 0.4  # a range of plausible means, not of possible scores
    assert (entry["ci_method"], entry["bootstrap_method"], entry["seed"]) == ("bca_expanded", "exact", 1234)
    assert entry["ci_bootstrap"][0] <= entry["mean"] <= entry["ci_bootstrap"][1]  # the percentile one, kept beside


@pytest.mark.parametrize(
    ("values", "weights"),
    [([0.2, 0.3, 0.8, 0.9], [1, 1, 7, 1]), (list(np.arange(10) / 9), [1, 1, 2, 2, 4, 5, 10, 25, 30, 20])],
    ids=["issue-25-judge", "grades-1-10-skewed"],
)
def test_small_runs_of_judge_scores_never_get_an_interval_outside_the_data(values, weights) -> None:
    """Seeded: 200 runs of 10 judge-like scores; bootstrap-t left the observed range in 78 % of the first kind."""
    rng = np.random.default_rng(25)
    p = np.asarray(weights, dtype=np.float64) / sum(weights)
    for rep in range(200):
        x = rng.choice(values, size=10, p=p)
        entry = _summary(x, iters=1000, seed=rep)
        lo, hi = entry["ci"]
        if np.all(x == x[0]):
            assert entry["ci_method"] == "wilson_bounded" and lo < entry["mean"] < hi
        else:
            assert x.min() <= lo <= entry["mean"] <= hi <= x.max(), (x.tolist(), entry["ci"])


def test_judge_grades_are_covered_at_twenty_samples() -> None:
    """Seeded simulation of 1-5 grades skewed high (as LLM judges grade): the percentile bootstrap (``ci_bootstrap``)
    covers 89 % of these 1,500 runs."""
    rng = np.random.default_rng(20)
    grades = np.arange(5) / 4
    p = np.array([2, 3, 10, 35, 50]) / 100
    true_mean = float(grades @ p)
    hits = sum(
        lo <= true_mean <= hi
        for lo, hi in (_summary(rng.choice(grades, 20, p=p), iters=1000, seed=rep)["ci"] for rep in range(1500))
    )
    assert 0.93 <= hits / 1500 <= 0.97, hits / 1500


def test_scores_without_spread_get_the_bounded_wilson_interval() -> None:
    """Ten scores of 0.8: the t interval said [0.8, 0.8], certainty the data do not give; a [0, 1] score of mean m
    has variance at most m(1 - m), so the interval for a proportion is a valid one."""
    entry = _summary(np.full(10, 0.8), iters=1000)
    assert entry["ci_method"] == "wilson_bounded"
    assert entry["ci"] == pytest.approx(list(wilson_interval(8, 10)))
    one = _summary(np.array([0.5]), iters=1000)
    assert one["ci_method"] == "wilson_bounded" and one["ci"][0] < 0.5 < one["ci"][1]
    assert bounded_wilson_interval(1.0, 10) == wilson_interval(10, 10)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        bounded_wilson_interval(1.5, 10)


def test_bca_agrees_with_scipy() -> None:
    """The BCa interval (unexpanded) is scipy's, up to resampling noise; the expanded one is wider at small n."""
    scipy_stats = pytest.importorskip("scipy.stats")
    x = np.random.default_rng(3).beta(0.5, 5.0, 40)
    dist = stats.bootstrap_means(x, 40_000, np.random.default_rng(4))
    ours = bca_interval(x, dist, expand=False)
    ref = scipy_stats.bootstrap((x,), np.mean, method="BCa", n_resamples=40_000, rng=np.random.default_rng(5))
    assert ours == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high), abs=0.004)
    wide = bca_interval(x, dist)
    assert wide is not None and ours is not None and wide[0] < ours[0] and wide[1] > ours[1]
