"""A run's judge figures corrected by the people's labels (:mod:`assay.results.ppi`), beside the judge's own.

For each judge metric with labels in the run folder (``labels.jsonl``, written by ``assay view --label`` or
``assay judge import-labels``), each judged output is one item: the judge's value and, where people labelled it, the
people's (their most common label). Pass/fail labels correct the judge's pass rate; numeric labels its score, put on
the score's 0-1 scale from the judge's grade scale; label names (a categorical scale) have no mean to correct and are
refused with that reason. The figure lands on the metric's entry in ``results.json`` (``judge_corrected``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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
from assay.results.ppi import CorrectionRefused, corrected_difference, corrected_mean
from assay.store.jsonlfiles import LABELS
from assay.store.sampleindex import index_samples, iter_dicts


def _on_score_scale(jm: JudgeMetric, value: float, level: str) -> float:
    if level == "ordinal" and jm.scale.high > jm.scale.low:
        return (value - jm.scale.low) / (jm.scale.high - jm.scale.low)
    return value


@dataclass
class JudgedSamples:
    """One judge metric of a run per sample: the judge's value and, where people labelled it, theirs."""

    level: str
    of: str  # "pass rate" | "score"
    judge: dict[str, float]  # sample id -> the judge's value (over the labelled repeats where people labelled)
    people: dict[str, float]  # sample id -> the people's value (mean over its labelled repeats)


def _per_sample(jm: JudgeMetric) -> JudgedSamples:
    """Each sample's values (its repeats averaged, so repeats of one sample never count as independent)."""
    level = level_of(jm)
    if level == "categorical":
        raise CorrectionRefused("the labels name grades of a label scale: there is no mean to correct")
    items: dict[str, list[tuple[float, float | None]]] = {}
    for (sample_id, repeat), judged in jm.judged.items():
        f = float(judged.passed) if level == "binary" else judged.score
        people = jm.labels.get((sample_id, repeat))
        y = None
        if people:
            label = consensus([lab.label for lab in sorted(people.values(), key=lambda lab: lab.when)])
            y = 1.0 if label == "pass" else 0.0 if label == "fail" else _on_score_scale(jm, float(label), level)
        items.setdefault(sample_id, []).append((f, y))
    out = JudgedSamples(level, "pass rate" if level == "binary" else "score", {}, {})
    for sample_id, pairs in items.items():
        labelled = [(f, y) for f, y in pairs if y is not None]
        use = labelled or pairs
        out.judge[sample_id] = sum(f for f, _ in use) / len(use)
        if labelled:
            out.people[sample_id] = sum(y for _, y in labelled if y is not None) / len(labelled)
    return out


def _correct(samples: JudgedSamples, confidence: float) -> dict[str, Any]:
    labelled = sorted(samples.people)
    figure = corrected_mean(
        [samples.people[s] for s in labelled],
        [samples.judge[s] for s in labelled],
        [f for s, f in samples.judge.items() if s not in samples.people],
        confidence=confidence,
    )
    return {**figure.to_dict(), "of": samples.of}


def judged_samples(manifest: RunManifest, run_dir: Path) -> dict[tuple[str, str], JudgedSamples | str]:
    """``(task, metric) ->`` the judge metric's values per sample, for each judge metric people labelled (the
    reason as text where the labels cannot be used); empty, without reading ``samples.jsonl``, without labels."""
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
    out: dict[tuple[str, str], JudgedSamples | str] = {}
    for jm in metrics:
        if jm.labels:
            try:
                out[(jm.task, jm.metric)] = _per_sample(jm)
            except CorrectionRefused as err:
                out[(jm.task, jm.metric)] = str(err)
    return out


def judge_corrections(
    manifest: RunManifest, run_dir: Path, *, confidence: float = 0.95
) -> dict[tuple[str, str], dict[str, Any]]:
    """``(task, metric) -> figure`` for each judge metric people labelled (``{"refused": why}`` where the labels
    cannot correct it); empty, without reading ``samples.jsonl``, when the run has no labels."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for key, samples in judged_samples(manifest, run_dir).items():
        try:
            if isinstance(samples, str):
                raise CorrectionRefused(samples)
            out[key] = _correct(samples, confidence)
        except CorrectionRefused as err:
            out[key] = {"refused": str(err)}
    return out


def corrected_paired_difference(
    a: JudgedSamples, b: JudgedSamples, paired_ids: list[str], *, confidence: float = 0.95
) -> dict[str, Any]:
    """The people-scale difference ``B - A`` over the paired samples both runs' judge scored: labelled where
    people labelled the sample in both runs (``{"refused": why}`` where that cannot be done)."""
    try:
        if a.level != b.level:
            raise CorrectionRefused(f"the runs' labels differ in kind ({a.level} in A, {b.level} in B)")
        both = [s for s in paired_ids if s in a.judge and s in b.judge]
        labelled = [s for s in both if s in a.people and s in b.people]
        rest = [s for s in both if not (s in a.people and s in b.people)]
        figure = corrected_difference(
            [a.people[s] for s in labelled],
            [b.people[s] for s in labelled],
            [a.judge[s] for s in labelled],
            [b.judge[s] for s in labelled],
            [a.judge[s] for s in rest],
            [b.judge[s] for s in rest],
            confidence=confidence,
        )
    except CorrectionRefused as err:
        return {"refused": f"the difference is not corrected: {err}"}
    return {**figure.to_dict(), "of": a.of}


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


def difference_note(key: str, figure: Mapping[str, Any] | None) -> str | None:
    """The line a comparison shows for a judge metric's difference corrected by labels (None without one)."""
    if not isinstance(figure, Mapping):
        return None
    if "refused" in figure:
        return f"{key}: {figure['refused']}"
    lo, hi = figure["ci"]
    return (
        f"{key}: Δ by the judge {figure['judge_mean']:+.3f}; corrected by {figure['n_labelled']} sample(s) people "
        f"labelled in both runs ({figure['method'].upper()}, {figure['n_unlabelled']} unlabelled): "
        f"{figure['estimate']:+.3f} [{lo:+.3f}, {hi:+.3f}] at {100 * figure['confidence']:g}%"
    )
