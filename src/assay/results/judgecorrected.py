"""A run's judge figures corrected by the people's labels (:mod:`assay.results.ppi`), beside the judge's own.

For each judge metric with labels in the run folder (``labels.jsonl``, written by ``assay view --label`` or
``assay judge import-labels``), each judged output is one item: the judge's value and, where people labelled it, the
people's (their most common label). Pass/fail labels correct the judge's pass rate; numeric labels its score, put on
the score's 0-1 scale from the judge's grade scale; label names (a categorical scale) have no mean to correct and are
refused with that reason. The figure lands on the metric's entry in ``results.json`` (``judge_corrected``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assay.errors import DataError
from assay.evaluators.judge.calibration.collect import (
    JudgeMetric,
    attach_labels,
    consensus,
    judge_metrics,
    level_of,
    read_judgements,
)
from assay.evaluators.judge.calibration.labels import run_labels
from assay.record import RunManifest
from assay.results.ppi import CorrectionRefused, corrected_mean
from assay.store.rundir import LABELS
from assay.store.sampleindex import index_samples, iter_dicts


def _on_score_scale(jm: JudgeMetric, value: float, level: str) -> float:
    if level == "ordinal" and jm.scale.high > jm.scale.low:
        return (value - jm.scale.low) / (jm.scale.high - jm.scale.low)
    return value


def _correct(jm: JudgeMetric, confidence: float) -> dict[str, Any]:
    level = level_of(jm)
    if level == "categorical":
        raise CorrectionRefused("the labels name grades of a label scale: there is no mean to correct")
    labelled_y: list[float] = []
    labelled_f: list[float] = []
    unlabelled_f: list[float] = []
    for item, judged in jm.judged.items():
        f = float(judged.passed) if level == "binary" else judged.score
        people = jm.labels.get(item)
        if not people:
            unlabelled_f.append(f)
            continue
        label = consensus([lab.label for lab in sorted(people.values(), key=lambda lab: lab.when)])
        y = 1.0 if label == "pass" else 0.0 if label == "fail" else _on_score_scale(jm, float(label), level)
        labelled_y.append(y)
        labelled_f.append(f)
    figure = corrected_mean(labelled_y, labelled_f, unlabelled_f, confidence=confidence)
    return {**figure.to_dict(), "of": "pass rate" if level == "binary" else "score"}


def judge_corrections(
    manifest: RunManifest, run_dir: Path, *, confidence: float = 0.95
) -> dict[tuple[str, str], dict[str, Any]]:
    """``(task, metric) -> figure`` for each judge metric people labelled (``{"refused": why}`` where the labels
    cannot correct it); empty, without reading ``samples.jsonl``, when the run has no labels."""
    if not (Path(run_dir) / LABELS).is_file():
        return {}
    labels = run_labels(Path(run_dir))
    if not labels:
        return {}
    try:
        metrics = judge_metrics(manifest)
    except DataError:  # no judge metric: nothing to correct
        return {}
    read_judgements(metrics, (rec for _, rec in iter_dicts(index_samples(Path(run_dir)))))
    attach_labels(metrics, labels)
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for jm in metrics:
        if not jm.labels:
            continue
        try:
            out[(jm.task, jm.metric)] = _correct(jm, confidence)
        except CorrectionRefused as err:
            out[(jm.task, jm.metric)] = {"refused": str(err)}
    return out


def apply_judge_corrections(results: dict[str, Any], corrections: Mapping[tuple[str, str], Mapping[str, Any]]) -> None:
    """Put each corrected figure on its metric's entry (the first filter that has the metric) in a results
    document, as ``judge_corrected``."""
    tasks = (results.get("assay") or {}).get("tasks") or {}
    for (task, metric), figure in corrections.items():
        for by_metric in ((tasks.get(task) or {}).get("filters") or {}).values():
            if metric in by_metric:
                by_metric[metric]["judge_corrected"] = dict(figure)
                break


def correction_note(task: str, metric: str, entry: Mapping[str, Any]) -> str | None:
    """The line a table shows for a metric's corrected figure (None without one)."""
    fig = entry.get("judge_corrected")
    if not isinstance(fig, Mapping):
        return None
    if "refused" in fig:
        return f"{task}/{metric}: not corrected by people's labels: {fig['refused']}"
    lo, hi = fig["ci"]
    return (
        f"{task}/{metric}: judge {fig['of']} {fig['judge_mean']:.3f}; corrected by {fig['n_labelled']} people's "
        f"labels ({fig['method'].upper()}, {fig['n_unlabelled']} unlabelled): {fig['estimate']:.3f} "
        f"[{lo:.3f}, {hi:.3f}] at {100 * fig['confidence']:g}%"
    )
