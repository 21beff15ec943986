"""Which metric names lm-eval's results schema can hold: checked when a task is loaded and when results are written."""

from __future__ import annotations

SAMPLE_LOG_KEYS = frozenset(
    {"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics"}
    | {"doc_hash", "prompt_hash", "target_hash"}
)


def metric_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a metric in lm-eval's schema (its readers would misread it), or None."""
    if "," in name:
        return f"metric name {name!r} may not contain ',' (lm-eval's key syntax is 'metric,filter')"
    if name in SAMPLE_LOG_KEYS:
        return f"metric name {name!r} collides with a key of lm-eval's per-sample log"
    if name.endswith("_stderr"):
        return f"metric name {name!r} may not end in '_stderr' (lm-eval readers take it for another metric's stderr)"
    return None
