"""Bootstrap speed: 100,000 sample scores x 10,000 resamples, vectorised, against a pure-Python loop.

The vectorised bootstrap (``assay.results.stats.bootstrap_means``) resamples exactly where that is cheap: a
resample of scores that take few distinct values (pass/fail, graded rubrics) is one multinomial draw of counts
over those values, O(distinct values) instead of O(n); otherwise resample index matrices are drawn in chunks.
Many-valued scores whose exact resampling would take more than ~1e8 index draws use the binned scheme (exact
multinomial counts over 64 quantile bins, the within-bin sum drawn with its exact mean and variance). Timed
here, on seeded data, in this process:

- pass/fail scores (2 distinct values), graded scores (11), F1-like scores (1,000) and continuous scores
  (100,000 distinct values, binned): all 10,000 resamples;
- continuous scores resampled exactly by index: a slice of the resamples, extrapolated to 10,000;
- a pure-Python resampling loop (``random.choices`` + ``sum``): 20 resamples, extrapolated to 10,000.

Figures are the best of ``REPEATS`` runs (one run for the slow extrapolated ones).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import numpy as np

from assay.results import stats

N_SCORES = 100_000
N_RESAMPLES = 10_000
PY_RESAMPLES = 20
CONTINUOUS_RESAMPLES = 500
REPEATS = 3
SEED = 1234


def _best(fn: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _python_loop(scores: list[float], resamples: int, rng: random.Random) -> list[float]:
    n = len(scores)
    return [sum(rng.choices(scores, k=n)) / n for _ in range(resamples)]


def main() -> None:
    data = np.random.default_rng(SEED)
    cases = {
        "pass/fail (2 values)": (data.random(N_SCORES) < 0.7).astype(np.float64),
        "graded (11 values)": data.integers(0, 11, N_SCORES) / 10.0,
        "F1-like (1,000 values)": data.integers(0, 1000, N_SCORES) / 999.0,
        "continuous (all distinct)": data.random(N_SCORES),
    }
    print(f"{N_SCORES:,} scores x {N_RESAMPLES:,} resamples (seed {SEED})")
    vectorised: dict[str, float] = {}
    for name, x in cases.items():
        seconds = _best(lambda x=x: stats.bootstrap_means(x, N_RESAMPLES, np.random.default_rng(1)), REPEATS)
        method = stats.bootstrap_method(x.size, int(np.unique(x).size), N_RESAMPLES)
        vectorised[name] = seconds
        print(f"  vectorised, {name:<26} {seconds:9.3f} s (best of {REPEATS}, {method})")
    x = cases["continuous (all distinct)"]
    exact_limit = stats.EXACT_BOOTSTRAP_DRAWS
    stats.EXACT_BOOTSTRAP_DRAWS = 10**15  # force exact index resampling for comparison
    try:
        part = _best(lambda: stats.bootstrap_means(x, CONTINUOUS_RESAMPLES, np.random.default_rng(1)), 1)
    finally:
        stats.EXACT_BOOTSTRAP_DRAWS = exact_limit
    exact_seconds = part * N_RESAMPLES / CONTINUOUS_RESAMPLES
    vectorised["continuous, exact by index"] = exact_seconds
    print(
        f"  vectorised, {'continuous, exact by index':<26} {exact_seconds:9.3f} s "
        f"(measured {CONTINUOUS_RESAMPLES:,} resamples in {part:.3f} s, extrapolated)"
    )

    scores = cases["pass/fail (2 values)"].tolist()
    start = time.perf_counter()
    _python_loop(scores, PY_RESAMPLES, random.Random(SEED))
    part = time.perf_counter() - start
    python_seconds = part * N_RESAMPLES / PY_RESAMPLES
    print(
        f"  pure-Python loop                     {python_seconds:9.3f} s "
        f"(measured {PY_RESAMPLES} resamples in {part:.3f} s, extrapolated to {N_RESAMPLES:,})"
    )
    for name, seconds in vectorised.items():
        print(f"  speed-up over pure Python, {name:<26} {python_seconds / seconds:12,.0f}x")


if __name__ == "__main__":
    main()
