"""The calibration gate: a judge with ``require_calibration: {min_kappa: 0.6, records: FILE}`` counts as calibrated
only when a calibration record of the same judge (equal identity id) reaches ``min_kappa``; otherwise its figures
are marked *uncalibrated* (results.json, the table, the HTML report) and ``report --fail-under`` on it warns.

Records are read from the run folder's ``calibrations.jsonl`` and from ``records`` (a project-level file) when given;
the task made ``records`` absolute when it was loaded (relative to the task file's folder, as datasets are), so a
report says the same wherever it is typed. A judge without ``require_calibration`` is not gated: nothing is marked.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assay.errors import AssayError
from assay.evaluators.judge.calibration.identity import is_judge, judge_identity
from assay.evaluators.judge.calibration.records import best_match, headline_kappa, read_records, run_records
from assay.record import RunManifest


def requirement(evaluator: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``require_calibration`` of a judge evaluator config (min_kappa filled in), or None when it has none."""
    need = evaluator.get("require_calibration")
    if not is_judge(evaluator) or not isinstance(need, Mapping):
        return None
    return {"min_kappa": float(need.get("min_kappa", 0.6)), "records": need.get("records")}


def mark(evaluator: Mapping[str, Any], run_dir: Path) -> dict[str, Any] | None:
    """The calibration mark of one gated judge metric: ``calibrated`` (bool), ``judge_id``, ``min_kappa``, the
    matching ``record`` (its κ, run and time) or ``reason`` why none matches; None for a metric not gated."""
    need = requirement(evaluator)
    if need is None:
        return None
    judge_id = judge_identity(evaluator)["id"]
    out: dict[str, Any] = {"required": True, "judge_id": judge_id, "min_kappa": need["min_kappa"]}
    records: list[dict[str, Any]] = []
    problems: list[str] = []
    sources: list[tuple[str, Any]] = [("run", lambda: run_records(run_dir))]
    if need["records"]:
        path = Path(str(need["records"]))
        out["records"] = str(path)
        if path.is_file():
            sources.append((str(path), lambda: read_records(path)))
        else:
            problems.append(f"records file {path} not found")
    for _, read in sources:
        try:
            records.extend(read())
        except AssayError as err:  # a damaged records file never passes the gate, and never stops a report
            problems.append(str(err))
    found = best_match(records, judge_id, need["min_kappa"])
    out["calibrated"] = found is not None
    if found is not None:
        out["record"] = {
            "kappa": headline_kappa(found),
            "run_id": found.get("run_id"),
            "created_at": found.get("created_at"),
            "n_items": found.get("n_items"),
        }
        return out
    mine = [headline_kappa(r) for r in records if r.get("judge_id") == judge_id]
    best = max((k for k in mine if k is not None), default=None)
    if best is not None:
        reason = f"its best calibration has κ {best:.3f} < {need['min_kappa']:g}"
    elif mine:
        reason = "its calibration has no κ (labels of a continuous score)"
    else:
        reason = f"no calibration record of judge {judge_id}"
    out["reason"] = "; ".join([reason, *problems])
    return out


def run_marks(manifest: RunManifest, run_dir: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The calibration mark of every gated judge metric of a run, by (task, metric)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for task in manifest.tasks:
        for metric in task.metrics:
            found = mark(metric.evaluator, Path(run_dir))
            if found is not None:
                out[(task.name, metric.name)] = found
    return out


def apply_marks(results: dict[str, Any], marks: Mapping[tuple[str, str], Mapping[str, Any]]) -> list[str]:
    """Put each mark on its metric's figures (``assay.tasks[t].filters[f][m].calibration``) in a results document;
    returns the ``task/metric`` keys that are uncalibrated."""
    tasks = (results.get("assay") or {}).get("tasks") or {}
    uncalibrated: list[str] = []
    for (task, metric), found in marks.items():
        for by_metric in ((tasks.get(task) or {}).get("filters") or {}).values():
            if metric in by_metric:
                by_metric[metric]["calibration"] = dict(found)
        if not found.get("calibrated"):
            uncalibrated.append(f"{task}/{metric}")
    return uncalibrated


def uncalibrated_note(entry: Mapping[str, Any]) -> str | None:
    """Why a metric's figures are uncalibrated (None when it is calibrated or not gated)."""
    found = entry.get("calibration")
    if not isinstance(found, Mapping) or found.get("calibrated", True):
        return None
    return str(found.get("reason") or "no matching calibration record")
