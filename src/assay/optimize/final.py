"""The verdict on the held-out test split: the best candidate (B) against the original task (A), paired by dataset
row, on the outcomes the optimisation ranks candidates by: an errored sample counts as a failure (0) on either side.

So the headline's two means differ by exactly the difference it states, and its test is of those same outcomes:
the exact McNemar test for pass/fail scores, else a sign-flip permutation test, with a paired bootstrap interval
of the difference (the statistics of ``assay compare``). Dropping the rows where either side errored, as a paired
test of scored samples does, lets a candidate that errors wherever it would fail look significantly better.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assay.optimize.engine import OptimizeError

if TYPE_CHECKING:
    from assay.optimize.engine import Evaluation

ITERS = 10_000
SEED = 1234


def sample_ids(run_dir: str, task: str, rows: list[int]) -> dict[int, str]:
    """Dataset row -> sample id of a candidate run (its doc_ids index the sorted rows it ran on)."""
    from assay.results import load_run

    run = load_run(run_dir)
    return {rows[int(rec["doc_id"])]: str(rec["sample_id"]) for rec in run.task_record_dicts(task)}


def compare_outcomes(
    ev_a: Evaluation,
    ev_b: Evaluation,
    *,
    alpha: float,
    task: str,
    ids: dict[int, str] | None = None,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Paired comparison of B against A on every test row, errors counting as failures; JSON-safe."""
    import numpy as np

    from assay.results import stats
    from assay.results.aggregate import task_rng

    rows = sorted(ev_a.scores)
    if sorted(ev_b.scores) != rows:
        raise OptimizeError("the two test runs did not score the same rows; resume the optimisation to finish them")
    if not rows:
        raise OptimizeError("the test split has no scored rows to compare")
    a = np.asarray([ev_a.scores[r] or 0.0 for r in rows], dtype=np.float64)
    b = np.asarray([ev_b.scores[r] or 0.0 for r in rows], dtype=np.float64)
    names = ids or {}
    worse, better = b < a, b > a
    out: dict[str, Any] = {
        "same": False,
        "outcomes": "errors count as failures (0) on both sides",
        "n": len(rows),
        "mean_a": float(a.mean()),
        "mean_b": float(b.mean()),
        "errored_a": ev_a.errored,
        "errored_b": ev_b.errored,
        "regressed": int(worse.sum()),
        "improved": int(better.sum()),
        "regressed_ids": [names.get(r, str(r)) for r, w in zip(rows, worse, strict=True) if w],
        "improved_ids": [names.get(r, str(r)) for r, w in zip(rows, better, strict=True) if w],
        "confidence": confidence,
        "iters": ITERS,
        "seed": SEED,
    }
    rng = task_rng(SEED, task, 2)
    diff, ci, _ = stats.paired_bootstrap(a, b, ITERS, rng, confidence)
    if bool(np.all(np.isin(a, (0.0, 1.0))) and np.all(np.isin(b, (0.0, 1.0)))):
        test, p_value, exact = "mcnemar", stats.mcnemar_exact(out["regressed"], out["improved"]), True
    else:
        p_value, exact = stats.sign_flip_test(b - a, ITERS, rng)
        test = "sign_flip"
    significant = p_value < alpha and diff != 0.0
    out.update(
        diff=float(diff),
        ci=None if ci is None else [float(ci[0]), float(ci[1])],
        test=test,
        p_value=float(p_value),
        exact=exact,
        significant=significant,
        better=significant and diff > 0,
        worse=significant and diff < 0,
    )
    return out
