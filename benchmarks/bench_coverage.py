"""Coverage and width of 95 % intervals for a mean, per candidate method: the table the headline interval is chosen by.

Seeded simulation. For each score distribution and sample size n, ``--reps`` samples are drawn; each candidate
interval is computed by the library's own functions (``assay.results.stats`` / ``assay.results.intervals``, with
``--iters`` resamples, the run default 10,000 unless given) and checked against the distribution's true mean:

- **t**: Student's t, cut to [0, 1];   **percentile**: the percentile bootstrap (``ci_bootstrap`` in results.json);
- **BCa**: bias-corrected and accelerated bootstrap;   **BCa exp.**: BCa with the small-sample expanded quantile;
- **boot-t**: the studentized bootstrap (the graded headline before this table);
- **Wilson**: the score interval for pass/fail (``—`` for other scores); **bd. Wilson**: Wilson at the mean of any
  [0, 1] scores (valid since their variance is at most m(1 - m); what the headline uses when scores have no spread);
- **headline**: what a run reports (``headline_interval``, the product's code path).

Distributions: pass/fail, Beta (skewed both ways and symmetric) and judge-like grades (1-5 and 1-10 scaled to
[0, 1]; symmetric, skewed high as LLM judges tend to be, skewed low, bimodal) and the issue's ten-judge-scores shape.
A cell is ``coverage · mean width``; ``✗`` marks coverage below 93 % (95 % less about three Monte-Carlo standard
errors at 1,000 reps), ``out N%`` the share of intervals reaching outside [min, max] of their sample (a
bootstrap interval cannot). Run: ``python -m benchmarks coverage`` (or ``python -m benchmarks.bench_coverage --reps
2000 --n 10,20``); prints a markdown table and the seconds it took.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from assay.results import stats
from assay.results.intervals import (
    bca_interval,
    bootstrap_t_interval,
    bounded_wilson_interval,
    clip_interval,
    headline_interval,
    wilson_interval,
)

REPS = 1000
ITERS = 10_000  # the run default (RunSettings.bootstrap_iters)
SIZES = (10, 20, 50, 100)
PASS_COVERAGE = 0.93
SEED = 20260425
Sampler = Callable[[np.random.Generator, int], np.ndarray]
Interval = tuple[float, float] | None


@dataclass(frozen=True)
class Case:
    """A score distribution with its true mean."""

    name: str
    draw: Sampler
    mean: float
    binary: bool = False


def _grades(name: str, weights: list[float]) -> Case:
    p = np.asarray(weights, dtype=np.float64) / sum(weights)
    values = np.arange(p.size) / (p.size - 1)
    return Case(name, lambda rng, n: rng.choice(values, size=n, p=p), float(values @ p))


def _discrete(name: str, values: list[float], weights: list[float]) -> Case:
    v, p = np.asarray(values), np.asarray(weights) / sum(weights)
    return Case(name, lambda rng, n: rng.choice(v, size=n, p=p), float(v @ p))


def _bernoulli(p: float) -> Case:
    return Case(f"pass/fail p={p:g}", lambda rng, n: (rng.random(n) < p).astype(np.float64), p, binary=True)


def _beta(a: float, b: float) -> Case:
    return Case(f"Beta({a:g},{b:g})", lambda rng, n: rng.beta(a, b, n), a / (a + b))


CASES = [
    _bernoulli(0.5),
    _bernoulli(0.9),
    _beta(0.5, 5.0),
    _beta(5.0, 0.5),
    _beta(2.0, 2.0),
    _grades("grades 1-5 symmetric", [1, 2, 4, 2, 1]),
    _grades("grades 1-5 skewed high", [2, 3, 10, 35, 50]),
    _grades("grades 1-5 skewed low", [50, 30, 10, 5, 5]),
    _grades("grades 1-10 skewed high", [1, 1, 2, 2, 4, 5, 10, 25, 30, 20]),
    _grades("grades 1-10 bimodal", [20, 10, 3, 2, 2, 2, 3, 8, 20, 30]),
    _discrete("judge {.2,.3,.8,.9} (issue 25)", [0.2, 0.3, 0.8, 0.9], [1, 1, 7, 1]),
]
METHODS = ("t", "percentile", "BCa", "BCa exp.", "boot-t", "Wilson", "bd. Wilson", "headline")


def _intervals(x: np.ndarray, binary: bool, iters: int, rep_seed: int) -> dict[str, Interval]:
    """Every candidate's interval for one sample."""
    n = x.size
    m = float(x.mean())
    dist = stats.bootstrap_means(x, iters, np.random.default_rng([rep_seed, 0]))
    boot_t = bootstrap_t_interval(x, iters, np.random.default_rng([rep_seed, 1]))
    t = clip_interval(stats.t_interval(m, stats.stderr(x), n - 1))
    out: dict[str, Interval] = {
        "t": t,
        "percentile": stats.percentile_interval(dist),
        "BCa": bca_interval(x, dist, expand=False),
        "BCa exp.": bca_interval(x, dist),
        "boot-t": clip_interval(boot_t) if boot_t is not None else t,  # as the old headline fell back
        "Wilson": wilson_interval(int(np.count_nonzero(x == 1.0)), n) if binary else None,
        "bd. Wilson": bounded_wilson_interval(m, n),
    }
    out["headline"], _ = headline_interval(
        x, binary=binary, iters=iters, rng=np.random.default_rng([rep_seed, 0]), dist=dist
    )
    return out


def measure(case: Case, n: int, reps: int, iters: int) -> dict[str, tuple[float, float, float] | None]:
    """Per method: (coverage, mean width, share outside the sample's [min, max]); None where it does not apply."""
    rng = np.random.default_rng([SEED, n, sum(map(ord, case.name))])
    hits = dict.fromkeys(METHODS, 0)
    width = dict.fromkeys(METHODS, 0.0)
    outside = dict.fromkeys(METHODS, 0)
    seen = dict.fromkeys(METHODS, 0)
    for rep in range(reps):
        x = case.draw(rng, n).astype(np.float64)
        lo_x, hi_x, spread = float(x.min()), float(x.max()), bool(np.any(x != x[0]))
        for name, ci in _intervals(x, case.binary, iters, rep).items():
            if ci is None:
                continue
            lo, hi = ci
            seen[name] += 1
            hits[name] += lo <= case.mean <= hi
            width[name] += hi - lo
            outside[name] += spread and (lo < lo_x - 1e-12 or hi > hi_x + 1e-12)
    return {k: (hits[k] / seen[k], width[k] / seen[k], outside[k] / seen[k]) if seen[k] else None for k in METHODS}


def _cell(figures: tuple[float, float, float] | None) -> str:
    if figures is None:
        return "—"
    cov, width, out = figures
    text = f"{100 * cov:.1f}% · {width:.3f}"
    if cov < PASS_COVERAGE:
        text += " ✗"
    if out > 0:
        text += f" (out {100 * out:.0f}%)" if out >= 0.005 else " (out <1%)"
    return text


def table(sizes: tuple[int, ...] = SIZES, reps: int = REPS, iters: int = ITERS) -> str:
    """The markdown coverage table (one row per distribution and n)."""
    lines = ["| scores | n | " + " | ".join(METHODS) + " |", "|---|---:|" + "---|" * len(METHODS)]
    for case in CASES:
        for n in sizes:
            figures = measure(case, n, reps, iters)
            lines.append(f"| {case.name} | {n} | " + " | ".join(_cell(figures[k]) for k in METHODS) + " |")
            print(lines[-1], flush=True)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_coverage", description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=REPS, help=f"samples per cell (default {REPS})")
    parser.add_argument("--iters", type=int, default=ITERS, help=f"bootstrap resamples (default {ITERS:,})")
    parser.add_argument("--n", default=",".join(map(str, SIZES)), help="sample sizes, comma-separated")
    args = parser.parse_args(argv or [])
    sizes = tuple(int(s) for s in args.n.split(","))
    start = time.perf_counter()
    print(f"95% intervals: coverage · mean width over {args.reps:,} seeded samples per row, {args.iters:,} resamples")
    print(f"(✗: coverage below {100 * PASS_COVERAGE:.0f}%; out N%: intervals reaching outside the sample's range)\n")
    body = table(sizes, args.reps, args.iters)
    print(f"\nfull table:\n\n{body}\n\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
