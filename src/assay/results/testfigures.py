"""The figures of a task whose samples are tests (``headline: tests``, promptfoo's view): tests passed, failed and
errored by one metric's ``passed``, the pass rate with its Wilson interval, and the named metrics the verdicts
carry (``details.named_scores``), each averaged over the tests that have it.

The block goes under the metric's entry in ``results.json`` (``assay.tasks[t].filters[f][metric]["tests"]``)::

    {"metric", "filter", "passed", "failed", "errored", "n_not_applicable", "pass_rate" (passed / (passed +
     failed), null without one), "ci": [lo, hi] (of the pass rate), "ci_method": "wilson", "confidence",
     "mean_score" (the metric's mean), "named_scores": {name: {"mean", "n"}}}

A test passes when every judged repeat of it passed (the entry's ``n_passed``); it is errored when it has no
value (every verdict errored, under the ``exclude`` policy; under ``as_zero`` its errors are scored 0 and it
counts as failed, as that policy says). Named scores are summed exactly (``math.fsum`` of the values kept per
test), so a scan split over processes gives the same figures as one.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping
from typing import Any

from assay.record import RunManifest, TaskInfo
from assay.results.intervals import WILSON, wilson_interval


def tests_metric(task: TaskInfo) -> str | None:
    """The metric judging each sample as a test (a task config's ``headline: tests`` / ``{tests: METRIC}``)."""
    headline = task.config.get("headline")
    if isinstance(headline, Mapping) and isinstance(headline.get("tests"), str):
        return str(headline["tests"])
    if headline == "tests" and len(task.metrics) == 1:
        return task.metrics[0].name
    return None


def _named(details: Any) -> dict[str, float]:
    """A verdict's named scores: ``details.named_scores``, else the mean score of the checks naming each metric
    (nested check sets included)."""
    if not isinstance(details, Mapping):
        return {}
    given = details.get("named_scores")
    if isinstance(given, Mapping):
        return {str(k): float(v) for k, v in given.items() if _finite(v)}
    sums: dict[str, list[float]] = {}

    def walk(checks: Any) -> None:
        for check in checks if isinstance(checks, list) else ():
            if not isinstance(check, Mapping):
                continue
            name, score = check.get("metric"), check.get("score")
            if isinstance(name, str) and isinstance(score, int | float) and _finite(score):
                sums.setdefault(name, []).append(float(score))
            walk(check.get("checks"))

    walk(details.get("checks"))
    return {name: math.fsum(values) / len(values) for name, values in sums.items()}


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


class NamedScores:
    """Per (task, filter) of a ``headline: tests`` task, each named score's value per test, gathered one record at
    a time (a test's value: the mean over its judged repeats); instances merge in order."""

    def __init__(self, manifest: RunManifest) -> None:
        self.metrics = {t.name: m for t in manifest.tasks if (m := tests_metric(t)) is not None}
        self.values: dict[tuple[str, str], dict[str, array[float]]] = {}

    def observe(self, rec: Mapping[str, Any]) -> None:
        """Take one record dict into account."""
        metric = self.metrics.get(rec.get("task"))  # type: ignore[arg-type]
        if metric is None:
            return
        for filter_name, fr in (rec.get("filters") or {}).items():
            per_test: dict[str, list[float]] = {}
            for v in (fr.get("verdicts") or {}).get(metric) or ():
                if v.get("error") is None and v.get("score") is not None:
                    for name, value in _named(v.get("details")).items():
                        per_test.setdefault(name, []).append(value)
            if per_test:
                by_name = self.values.setdefault((rec["task"], filter_name), {})
                for name, values in per_test.items():
                    by_name.setdefault(name, array("d")).append(math.fsum(values) / len(values))

    def merge(self, later: NamedScores) -> None:
        """Add what ``later`` observed (records after this one's)."""
        for key, by_name in later.values.items():
            mine = self.values.setdefault(key, {})
            for name, values in by_name.items():
                mine.setdefault(name, array("d")).extend(values)

    def figures(self, task: str, filter_name: str) -> dict[str, dict[str, Any]]:
        """``{name: {"mean", "n"}}`` for one task and filter, names in the order first seen."""
        return {
            name: {"mean": math.fsum(values) / len(values), "n": len(values)}
            for name, values in self.values.get((task, filter_name), {}).items()
            if len(values)
        }


def tests_block(entry: Mapping[str, Any], named: Mapping[str, Any], confidence: float) -> dict[str, Any]:
    """The tests figures of one metric's entry (its counts and mean) and its named scores."""
    passed = int(entry.get("n_passed") or 0)
    failed = int(entry.get("n_scored") or 0) - passed
    judged = passed + failed
    ci = wilson_interval(passed, judged, confidence)
    return {
        "metric": entry.get("metric"),
        "filter": entry.get("filter"),
        "passed": passed,
        "failed": failed,
        "errored": int(entry.get("n_errored") or 0),
        "n_not_applicable": int(entry.get("n_not_applicable") or 0),
        "pass_rate": passed / judged if judged else None,
        "ci": None if ci is None else [float(ci[0]), float(ci[1])],
        "ci_method": WILSON if ci is not None else None,
        "confidence": confidence,
        "mean_score": entry.get("mean"),
        "named_scores": dict(named),
    }
