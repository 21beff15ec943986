"""Calibrate a run's judges against people's labels: the figures of ``assay judge calibrate`` and its records.

Per judge metric: accuracy beside the base rate (always answering the people's most common label), Cohen's κ
(pass/fail, label scales) or the quadratic weighted κ with linear κ and Spearman's ρ (ordinal grades), Krippendorff's
α when several people labelled, the confusion matrix (rows the people's labels, columns the judge's), each with a
seeded percentile bootstrap interval over the labelled items; the judge's self-consistency where it judged the same
output more than once (repeats with identical outputs); and verbosity bias, Spearman's ρ of the judge's score with
the output's length in characters (beside the same ρ of the people's labels, where there are numeric ones); and
position bias of a pairwise judge, how often its preference flipped when the two responses swapped places.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from assay.evaluators.judge.calibration import agreement as ag
from assay.evaluators.judge.calibration.collect import (
    JudgeMetric,
    Level,
    attach_labels,
    categories,
    consensus,
    judge_metrics,
    judge_value,
    level_of,
    person_value,
    read_judgements,
)
from assay.evaluators.judge.calibration.labels import Label
from assay.evaluators.judge.calibration.records import FORMAT_VERSION, KIND

ITERS = 2000
SEED = 1234
CONFIDENCE = 0.95


def _num(value: Any) -> Any:
    """JSON-safe: NaN and infinities become None, numpy scalars plain numbers."""
    if isinstance(value, np.ndarray):
        return [_num(v) for v in value.tolist()]
    if isinstance(value, list | tuple):
        return [_num(v) for v in value]
    if isinstance(value, float | np.floating):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


def _interval(n: int, stat: Callable[[np.ndarray], Any], iters: int, seed: int) -> list[Any] | None:
    ci = ag.bootstrap(n, stat, iters=iters, seed=seed, confidence=CONFIDENCE)
    return None if ci is None else [_num(ci[0]), _num(ci[1])]


def _as_number(value: Any) -> float:
    return 1.0 if value == "pass" else 0.0 if value == "fail" else float(value)


def _codes(rows: Sequence[Sequence[Any]], level: Level) -> np.ndarray:
    """A raters × units matrix of numbers (category codes for nominal data; NaN where a rater gave none)."""
    if level in ("ordinal", "interval"):
        return np.asarray([[np.nan if v is None else _as_number(v) for v in row] for row in rows], dtype=float)
    order = sorted({str(v) for row in rows for v in row if v is not None})
    code = {v: float(i) for i, v in enumerate(order)}
    return np.asarray([[np.nan if v is None else code[str(v)] for v in row] for row in rows], dtype=float)


def _alpha_level(level: Level) -> ag.Level:
    return "nominal" if level in ("binary", "categorical") else level  # type: ignore[return-value]


def agreement_figures(jm: JudgeMetric, level: Level, *, iters: int = ITERS, seed: int = SEED) -> dict[str, Any]:
    """Accuracy, base rate, κ (weighted for ordinal), Spearman, the confusion matrix and α, with intervals."""
    items = sorted(k for k in jm.labels if k in jm.judged)
    truth = [
        consensus([person_value(lab, level) for lab in sorted(people.values(), key=lambda x: x.when)])
        for people in (jm.labels[k] for k in items)
    ]
    judged = [judge_value(jm, jm.judged[k], level) for k in items]
    n = len(items)
    out: dict[str, Any] = {"level": level, "n_items": n, "n_labelled": len(jm.labels)}
    out["n_labelled_not_judged"] = len(jm.labels) - n  # labels of errored or missing verdicts
    cats = categories(jm, level)

    def pick(idx: np.ndarray) -> tuple[list[Any], list[Any]]:
        return [truth[i] for i in idx], [judged[i] for i in idx]

    if level != "interval":
        out["accuracy"] = _num(ag.accuracy(truth, judged))
        out["accuracy_ci"] = _interval(n, lambda i: ag.accuracy(*pick(i)), iters, seed)
        out["base_rate"] = _num(ag.base_rate(truth))
        weights: ag.Weights = "quadratic" if level == "ordinal" else None
        out["kappa_weights"] = weights or "none"
        out["kappa"] = _num(ag.cohen_kappa(truth, judged, weights, cats))
        out["kappa_ci"] = _interval(n, lambda i: ag.cohen_kappa(*pick(i), weights, cats), iters, seed)
        matrix = ag.confusion(truth, judged, cats)
        ci = ag.bootstrap(n, lambda i: ag.confusion(*pick(i), cats), iters=iters, seed=seed, confidence=CONFIDENCE)
        out["confusion"] = {
            "labels": cats,
            "rows": "people",
            "columns": "judge",
            "matrix": _num(matrix),
            "low": None if ci is None else _num(ci[0]),
            "high": None if ci is None else _num(ci[1]),
        }
    else:
        out["kappa"] = None  # no κ of continuous scores: the gate needs pass/fail or grade labels
    if level in ("ordinal", "interval"):
        if level == "ordinal":
            out["linear_kappa"] = _num(ag.cohen_kappa(truth, judged, "linear", cats))
            out["unweighted_kappa"] = _num(ag.cohen_kappa(truth, judged, None, cats))
        t, j = np.asarray(truth, dtype=float), np.asarray(judged, dtype=float)
        out["spearman"] = _num(ag.spearman(t, j))
        out["spearman_ci"] = _interval(n, lambda i: ag.spearman(t[i], j[i]), iters, seed)
    out["krippendorff"] = _raters_alpha(jm, items, level, judged)
    return out


def _raters_alpha(jm: JudgeMetric, items: list[tuple[str, int]], level: Level, judged: list[Any]) -> Any:
    """Krippendorff's α among the people, and with the judge as one more rater, when an item has 2+ people."""
    people = sorted({who for k in items for who in jm.labels[k]})
    if len(people) < 2 or not any(len(jm.labels[k]) >= 2 for k in items):
        return None
    rows = [[person_value(jm.labels[k][who], level) if who in jm.labels[k] else None for k in items] for who in people]
    lvl = _alpha_level(level)
    return {
        "raters": people,
        "level": lvl,
        "people": _num(ag.krippendorff_alpha(_codes(rows, level), lvl)),
        "people_and_judge": _num(ag.krippendorff_alpha(_codes([*rows, judged], level), lvl)),
    }


def self_consistency(jm: JudgeMetric, level: Level) -> dict[str, Any] | None:
    """How often the judge gave the same value to the same output judged more than once (repeats of a sample whose
    outputs are identical), and α with the judgements as raters; None when no output was judged twice."""
    groups: dict[tuple[str, str], list[Any]] = {}
    for (sample_id, _), item in sorted(jm.judged.items()):
        groups.setdefault((sample_id, item.output_hash), []).append(judge_value(jm, item, level))
    units = [vals for vals in groups.values() if len(vals) >= 2]
    if not units:
        return None
    width = max(len(u) for u in units)
    rows = [[u[r] if r < len(u) else None for u in units] for r in range(width)]
    return {
        "n_outputs": len(units),
        "agreement": _num(float(np.mean([len({str(v) for v in u}) == 1 for u in units]))),
        "krippendorff": _num(ag.krippendorff_alpha(_codes(rows, level), _alpha_level(level))),
    }


def position_bias(jm: JudgeMetric) -> dict[str, Any] | None:
    """A pairwise judge's swap consistency over the run: judgements read in both orders, how many flipped with the
    order (and towards which position), the share that did not; None for a judge that does not compare pairs."""
    if not jm.positions:
        return None
    keys = ("judgements", "inconsistent", "prefers_first", "prefers_second")
    totals = {k: sum(int(p.get(k) or 0) for p in jm.positions.values()) for k in keys}
    n = totals["judgements"]
    return {**totals, "swap_consistency": _num(1 - totals["inconsistent"] / n) if n else None}


def verbosity(jm: JudgeMetric, level: Level, *, iters: int = ITERS, seed: int = SEED) -> dict[str, Any]:
    """Spearman's ρ of the judge's score with output length (all its judgements), and of the people's labels."""
    keys = sorted(jm.judged)
    scores = np.asarray([jm.judged[k].score for k in keys], dtype=float)
    lengths = np.asarray([jm.judged[k].length for k in keys], dtype=float)
    out: dict[str, Any] = {
        "n": len(keys),
        "judge_spearman": _num(ag.spearman(scores, lengths)),
        "judge_spearman_ci": _interval(len(keys), lambda i: ag.spearman(scores[i], lengths[i]), iters, seed),
        "people_spearman": None,
    }
    labelled = [k for k in keys if k in jm.labels]
    if labelled and level != "categorical":
        vals = [
            float(np.mean([_as_number(person_value(lab, level)) for lab in jm.labels[k].values()])) for k in labelled
        ]
        out["people_spearman"] = _num(ag.spearman(vals, [jm.judged[k].length for k in labelled]))
    return out


def calibrate_run(
    run_dir: Path,
    labels: Iterable[Label],
    *,
    evaluator: str | None = None,
    labels_source: str | None = None,
    iters: int = ITERS,
    seed: int = SEED,
) -> list[dict[str, Any]]:
    """One calibration record per judge metric of the run (``evaluator``: only that metric or evaluator)."""
    from assay.store.rundir import read_manifest
    from assay.store.sampleindex import index_samples, iter_dicts
    from assay.version import __version__

    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir)
    metrics = judge_metrics(manifest, evaluator)
    read_judgements(metrics, (rec for _, rec in iter_dicts(index_samples(run_dir))))
    unmatched = attach_labels(metrics, labels)
    records: list[dict[str, Any]] = []
    for jm in metrics:
        level = level_of(jm)
        figures = agreement_figures(jm, level, iters=iters, seed=seed)
        records.append(
            {
                "kind": KIND,
                "format_version": FORMAT_VERSION,
                "judge_id": jm.identity["id"],
                "judge": jm.identity,
                "task": jm.task,
                "metric": jm.metric,
                "evaluator": jm.evaluator.get("name"),
                "run_id": manifest.run_id,
                "labels": labels_source or "labels.jsonl",
                "labels_unmatched": unmatched,
                "n_judged": len(jm.judged),
                "n_judge_errors": jm.n_errors,
                **figures,
                "self_consistency": self_consistency(jm, level),
                "position_bias": position_bias(jm),
                "verbosity": verbosity(jm, level, iters=iters, seed=seed),
                "bootstrap": {"method": "percentile", "iters": iters, "seed": seed, "confidence": CONFIDENCE},
                "created_at": time.time(),
                "assay_version": __version__,
            }
        )
    return records
