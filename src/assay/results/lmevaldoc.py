"""lm-eval's own figures put into a run's results document, for the run's lm-eval tasks and groups.

lm-eval's results code (:func:`assay.tasks.importers.lmeval.figures.lmeval_documents`) computes each task's
figure from the documents' values with the task's ``aggregation()``, its stderr, and its groups; those numbers
replace assay's in the lm-eval keys (``results``, ``groups``, ``versions``, ``n-shot``, ``higher_is_better``,
``n-samples``), and beside them, under the ``assay`` key, assay keeps its own interval (for a mean, its t or
Wilson interval; for another aggregation, a normal interval from lm-eval's stderr) and says which aggregation
lm-eval used."""

from __future__ import annotations

import math
from collections.abc import Mapping
from statistics import NormalDist
from typing import Any

from assay.results import schema

LM_KEYS = ("versions", "n-shot", "higher_is_better", "n-samples")


def _numbers(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A results entry as assay's schema keeps it: lm-eval's ``"N/A"`` stderrs left out (never a string)."""
    return {k: v for k, v in entry.items() if not (isinstance(v, str) and "," in k)}


def apply_lmeval(doc: dict[str, Any], lm: Mapping[str, Any], aggregations: Mapping[str, Mapping[str, str]]) -> None:
    """Put lm-eval's figures ``lm`` into ``doc`` (a results document): ``aggregations`` names each task's
    metrics' lm-eval aggregation (``{task: {metric: name}}``)."""
    confidence = float(doc["assay"].get("confidence", 0.95))
    results = lm.get("results") or {}
    groups = lm.get("groups") or {}
    for name, entry in results.items():
        doc["results"][name] = _numbers(entry)
    for name, entry in groups.items():
        doc.setdefault("groups", {})[name] = _numbers(entry)
    for g, subs in (lm.get("group_subtasks") or {}).items():
        if g in groups:
            doc.setdefault("group_subtasks", {})[g] = list(subs)
    for key in LM_KEYS:
        for name, value in (lm.get(key) or {}).items():
            doc.setdefault(key, {})[name] = value
    assay_tasks = doc["assay"].get("tasks") or {}
    for task, by_metric in aggregations.items():
        figures = results.get(task) or {}
        filters = (assay_tasks.get(task) or {}).get("filters") or {}
        for filter_name, metrics in filters.items():
            for metric, entry in metrics.items():
                _beside(entry, figures, metric, filter_name, by_metric.get(metric, "mean"), confidence)
    assay_groups = doc["assay"].setdefault("groups", {})
    for g, figures in groups.items():
        own = assay_groups.setdefault(g, {"subtasks": list((lm.get("group_subtasks") or {}).get(g, []))})
        own["weighting"] = "lm-eval"
        own_filters = own.setdefault("filters", {})
        for key in figures:
            metric, filter_name = schema.split_metric_key(key)
            if not filter_name or metric.endswith("_stderr") or key in ("name", "alias", "sample_len"):
                continue
            entry = own_filters.setdefault(filter_name, {}).setdefault(
                metric, {"metric": metric, "filter": filter_name}
            )
            _beside(entry, figures, metric, filter_name, "group", confidence)


def _beside(
    entry: dict[str, Any],
    figures: Mapping[str, Any],
    metric: str,
    filter_name: str,
    aggregation: str,
    confidence: float,
) -> None:
    """lm-eval's figure and stderr in an assay entry; for other than a mean, they are the headline."""
    value = figures.get(schema.metric_key(metric, filter_name))
    stderr = figures.get(schema.stderr_key(metric, filter_name))
    stderr = float(stderr) if isinstance(stderr, int | float) and math.isfinite(stderr) else None
    entry["lmeval"] = {"value": value, "stderr": stderr, "aggregation": aggregation}
    if aggregation == "mean" or not isinstance(value, int | float):
        return
    entry["mean"] = float(value)
    entry["stderr"] = stderr
    entry["aggregation"] = aggregation
    if stderr is not None:
        z = NormalDist().inv_cdf(0.5 + confidence / 2)
        entry["ci"] = [float(value) - z * stderr, float(value) + z * stderr]
        entry["ci_method"] = "normal_lmeval_stderr"
    else:
        entry["ci"], entry["ci_method"] = None, None
    entry["ci_t"] = entry["ci_bootstrap"] = None
