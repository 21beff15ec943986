"""The results table in markdown, JSON and the terminal, from a run or a results document."""

import json

import pytest

from assay.report.table import render_comparison, render_operational, render_table
from assay.results import compare_runs, load_run, write_results
from tests.results import runfactory as rf
from tests.results.test_results_writer import rich_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    path = rich_run(tmp_path_factory.mktemp("table") / "run")
    write_results(path, bootstrap_iters=500, prices={"org/test-model:v1": {"input": 1.0, "output": 2.0}})
    return load_run(path)


def test_markdown_table_has_lm_eval_columns_interval_and_errors(run):
    md = render_table(run, "markdown")
    lines = md.splitlines()
    assert lines[0] == "|Tasks|Version|Filter|n-shot|Metric|↑↓|Value|±|Stderr|95% CI|Scored|Errors|"
    e = run.results["assay"]["tasks"]["arith"]["filters"]["none"]["exact_match"]
    lo, hi = e["ci"]  # the headline interval: Wilson for this pass/fail metric
    errors = "2 (1 model, 1 evaluator; excluded)"  # a failed request and a judge error are told apart
    expected = f"|arith|1.0|none|0|exact_match|↑|0.8000|±|{e['stderr']:.4f}|[{lo:.4f}, {hi:.4f}]|5/7|{errors}|"
    assert expected in lines
    # algebra kept a value for every sample, but one repeat's verdict errored: that is shown, not hidden
    algebra = "|4/4|0 (1 evaluator verdict; excluded)|"
    assert any(line.startswith("|algebra|1.0|none|0|exact_match|") and line.endswith(algebra) for line in lines)
    # the second metric of a task leaves the name and version blank, as lm-eval does
    assert any(line.startswith("|||none|0|f1|↑|") for line in lines)
    assert "|judged|1.0|none|0|judge|↑|" in md and "|||none|0|length|↓|" in md
    assert "|Groups|Version|" in md and "|math||none|0|exact_match|↑|" in md
    assert "- arith: 1 of 8 selected samples have no record" in md
    assert "- arith: 1 sample(s) with model errors (first: arith-6: HTTP 500)" in md  # says why, not only how many


def test_json_table_carries_numbers(run):
    doc = json.loads(render_table(run, "json"))
    row = next(r for r in doc["rows"] if r["task"] == "arith")
    e = run.results["assay"]["tasks"]["arith"]["filters"]["none"]["exact_match"]
    assert row["value"] == e["mean"] and row["stderr"] == e["stderr"] and row["ci_bootstrap"] == e["ci_bootstrap"]
    assert row["ci"] == e["ci"] and row["ci_method"] == e["ci_method"]
    assert (row["n_scored"], row["n_errored"], row["error_policy"]) == (5, 2, "exclude")
    assert [r["task"] for r in doc["rows"] if r["group"]] == ["math", "math"]


def test_rich_table_text(run):
    text = render_table(run, "rich")
    for word in ("Tasks", "Version", "Filter", "n-shot", "Metric", "Stderr", "95% CI", "Errors", "Groups"):
        assert word in text
    assert "0.8000" in text and "2 (excluded)" in text and "\x1b[" not in text


def test_table_from_a_results_dict_and_unknown_format(run):
    assert render_table(run.results, "markdown") == render_table(run, "markdown")
    with pytest.raises(ValueError, match="unknown format 'html'"):
        render_table(run, "html")


def test_markdown_escapes_pipes_in_names(tmp_path):
    t = rf.task("a|b", n=1).model_copy(update={"config": {"task": "a|b", "alias": "a|b"}})
    rf.write_run(tmp_path, rf.manifest([t]), [rf.record("a|b", 0, {"exact_match": [rf.verdict(1.0)]})])
    md = render_table(load_run(tmp_path), "markdown")
    assert "|a\\|b|1.0|" in md


def test_interrupted_runs_are_flagged(tmp_path):
    man = rf.manifest([rf.task("qa", n=3)], status="interrupted", finished_at=None)
    rf.write_run(tmp_path, man, [rf.record("qa", 0, {"exact_match": [rf.verdict(1.0)]})])
    md = render_table(load_run(tmp_path), "markdown")
    assert "- run status: interrupted" in md and "- qa: 2 of 3 selected samples have no record" in md


def test_operational_table(run):
    md = render_operational(run, "markdown")
    assert md.splitlines()[0] == "|Role|Model|Requests|Errors|Cache hits|Tokens in|Tokens out|p50 s|p95 s|p99 s|Cost $|"
    assert "|model|org/test-model:v1|22|1|0|210|42|0.100|0.100|0.100|0.0003|" in md
    assert "|judge|judge-1|3|0|0|303|60|0.500|0.500|0.500|—|" in md
    assert "no price configured for: judge-1" in md
    assert json.loads(render_operational(run, "json"))["roles"]["judge"]["judge-1"]["requests"] == 3


def test_comparison_rendering(tmp_path):
    a = rf.binary_run(tmp_path / "a", [1] * 12)
    b = rf.binary_run(tmp_path / "b", [0] * 12)
    comp = compare_runs(a, b)
    md = render_comparison(comp, "markdown")
    assert md.splitlines()[0] == "|Task|Filter|Metric|A|B|Δ (B−A)|95% CI|Test|p|Shared|Worse|Better|Result|"
    assert "|qa|none|exact_match ↑|1.0000|0.0000|-1.0000|" in md and "significantly worse" in md
    assert "qa/exact_match,none regressed: qa-0, qa-1, qa-2" in md
    assert "significantly worse" in render_comparison(comp, "rich")
