"""Metric names that lm-eval's readers would misread are refused when the task is loaded, naming the key."""

from __future__ import annotations

import pytest

from assay.errors import ConfigError
from assay.tasks import load_task


def _task(evaluator: dict) -> dict:
    return {
        "name": "t",
        "dataset": {"rows": [{"q": "1", "a": "1"}]},
        "fields": {"input": "q", "target": "a"},
        "template": "{{ q }}",
        "evaluators": [evaluator],
    }


@pytest.mark.parametrize(
    ("metric", "fragment"),
    [("acc_stderr", "may not end in '_stderr'"), ("resps", "per-sample log"), ("doc_hash", "per-sample log")],
)
def test_reserved_metric_names_are_refused_at_load(metric, fragment):
    with pytest.raises(ConfigError, match=fragment) as err:
        load_task(_task({"name": "exact_match", "metric": metric}))
    assert "evaluators[0].metric" in str(err.value)
