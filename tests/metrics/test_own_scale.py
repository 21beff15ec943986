"""Metrics on their own scale (issue 28): a custom function may return any finite number with ``scale: own``; the
figure is reported as it is (never clipped into [0, 1]) with its interval, passes within ``at_least`` / ``at_most``,
and a compare of a lower-is-better metric calls a rise a regression."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

import assay
from assay.evaluators._custom import Custom
from assay.results.compare import compare_runs

LENGTH = '''
import math


def length(output):
    """Shorter is better."""
    return len(output)


def broken(output):
    """Fails to judge empty outputs."""
    return math.nan if not output else len(output)
'''


def _task(tmp_path: Path, evaluator: dict[str, object], n: int) -> Path:
    (tmp_path / "data.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "input": "x"}) + "\n" for i in range(n)))
    metric = {**evaluator, "expected": "none"}
    task = {"name": "own", "dataset": "data.jsonl", "template": "{{ input }}", "evaluators": [metric]}
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(task, sort_keys=False))
    return path


def _run(tmp_path: Path, task: Path, answers: list[str], name: str, **settings: object) -> assay.Run:
    preds = tmp_path / f"{name}.jsonl"
    preds.write_text("".join(json.dumps({"id": f"q{i}", "prediction": a}) + "\n" for i, a in enumerate(answers)))
    return assay.run(task, f"predictions:{preds}", output_dir=tmp_path / name, progress=False, **settings)


@pytest.fixture(autouse=True)
def _module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "own_metrics.py").write_text(LENGTH)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)


def test_a_metric_on_its_own_scale_is_reported_as_it_is_with_an_interval(tmp_path: Path) -> None:
    answers = ["a" * (7 * i) for i in range(30)]
    metric = {"name": "custom", "fn": "own_metrics:length", "scale": "own", "at_most": 100, "metric": "length"}
    task = _task(tmp_path, {**metric, "higher_is_better": False}, 30)
    run = _run(tmp_path, task, answers, "a")
    lengths = np.array([len(a) for a in answers], dtype=float)
    figures = run.results["results"]["own"]
    assert figures["length,none"] == pytest.approx(lengths.mean())  # 101.5: not clipped to 1
    assert figures["length_stderr,none"] == pytest.approx(lengths.std(ddof=1) / np.sqrt(lengths.size))
    entry = run.results["assay"]["tasks"]["own"]["filters"]["none"]["length"]
    low, high = entry["ci"]
    assert 1.0 < low < lengths.mean() < high < lengths.max()  # an interval on the metric's scale
    assert entry["higher_is_better"] is False
    assert entry["n_passed"] == int(np.count_nonzero(lengths <= 100))  # at_most: 100
    record = next(r for r in run.records if r.sample_id == "q20")
    verdict = record.filters["none"].verdicts["length"][0]
    assert verdict["score"] == 140 and verdict["passed"] is False and verdict["own_scale"] is True
    assert verdict["reason"] == "own_metrics:length gave 140, above the maximum 100"


def test_an_unusable_value_on_its_own_scale_is_an_error_never_a_zero(tmp_path: Path) -> None:
    task = _task(tmp_path, {"name": "custom", "fn": "own_metrics:broken", "scale": "own", "metric": "length"}, 4)
    run = _run(tmp_path, task, ["", "abc", "abcdef", "abcdefghi"], "a", max_error_rate=0.5)
    entry = run.results["assay"]["tasks"]["own"]["filters"]["none"]["length"]
    assert entry["n_scored"] == 3 and entry["n_eval_errors"] == 1
    assert entry["mean"] == pytest.approx(6.0)  # (3 + 6 + 9) / 3: the error is counted apart


def test_compare_calls_a_rise_of_a_lower_is_better_metric_a_regression(tmp_path: Path) -> None:
    metric = {"name": "custom", "fn": "own_metrics:length", "scale": "own", "metric": "length"}
    task = _task(tmp_path, {**metric, "higher_is_better": False}, 40)
    short = ["a" * (10 + i % 7) for i in range(40)]
    longer = [a + "b" * (5 + i % 3) for i, a in enumerate(short)]
    run_a, run_b = _run(tmp_path, task, short, "a"), _run(tmp_path, task, longer, "b")
    (row,) = compare_runs(run_a.path, run_b.path).metrics
    assert row.metric == "length" and row.higher_is_better is False
    assert row.diff == pytest.approx(np.mean([5 + i % 3 for i in range(40)]))
    assert row.significant and row.worse and not row.better


def test_own_scale_options_are_checked() -> None:
    with pytest.raises(ValueError, match="set scale: own"):
        Custom(fn=len, at_least=3)
    with pytest.raises(ValueError, match="use at_least / at_most"):
        Custom(fn=len, scale="own", threshold=0.8)
    verdict = Custom(fn=len).evaluate("a long answer")
    assert verdict.is_error and "set scale: own" in (verdict.error or "")  # a unit-scale score refuses 13
    low = Custom(fn=len, scale="own", at_least=5).evaluate("abc")
    assert not low.passed and low.score == 3.0 and low.reason == "builtins:len gave 3, below the minimum 5"
