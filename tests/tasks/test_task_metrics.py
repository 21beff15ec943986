"""Metrics of a task: names and aliases, expected-value selection, filter restriction, direction."""

from __future__ import annotations

from typing import Any

import pytest

from assay import evaluators
from assay.errors import ConfigError, DataError
from assay.tasks import MetricSpec, Sample, Task

ROWS = [
    {"q": "Capital of France?", "a": "Paris", "alt": {"answers": ["Paris", "paris"]}, "lang": "en"},
    {"q": "Capital of Italy?", "a": "Rome", "alt": {"answers": ["Rome"]}, "lang": "it"},
]


def make(evaluators_: list[Any], **overrides: Any) -> Task:
    config: dict[str, Any] = {
        "name": "t",
        "dataset": [dict(r) for r in ROWS],
        "fields": {"input": "q", "target": "a", "metadata": {"language": "lang", "answers": "alt.answers"}},
        "evaluators": evaluators_,
    }
    config.update(overrides)
    return Task(**config)


def test_expected_selection():
    task = make(
        [
            "exact_match",
            {"name": "exact_match", "metric": "vs_none", "expected": "none"},
            {"name": "exact_match", "metric": "vs_doc", "expected": "doc.alt.answers"},
            {"name": "exact_match", "metric": "vs_meta", "expected": "metadata.language"},
        ]
    )
    sample = task.samples()[0]
    got = {m.name: task.expected_for(sample, m) for m in task.metrics}
    assert got == {"exact_match": "Paris", "vs_none": None, "vs_doc": ["Paris", "paris"], "vs_meta": "en"}
    assert task.expected_for(sample, "vs_doc") == ["Paris", "paris"]
    with pytest.raises(KeyError, match="no metric 'nope'"):
        task.expected_for(sample, "nope")


def test_expected_field_missing_on_a_later_row_is_a_data_error_naming_the_row():
    rows = [{"q": "a", "a": "b", "gold": "x"}, {"q": "c", "a": "d"}]
    task = make([{"name": "exact_match", "expected": "doc.gold"}], dataset=rows, fields={"input": "q", "target": "a"})
    first, second = task.samples()
    assert task.expected_for(first, task.metrics[0]) == "x"
    with pytest.raises(DataError, match=r"row 2: expected: 'doc.gold': the doc has no field 'gold'"):
        task.expected_for(second, task.metrics[0])


def test_expected_field_missing_on_the_first_row_fails_at_validation():
    expected = r"evaluators\[0\]\.expected: the first row \(task 't': row 1\) has no metadata field 'nope'"
    with pytest.raises(ConfigError, match=expected):
        make([{"name": "exact_match", "expected": "metadata.nope"}]).samples()


@pytest.mark.parametrize("value", ["targets", "doc.", "meta.x", 3])
def test_invalid_expected(value):
    with pytest.raises(ConfigError, match=r"evaluators\[0\]\.expected: expected must be 'target', 'none'"):
        make([{"name": "exact_match", "expected": value}])


def test_comparing_with_a_missing_target_suggests_fields_target():
    rows = [{"input": "a", "answer": "b"}]
    with pytest.raises(ConfigError, match=r"evaluators\[0\]: exact_match compares with the target.*fields\.target"):
        Task("t", rows, evaluators=["exact_match"]).samples()
    ok = Task("t", rows, evaluators=[{"name": "exact_match", "expected": "doc.answer"}])
    assert ok.expected_for(ok.samples()[0], "exact_match") == "b"


def test_duplicate_metric_names_are_named_with_the_fix():
    with pytest.raises(ConfigError) as err:
        make(["exact_match", {"name": "exact_match", "ignore_case": True}])
    message = str(err.value)
    assert "evaluators[1]: metric name 'exact_match' is used by evaluators[0] and evaluators[1]" in message
    assert "metric: <name>" in message
    task = make(["exact_match", {"name": "exact_match", "ignore_case": True, "metric": "em_ci"}])
    assert [m.name for m in task.metrics] == ["exact_match", "em_ci"]
    assert task.metric("em_ci").evaluator.to_config() == {"name": "exact_match", "ignore_case": True}


def test_metric_filters_restrict_to_named_pipelines():
    filters = [{"name": "raw"}, {"name": "clean", "steps": [{"type": "strip"}]}]
    task = make(
        [{"name": "exact_match", "filters": ["clean"]}, {"name": "exact_match", "metric": "all"}], filters=filters
    )
    only_clean, everywhere = task.metrics
    assert only_clean.filters == ("clean",) and not only_clean.applies_to("raw") and only_clean.applies_to("clean")
    assert everywhere.filters is None and everywhere.applies_to("raw")
    single = make([{"name": "exact_match", "filters": "clean"}], filters=filters)
    assert single.metrics[0].filters == ("clean",)
    with pytest.raises(ConfigError, match=r"evaluators\[0\]\.filters\[0\]: no filter pipeline 'claen' \(did you mean"):
        make([{"name": "exact_match", "filters": ["claen"]}], filters=filters)
    with pytest.raises(ConfigError, match=r"no filter pipeline 'clean'; defined: none"):
        make([{"name": "exact_match", "filters": ["clean"]}])


def test_higher_is_better_defaults_to_true_and_can_be_set():
    task = make(["exact_match", {"name": "exact_match", "metric": "err", "higher_is_better": False}])
    assert [m.higher_is_better for m in task.metrics] == [True, False]
    assert task.metrics[1].to_config() == {"name": "exact_match", "metric": "err", "higher_is_better": False}
    with pytest.raises(ConfigError, match=r"evaluators\[0\]\.higher_is_better: must be true or false"):
        make([{"name": "exact_match", "higher_is_better": "yes"}])


def test_metric_names_and_entries_are_checked():
    with pytest.raises(ConfigError, match=r"evaluators\[0\]\.metric: a metric name uses letters"):
        make([{"name": "exact_match", "metric": "a b"}])
    with pytest.raises(ConfigError, match=r"evaluators\[0\]: each evaluator needs a 'name'"):
        make([{"ignore_case": True}])
    with pytest.raises(ConfigError, match=r"evaluators\[0\]: an evaluator is a name or a mapping"):
        make([42])


def test_metric_spec_is_checked_and_serialises():
    ev = evaluators.get("exact_match")
    with pytest.raises(ValueError, match="expected must be"):
        MetricSpec("m", ev, expected="wrong")
    spec = MetricSpec("m", ev, expected="doc.x", filters=("f",))
    assert spec.to_config() == {"name": "exact_match", "metric": "m", "expected": "doc.x", "filters": ["f"]}


def test_expected_for_a_sample_built_outside_the_dataset():
    task = make([{"name": "exact_match", "expected": "doc.lang"}])
    assert len(task.samples()) == 2
    outside = Sample(doc_id=99, id="x", doc={"q": "?"}, input="?", target=None, metadata={})
    with pytest.raises(DataError, match=r"sample 'x': expected: 'doc.lang'"):
        task.expected_for(outside, task.metrics[0])
