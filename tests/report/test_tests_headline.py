"""headline: tests (promptfoo's view, issue 40): a task whose samples are tests, judged by row_checks over each row's
own assertions and run by `assay run` against the OpenAI test server (3 tests pass, 2 fail, 1 errors): results.json's
tests block (counts, the pass rate's Wilson interval against the textbook formula, the mean score, the named
metrics), the terminal table, markdown and JSON, the task key's checks, and the drawer's assertion rows."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from assay.errors import ConfigError
from assay.testing.server import OpenAITestServer
from tests.e2e.e2e_support import only_run_dir, run_cli, sample_lines

PAYLOAD = '<script>window.__pwned = 1; alert(1)</script><img src=x onerror="window.__pwned = 2">'
REPLIES = {
    "a": "Yarr matey",
    "b": "hello there",
    "c": PAYLOAD,  # the python check below fails with the output as its reason: untrusted text in the drawer
    "d": "whatever",
    "e": "Arr, yarr",
    "f": "Ahoy",
}
ROWS: list[dict[str, Any]] = [
    {"id": "t1", "q": "a", "assert": [
        {"type": "icontains", "value": "yarr", "metric": "pirate"}, {"type": "contains", "value": "matey"}]},
    {"id": "t2", "q": "b", "assert": [{"type": "icontains", "value": "yarr", "metric": "pirate"}]},
    {"id": "t3", "q": "c", "assert": [
        {"type": "python", "value": "{'pass': False, 'score': 0.25, 'reason': output}", "metric": "tone"}]},
    {"id": "t4", "q": "d", "assert": [{"type": "no-such-check", "value": "x"}]},  # cannot run: the test errors
    {"id": "t5", "q": "e", "assert": [
        {"type": "icontains", "value": "yarr", "metric": "pirate"}, {"type": "python", "value": "len(output) > 3",
                                                                     "metric": "tone"}]},
    {"id": "t6", "q": "f", "assert": [{"type": "starts-with", "value": "Ahoy"}]},
]  # fmt: skip
# by hand: t1 t5 t6 pass, t2 t3 fail, t4 errors; scores 1, 0, 0.25, 1, 1 (t4 has none)
PASSED, FAILED, ERRORED = 3, 2, 1
MEAN_SCORE = (1 + 0 + 0.25 + 1 + 1) / 5
NAMED = {"pirate": ((1 + 0 + 1) / 3, 3), "tone": ((0.25 + 1) / 2, 2)}


def wilson_by_hand(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval from its textbook formula (Wilson 1927), written apart from assay's."""
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def write_task(folder: Path, **extra: Any) -> Path:
    task = {
        "name": "pirate",
        "dataset": ROWS,
        "fields": {"id": "id", "input": "q"},
        "template": "{{ q }}",
        "evaluators": [{"name": "row_checks"}],
        "headline": "tests",
        **extra,
    }
    path = folder / "pirate.yaml"
    path.write_text(yaml.safe_dump(task, sort_keys=False))
    return path


def reply(request: dict[str, Any]) -> str:
    return REPLIES[request["messages"][-1]["content"]]


def run_task(folder: Path, *args: str) -> tuple[Any, Path | None]:
    """``assay run`` of the task against the test server (model ``m``); the process and its run folder."""
    folder.mkdir(parents=True, exist_ok=True)
    task = write_task(folder)
    with OpenAITestServer(reply) as server:
        cmd = ["run", str(task), "--model", "openai:m", "--base-url", server.base_url, "-o", "runs", *args]
        proc = run_cli(*cmd, cwd=folder, timeout=300)
    runs = folder / "runs"
    return proc, only_run_dir(runs) if runs.is_dir() else None


# ---- the tests ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    """One run of the task (errors allowed up to half the samples), shared by the tests of this module."""
    proc, run_dir = run_task(tmp_path_factory.mktemp("headline"), "--max-error-rate", "0.5")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert run_dir is not None
    return proc, run_dir


def _tests_block(run_dir: Path) -> dict[str, Any]:
    results = json.loads((run_dir / "results.json").read_text())
    return results["assay"]["tasks"]["pirate"]["filters"]["none"]["row_checks"]["tests"]


def test_results_json_counts_the_tests_and_gives_the_pass_rate_its_wilson_interval(finished) -> None:
    _, run_dir = finished
    t = _tests_block(run_dir)
    assert (t["passed"], t["failed"], t["errored"], t["n_not_applicable"]) == (PASSED, FAILED, ERRORED, 0)
    assert t["pass_rate"] == pytest.approx(3 / 5)  # passed / (passed + failed): the errored test is apart
    lo, hi = wilson_by_hand(3, 5)
    assert t["ci"] == pytest.approx([lo, hi], abs=1e-12)
    assert [round(v, 4) for v in t["ci"]] == [0.2307, 0.8824]  # the published 95% Wilson interval of 3/5
    assert (t["ci_method"], t["confidence"]) == ("wilson", 0.95)
    assert t["mean_score"] == pytest.approx(MEAN_SCORE)
    named = t["named_scores"]
    assert list(named) == list(NAMED)
    for name, (mean, n) in NAMED.items():
        assert named[name] == {"mean": pytest.approx(mean), "n": n}
    assert (t["metric"], t["filter"]) == ("row_checks", "none")
    # the entry's own keys are as they were: the block is beside them
    results = json.loads((run_dir / "results.json").read_text())
    entry = results["assay"]["tasks"]["pirate"]["filters"]["none"]["row_checks"]
    assert (entry["n_passed"], entry["n_scored"], entry["n_errored"]) == (3, 5, 1)
    assert entry["mean"] == pytest.approx(MEAN_SCORE)
    assert results["results"]["pirate"]["row_checks,none"] == pytest.approx(MEAN_SCORE)
    # run.json records the key with the metric it resolved to, so a report of the folder reads it
    config = json.loads((run_dir / "run.json").read_text())["tasks"][0]["config"]
    assert config["headline"] == {"tests": "row_checks"}


def test_the_terminal_leads_with_the_tests_of_each_prompt_and_provider(finished) -> None:
    proc, _ = finished
    out = proc.stdout
    assert out.index("Tests") < out.index("row_checks")  # the tests table comes before the metrics table
    assert "3 passed · 2 failed · 1 errored" in out
    assert "60.00%" in out and "[23.07%, 88.24%]" in out
    assert f"{MEAN_SCORE:.4f}" in out
    assert "pirate 0.6667 (3 tests), tone 0.6250 (2 tests)" in out
    row = next(line for line in out.splitlines() if "3 passed" in line)
    assert "pirate" in row and " m " in row  # the prompt (task) and the provider (model) of the row
    assert "CI: Wilson score interval" in " ".join(out.split())  # how the interval was computed is said


def test_report_gives_the_same_headline_as_markdown_and_json(finished, tmp_path: Path) -> None:
    _, run_dir = finished
    md = run_cli("report", str(run_dir), "--format", "markdown", cwd=tmp_path)
    assert md.returncode == 0, md.stdout + md.stderr
    lines = md.stdout.splitlines()
    header = lines.index("|Task|Model|Tests|Pass rate|95% CI|Mean score|Named metrics|")
    assert lines[header + 2] == (
        "|pirate|m|3 passed · 2 failed · 1 errored|60.00%|[23.07%, 88.24%]|0.6500|"
        "pirate 0.6667 (3 tests); tone 0.6250 (2 tests)|"
    )
    assert md.stdout.index("|Task|Model|Tests|") < md.stdout.index("|Tasks|Version|")
    js = run_cli("report", str(run_dir), "--format", "json", cwd=tmp_path)
    assert js.returncode == 0, js.stderr
    (row,) = json.loads(js.stdout)["runs"][0]["rows"]
    assert (row["tests"]["passed"], row["tests"]["failed"], row["tests"]["errored"]) == (3, 2, 1)
    assert row["value"] == pytest.approx(MEAN_SCORE)  # the metric's own row keeps its figures


def test_the_exit_code_keeps_its_error_rule(tmp_path: Path) -> None:
    """Failed tests are figures, not a failed run: exit 0; an errored test counts against --max-error-rate as any
    errored sample does (1 of 6 is above the default 10 %: exit 1, the table still printed)."""
    proc, run_dir = run_task(tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert run_dir is not None and _tests_block(run_dir)["errored"] == 1


def test_the_drawer_data_lists_each_assertion_of_a_test(finished) -> None:
    from assay.report.samples import pack_sample
    from assay.results import load_run

    _, run_dir = finished
    run = load_run(run_dir)
    records = {r.sample_id: r for r in run.task_records("pirate")}

    def assertions(sample_id: str) -> list[list[Any]]:
        """(type, passed, score, reason, metric) of each assertion the drawer lists."""
        packed = pack_sample(records[sample_id], 0, 0, lambda m, f: 0)  # type: ignore[arg-type]
        (verdict,) = packed["v"]
        return [(a + [None] * 5)[:5] for a in verdict[3][0][6]]

    t1 = assertions("t1")  # a passing check's reason is the checker's own words: not pinned here
    assert [[a[0], a[1], a[2], a[4]] for a in t1] == [["icontains", 1, 1, "pirate"], ["contains", 1, 1, None]]
    assert assertions("t3") == [["python", 0, 0.25, PAYLOAD, "tone"]]  # the reason as data, never markup
    raw = sample_lines(run_dir)
    errored = next(r for r in raw if r["sample_id"] == "t4")
    assert errored["filters"]["none"]["verdicts"]["row_checks"][0]["error"]


def test_pack_assertions_nests_assert_sets_and_reads_pass_or_passed() -> None:
    from assay.report import samples

    details = {
        "checks": [
            {"type": "assert-set", "pass": False, "score": 0.5, "weight": 2, "checks": [
                {"type": "equals", "passed": True, "score": 1.0, "metric": "exact"},
                {"type": "contains", "passed": False, "score": 0.0, "reason": "no 'x' in output"}]},
            {"type": "regex", "pass": True, "score": 1},
        ],
        "threshold": None,
        "named_scores": {"exact": 1.0},
    }  # fmt: skip
    assert samples.pack_assertions(details) == [
        [
            "assert-set",
            0,
            0.5,
            None,
            None,
            2,
            [["equals", 1, 1, None, "exact"], ["contains", 0, 0, "no 'x' in output"]],
        ],
        ["regex", 1, 1],
    ]
    assert samples.pack_assertions({"score": 1}) is None and samples.pack_assertions("text") is None
    many = {"checks": [{"type": "equals", "passed": True, "score": 1}] * (samples.MAX_ASSERTIONS + 5)}
    packed = samples.pack_assertions(many)
    assert packed is not None and len(packed) == samples.MAX_ASSERTIONS + 1
    assert packed[-1][0] == "…" and "5 more checks" in packed[-1][3]


def test_named_scores_come_from_the_details_and_a_sharded_scan_gives_the_same_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``details.named_scores`` (as promptfoo's namedScores) is averaged per test over its judged repeats, then over
    the tests that have it; errored verdicts add nothing; a scan split over processes gives the same bytes."""
    from assay.results import shardscan, write_results
    from tests.results.runfactory import manifest, record, task, verdict, write_run

    def v(score: float, passed: bool, named: dict[str, float]) -> dict[str, Any]:
        return verdict(score, passed, details={"checks": [], "named_scores": named})

    recs = []
    for i in range(40):  # two repeats per test; every 5th test's second repeat errored, every 7th errored whole
        first = v(1.0 if i % 3 else 0.0, bool(i % 3), {"acc": i / 40, "tone": 0.5})
        second = v(1.0, True, {"acc": 1.0}) if i % 5 else verdict(None, error="judge down")
        vs = [verdict(None, error="judge down")] * 2 if i % 7 == 0 else [first, second]
        recs.append(record("pf", i, {"row_checks": vs}, texts=("a", "b")))
    info = task("pf", (("row_checks", True),), repeats=2, n=40, config={"headline": "tests"})
    run = write_run(tmp_path / "run", manifest([info]), recs)
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    shutil.copytree(run, serial)
    shutil.copytree(run, parallel)
    doc = write_results(serial, processes=1)
    t = doc["assay"]["tasks"]["pf"]["filters"]["none"]["row_checks"]["tests"]
    judged = [i for i in range(40) if i % 7]
    acc = [((i / 40 + 1.0) / 2 if i % 5 else i / 40) for i in judged]
    assert t["named_scores"]["acc"]["n"] == len(judged)
    assert t["named_scores"]["acc"]["mean"] == pytest.approx(math.fsum(acc) / len(acc))
    assert t["named_scores"]["tone"] == {"mean": 0.5, "n": len(judged)}
    passed = sum(1 for i in judged if i % 3)  # every judged repeat passed
    assert (t["passed"], t["failed"], t["errored"]) == (passed, len(judged) - passed, 40 - len(judged))

    monkeypatch.setattr(shardscan, "MIN_BYTES_PER_PROCESS", 1)
    monkeypatch.setattr(shardscan, "other_threads", lambda: False)
    if not shardscan.fork_available():
        pytest.skip("forked scans need Linux")
    merged: list[bool] = []
    scan = shardscan.scan_sharded
    monkeypatch.setattr(shardscan, "scan_sharded", lambda *a, **k: merged.append(True) or scan(*a, **k))
    sharded = write_results(parallel, processes=3)
    assert merged
    for d in (doc, sharded):
        d["assay"].pop("results_seconds")
    assert json.dumps(sharded, sort_keys=True) == json.dumps(doc, sort_keys=True)


def test_the_task_key_names_its_metric_and_is_not_hashed(tmp_path: Path) -> None:
    from assay.tasks import Task

    path = write_task(tmp_path)
    config = yaml.safe_load(path.read_text())
    task = Task.from_config(config)
    assert task.tests_metric == "row_checks"
    assert task.to_config()["headline"] == {"tests": "row_checks"}
    assert Task.from_config(task.to_config()).tests_metric == "row_checks"
    plain = Task.from_config({k: v for k, v in config.items() if k != "headline"})
    assert plain.tests_metric is None and "headline" not in plain.to_config()
    assert plain.hash == task.hash  # how results are read, not what is asked or judged
    assert Task.from_config({**config, "headline": "metrics"}).tests_metric is None
    two = {
        **config,
        "evaluators": [{"name": "row_checks"}, {"name": "contains", "substrings": ["yarr"], "expected": "none"}],
    }
    with pytest.raises(ConfigError, match=r"2 metrics \(row_checks, contains\); name the one .*headline: \{tests:"):
        Task.from_config(two)
    assert Task.from_config({**two, "headline": {"tests": "contains"}}).tests_metric == "contains"
    with pytest.raises(ConfigError, match="no metric 'exact_match' in this task; its metrics: row_checks, contains"):
        Task.from_config({**two, "headline": {"tests": "exact_match"}})
    with pytest.raises(ConfigError, match="headline is 'metrics' \\(the default\\), 'tests' or \\{tests: METRIC\\}"):
        Task.from_config({**config, "headline": "pass_rate"})


def test_a_run_without_the_key_shows_no_tests_and_keeps_its_results(tmp_path: Path) -> None:
    from assay.report.table import render_table
    from assay.results import write_results
    from tests.results.runfactory import binary_run

    run = binary_run(tmp_path / "plain", [1, 0, 1, None])
    doc = write_results(run)
    assert "tests" not in doc["assay"]["tasks"]["qa"]["filters"]["none"]["exact_match"]
    for fmt in ("rich", "markdown"):
        text = render_table(doc, fmt)
        assert "passed ·" not in text and "Pass rate" not in text and "Tests:" not in text


def test_a_matrix_cell_reads_the_tests_in_two_lines() -> None:
    """What a matrix of runs (prompt × provider) shows in each cell: :func:`assay.report.table.tests_cell`."""
    from assay.report.table import tests_cell

    block = {
        "passed": 1, "failed": 2, "errored": 0, "pass_rate": 1 / 3, "ci": list(wilson_by_hand(1, 3)),
        "mean_score": 2 / 3, "named_scores": {"accuracy": {"mean": 0.75, "n": 4}},
    }  # fmt: skip
    assert tests_cell(block) == (
        "1 passed · 2 failed · 0 errored\n33.33% [6.15%, 79.23%] · mean 0.6667\naccuracy 0.7500 (4 tests)"
    )


def test_the_run_page_escapes_what_the_tests_row_shows(tmp_path: Path) -> None:
    """Named metrics are names from a task's checks: the page's autoescaping shows them as text."""
    from assay.report.html import render_html
    from tests.results.runfactory import manifest, record, task, verdict, write_run

    named = {"<b>bold</b>": 1.0}
    recs = [record("pf", i, {"row_checks": [verdict(1.0, details={"named_scores": named})]}) for i in range(3)]
    info = task("pf", (("row_checks", True),), n=3, config={"headline": "tests"})
    html = render_html([write_run(tmp_path / "run", manifest([info]), recs)])
    assert "<b>bold</b>" not in html
    assert 'data-name="&lt;b&gt;bold&lt;/b&gt;"' in html and "&lt;b&gt;bold&lt;/b&gt; <b>1.0000</b>" in html
    assert 'data-field="passed" data-value="3"' in html
