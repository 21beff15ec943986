"""The headline confidence interval of a metric's mean: one made for the kind of scores it summarises.

Pass/fail scores get the Wilson score interval, made for proportions: always inside [0, 1] and never of zero
width, with coverage close to nominal down to 20 samples and rates near 0 or 1, where the t and percentile
bootstrap intervals collapse (all failing: [0, 0]) or leave the range (19 of 20 passing: up to 1.055). Wilson
rather than Clopper–Pearson because Clopper–Pearson's guarantee of *at least* 95 % makes it cover 96–99 % in
practice, i.e. wider than it needs to be; Wilson's coverage oscillates around the nominal level instead
(Brown, Cai & DasGupta, 2001).

Other bounded scores (graded, F1-like, similarities) get the studentized bootstrap (bootstrap-t), which corrects
for the skew that makes the t and percentile intervals under-cover small runs of skewed scores (both about 90 %
at n = 20), then is clipped to the scores' range. Past :data:`~assay.results.stats.EXACT_BOOTSTRAP_DRAWS`
resampled values the t interval (clipped) is used: by then the central limit theorem makes it accurate.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from assay.results import stats
from assay.results.stats import FloatArray

WILSON = "wilson"
BOOTSTRAP_T = "bootstrap_t"
T = "t"
SCORE_RANGE = (0.0, 1.0)  # a Verdict's score is in [0, 1]


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """The Wilson score interval for ``successes`` out of ``n``; None for no trials."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be between 0 and n={n}, got {successes}")
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    p = successes / n
    z2n = z * z / n
    center = (p + z2n / 2.0) / (1.0 + z2n)
    half = z * math.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n)) / (1.0 + z2n)
    # at 0 or n successes one bound is exactly 0 or 1; floating point must not leave the range
    lo = 0.0 if successes == 0 else max(0.0, center - half)
    hi = 1.0 if successes == n else min(1.0, center + half)
    return (lo, hi)


def clip_interval(
    ci: tuple[float, float] | None, bounds: tuple[float, float] | None = SCORE_RANGE
) -> tuple[float, float] | None:
    """``ci`` cut to ``bounds`` (the range the scores can take); unchanged without bounds."""
    if ci is None or bounds is None:
        return ci
    lo, hi = bounds
    return (min(max(ci[0], lo), hi), max(min(ci[1], hi), lo))


def score_bounds(x: FloatArray) -> tuple[float, float] | None:
    """The range to clip a mean's interval to: [0, 1] when every score is in it (as Verdict scores are)."""
    if x.size and float(x.min()) >= SCORE_RANGE[0] and float(x.max()) <= SCORE_RANGE[1]:
        return SCORE_RANGE
    return None


def bootstrap_t_feasible(n: int, distinct: int, iters: int) -> bool:
    """Whether the studentized bootstrap resamples exactly within the exact-bootstrap budget."""
    return stats.bootstrap_method(n, distinct, iters) == "exact"


def bootstrap_t_interval(
    values: FloatArray, iters: int, rng: np.random.Generator, confidence: float = 0.95
) -> tuple[float, float] | None:
    """Studentized bootstrap interval of the mean: ``mean - q(1-a/2)·se, mean - q(a/2)·se`` with q the quantiles
    of ``(mean* - mean) / se*`` over resamples. None below two values or past the exact-resampling budget.

    A resample whose values are all equal has no spread; its t* is taken as ±1e12 (the limit), so such rare
    resamples widen the interval rather than being dropped. When they are not rare (scores nearly all equal, such
    as 20 scores of 1.0 and one of 0.5) they would decide the interval's ends, which then span the whole range:
    the method does not apply there, and None says so.
    """
    x = stats.as_array(values)
    n = x.size
    if n < 2 or iters < 1:
        return None
    uniq, counts = np.unique(x, return_counts=True)
    if not bootstrap_t_feasible(n, uniq.size, iters):
        return None
    m = float(x.mean())
    se = float(x.std(ddof=1) / math.sqrt(n))
    if se == 0.0:
        return (m, m)
    tstar = np.empty(iters, dtype=np.float64)
    pos = 0
    if stats.COUNT_DRAW_COST * uniq.size < n:  # few distinct values: one multinomial draw of counts per resample
        for rows in stats.resample_chunks(iters, uniq.size):
            draws = rng.multinomial(n, counts / n, size=rows).astype(np.float64)
            sums, sumsq = draws @ uniq, draws @ (uniq * uniq)
            tstar[pos : pos + rows] = _studentized(sums / n, sumsq, n, m)
            pos += rows
    else:
        dtype = np.uint32 if n < 2**32 else np.int64
        for rows in stats.resample_chunks(iters, n):
            sample = x[rng.integers(0, n, size=(rows, n), dtype=dtype)]
            tstar[pos : pos + rows] = _studentized(sample.mean(axis=1), (sample * sample).sum(axis=1), n, m)
            pos += rows
    alpha = 1.0 - confidence
    if np.count_nonzero(np.abs(tstar) >= 1e12) > alpha / 2.0 * iters:
        return None
    q_lo, q_hi = np.quantile(tstar, [alpha / 2.0, 1.0 - alpha / 2.0])
    return (m - float(q_hi) * se, m - float(q_lo) * se)


def _studentized(means: FloatArray, sumsq: FloatArray, n: int, m: float) -> FloatArray:
    var = np.maximum(sumsq - n * means * means, 0.0) / (n - 1)
    se = np.sqrt(var / n)
    diff = means - m
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, diff / np.where(se > 0, se, 1.0), np.sign(diff) * 1e12)
    return np.asarray(t, dtype=np.float64)


def headline_interval(
    x: FloatArray,
    *,
    binary: bool,
    iters: int,
    rng: np.random.Generator,
    confidence: float = 0.95,
) -> tuple[tuple[float, float] | None, str | None]:
    """The interval reports lead with, and its method: Wilson for pass/fail scores, else the studentized
    bootstrap (or, past its budget or without resamples, the t interval), clipped to the scores' range."""
    n = int(x.size)
    if n == 0:
        return None, None
    if binary:
        return wilson_interval(int(np.count_nonzero(x == 1.0)), n, confidence), WILSON
    bounds = score_bounds(x)
    ci = bootstrap_t_interval(x, iters, rng, confidence) if iters > 0 else None
    if ci is not None:
        return clip_interval(ci, bounds), BOOTSTRAP_T
    t = stats.t_interval(stats.mean(x), stats.stderr(x), n - 1, confidence)
    return clip_interval(t, bounds), (T if t is not None else None)
