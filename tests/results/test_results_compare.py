"""Paired comparison of two runs: McNemar on pass/fail, sign-flip on continuous, regressions listed."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from assay.commands.report import compare_command
from assay.results import compare_runs, load_run, stats
from tests.results import runfactory as rf

BASE = [1] * 20 + [0] * 10  # docs 0-19 pass in A
CAND = [1] * 10 + [0] * 10 + [1] + [0] * 8 + [None]  # docs 10-19 regress, doc 20 improves, doc 29 errors


@pytest.fixture
def pair(tmp_path):
    return rf.binary_run(tmp_path / "a", BASE), rf.binary_run(tmp_path / "b", CAND)


def test_mcnemar_on_pass_fail_metric(pair):
    comp = compare_runs(*pair)
    (m,) = comp.metrics
    assert (m.task, m.metric, m.filter, m.test) == ("qa", "exact_match", "none", "mcnemar")
    assert m.regressed == list(range(10, 20)) and m.improved == [20]
    assert m.n_shared == 29  # doc 29 errored in B: not paired, never scored as a failure
    assert m.unscored_in_b == [29] and m.unscored_in_a == []  # ... but counted and named, not dropped silently
    assert any("qa/exact_match,none: 1 sample(s) scored in a have no score in b" in w for w in comp.warnings)
    assert m.p_value == pytest.approx(2 * (1 + 11) / 2**11)
    assert m.diff == pytest.approx(-9 / 29)
    assert m.ci[0] < m.diff < m.ci[1] < 0
    # the means shown are of the outcomes the difference and the test are of (the 29 pairs both runs scored) ...
    assert m.mean_a == pytest.approx(20 / 29) and m.mean_b == pytest.approx(11 / 29)
    assert m.diff == m.mean_b - m.mean_a
    # ... each run's own mean over all it scored is kept beside them, and B's error is counted on its side
    assert m.run_mean_a == pytest.approx(20 / 30) and m.run_mean_b == pytest.approx(11 / 29)
    assert (m.errors, m.n_errored_a, m.n_errored_b) == ("exclude", 0, 1)
    assert m.worse and m.significant and not m.better
    assert comp.significantly_worse == [m]
    back = compare_runs(pair[1], pair[0]).metrics[0]
    assert back.better and not back.worse and back.regressed == [20]


def test_no_difference_is_not_significant(tmp_path):
    a = rf.binary_run(tmp_path / "a", [1, 0, 1, 1, 0, 1])
    b = rf.binary_run(tmp_path / "b", [1, 0, 1, 1, 0, 1])
    (m,) = compare_runs(a, b).metrics
    assert m.p_value == 1.0 and m.diff == 0.0 and not m.significant and m.regressed == [] and m.improved == []


def test_a_run_compared_with_itself_is_named_in_the_warnings(tmp_path):
    a = rf.binary_run(tmp_path / "a", [1, 0, 1])
    comp = compare_runs(a, a / ".")
    assert any("A and B are the same run folder" in w for w in comp.warnings)
    other = rf.binary_run(tmp_path / "b", [1, 0, 1])  # same run_id, another folder (e.g. a re-scored copy)
    assert not any("same run" in w for w in compare_runs(a, other).warnings)


def _continuous_run(path, values, metric="f1", hib=True, task_hash=None):
    t = rf.task("qa", ((metric, hib),), n=len(values))
    if task_hash:
        t = t.model_copy(update={"task_hash": task_hash})
    recs = [rf.record("qa", i, {metric: [rf.verdict(v, v >= 0.5)]}) for i, v in enumerate(values)]
    return rf.write_run(path, rf.manifest([t]), recs)


def test_sign_flip_on_continuous_metric(tmp_path):
    rng = np.random.default_rng(0)
    a_vals = rng.uniform(0.3, 0.7, 60).round(3)
    b_vals = np.clip(a_vals - rng.uniform(0.0, 0.1, 60).round(3), 0, 1)
    a = _continuous_run(tmp_path / "a", a_vals.tolist())
    b = _continuous_run(tmp_path / "b", b_vals.tolist())
    (m,) = compare_runs(a, b, iters=4000).metrics
    assert m.test == "sign_flip" and not m.exact
    assert m.diff == pytest.approx(float(np.mean(b_vals - a_vals)))
    assert m.p_value < 0.001 and m.worse
    assert set(m.regressed) == {i for i in range(60) if b_vals[i] < a_vals[i]}


def test_small_continuous_difference_uses_the_exact_test(tmp_path):
    a = _continuous_run(tmp_path / "a", [0.5, 0.5, 0.5, 0.5])
    b = _continuous_run(tmp_path / "b", [0.4, 0.3, 0.2, 0.5])
    (m,) = compare_runs(a, b).metrics
    p, exact = stats.sign_flip_test([-0.1, -0.2, -0.3], 10, np.random.default_rng(0))
    assert m.exact and exact and m.p_value == pytest.approx(p) == pytest.approx(0.25)
    assert not m.significant and m.regressed == [0, 1, 2]


def test_lower_is_better_metrics_flip_the_direction(tmp_path):
    a = _continuous_run(tmp_path / "a", [0.1] * 20, metric="length", hib=False)
    b = _continuous_run(tmp_path / "b", [0.3] * 20, metric="length", hib=False, task_hash="changed")
    comp = compare_runs(a, b)
    (m,) = comp.metrics
    assert m.diff == pytest.approx(0.2) and m.worse and m.regressed == list(range(20))
    assert any("differs between the runs" in w for w in comp.warnings)


def test_tasks_in_only_one_run_are_reported(tmp_path):
    a = rf.binary_run(tmp_path / "a", [1, 0], task_name="qa")
    b = rf.binary_run(tmp_path / "b", [1, 0], task_name="other")
    comp = compare_runs(a, b)
    assert comp.metrics == []
    assert sorted(comp.warnings) == [
        "task 'other' is only in b (B); not compared",
        "task 'qa' is only in a (A); not compared",
    ]


def test_compare_command_exit_codes(pair):
    a, b = (str(p) for p in pair)
    runner = CliRunner()
    worse = runner.invoke(compare_command, [a, b])
    assert worse.exit_code == 1, worse.output
    assert "significantly worse" in worse.output and "qa" in worse.output
    better = runner.invoke(compare_command, [b, a])
    assert better.exit_code == 0, better.output
    strict = runner.invoke(compare_command, [a, b, "--alpha", "0.001"])
    assert strict.exit_code == 0  # p = 0.0117 is not below 0.001
    as_json = runner.invoke(compare_command, [a, b, "--format", "json"])
    doc = json.loads(as_json.stdout)
    assert doc["metrics"][0]["regressed"] == list(range(10, 20)) and doc["metrics"][0]["test"] == "mcnemar"
    assert doc["metrics"][0]["regressed_ids"] == [f"qa-{i}" for i in range(10, 20)]  # by sample id too
    md = runner.invoke(compare_command, [a, b, "--format", "markdown"])
    assert md.stdout.startswith("|Task|") and "qa/exact_match,none regressed: qa-10, qa-11" in md.stdout


def test_compare_command_with_nothing_to_compare_is_a_usage_error(tmp_path):
    a = rf.binary_run(tmp_path / "a", [1, 0], task_name="qa")
    b = rf.binary_run(tmp_path / "b", [0, 0], task_name="other")
    result = CliRunner().invoke(compare_command, [str(a), str(b)])
    assert result.exit_code == 2, result.output
    assert "nothing to compare" in result.output and "task 'qa' is only in a (A)" in result.output


def test_compare_command_usage_errors(pair, tmp_path):
    runner = CliRunner()
    missing = runner.invoke(compare_command, [str(pair[0]), str(tmp_path / "nope")])
    assert missing.exit_code == 2
    (tmp_path / "empty").mkdir()
    not_run = runner.invoke(compare_command, [str(pair[0]), str(tmp_path / "empty")])
    assert not_run.exit_code == 2 and "not a run folder" in not_run.output
    bad_alpha = runner.invoke(compare_command, [str(pair[0]), str(pair[1]), "--alpha", "2"])
    assert bad_alpha.exit_code == 2


def test_compare_uses_each_runs_recorded_error_policy(tmp_path):
    from assay.results import write_results

    a = rf.binary_run(tmp_path / "a", [1, 1, 1, 1])
    b = rf.binary_run(tmp_path / "b", [1, 1, None, None])
    write_results(b, error_policy="as_zero", bootstrap_iters=10)
    comp = compare_runs(load_run(a), load_run(b))
    (m,) = comp.metrics
    assert m.n_shared == 4 and m.regressed == [2, 3]  # errors scored 0 in B, as its results say
    assert any("different error policies" in w for w in comp.warnings)
