"""Bootstrap speed: 100,000 sample scores x 10,000 resamples, vectorised, against a pure-Python loop.

The vectorised bootstrap (``assay.results.stats.bootstrap_means``) is exact: a resample of scores that take
few distinct values (pass/fail, graded rubrics) is one multinomial draw of counts over those values, so it
costs O(distinct values) instead of O(n). Scores that are all distinct fall back to drawing resample index
matrices in chunks, O(n) per resample. Both are timed here, on seeded data, in this process:

- pass/fail scores (2 distinct values), graded scores (11) and F1-like scores (1,000): all 10,000 resamples;
- continuous scores (100,000 distinct values): a slice of the resamples, extrapolated to 10,000;
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
        if name.startswith("continuous"):
            part = _best(lambda x=x: stats.bootstrap_means(x, CONTINUOUS_RESAMPLES, np.random.default_rng(1)), 1)
            seconds = part * N_RESAMPLES / CONTINUOUS_RESAMPLES
            how = f"(measured {CONTINUOUS_RESAMPLES:,} resamples in {part:.3f} s, extrapolated)"
        else:
            seconds = _best(lambda x=x: stats.bootstrap_means(x, N_RESAMPLES, np.random.default_rng(1)), REPEATS)
            how = f"(best of {REPEATS})"
        vectorised[name] = seconds
        print(f"  vectorised, {name:<26} {seconds:9.3f} s {how}")

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
