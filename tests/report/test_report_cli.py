"""``assay report``: tables from disk, --fail-under exit codes, --junit, --html, two runs."""

import json
import sys
import types

import pytest
from click.testing import CliRunner

import assay.report
from assay.commands.report import parse_threshold, report_command
from assay.results import write_results
from tests.results import runfactory as rf
from tests.results.test_results_writer import rich_run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    path = rich_run(tmp_path_factory.mktemp("cli") / "run")
    write_results(path, bootstrap_iters=200)
    return str(path)


def invoke(*args):
    return CliRunner().invoke(report_command, [str(a) for a in args])


def test_report_prints_the_table_again(run_dir):
    res = invoke(run_dir, "--format", "markdown")
    assert res.exit_code == 0, res.output
    assert "|Tasks|Version|Filter|n-shot|Metric|↑↓|Value|±|Stderr|95% CI|Scored|Errors|" in res.stdout
    assert "|Role|Model|Requests|" in res.stdout
    rich = invoke(run_dir)
    assert rich.exit_code == 0 and "exact_match" in rich.stdout and "0.8000" in rich.stdout
    doc = json.loads(invoke(run_dir, "--format", "json").stdout)
    assert doc["runs"][0]["run_id"] == "run-test" and doc["runs"][0]["rows"][0]["task"] == "arith"


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        ("exact_match=0.9", 1),  # arith 0.8 and algebra 0.54 are below
        ("exact_match=0.5", 0),
        ("arith/exact_match=0.8", 0),
        ("arith/exact_match,none=0.81", 1),
        ("math/exact_match=0.7", 1),  # the group: (5 * 0.8 + 4 * 0.54) / 9 = 0.685
        ("judged/length=0.3", 1),
    ],
)
def test_fail_under_exit_codes(run_dir, spec, code):
    res = invoke(run_dir, "--fail-under", spec)
    assert res.exit_code == code, res.output
    if code:
        assert "FAIL " in res.stderr


def test_fail_under_message_and_all_errored_metric(run_dir, tmp_path):
    res = invoke(run_dir, "--fail-under", "arith/exact_match=0.9")
    assert "FAIL arith/exact_match,none = 0.8000 < 0.9" in res.stderr
    errored = rf.binary_run(tmp_path / "errored", [None, None])
    res = invoke(errored, "--fail-under", "exact_match=0.1")
    assert res.exit_code == 1 and "has no value (every sample errored)" in res.stderr


def test_fail_under_a_percentage_gets_a_hint(run_dir):
    res = invoke(run_dir, "--fail-under", "arith/exact_match=80")
    assert res.exit_code == 1
    assert "FAIL arith/exact_match,none = 0.8000 < 80 (scores run from 0 to 1: did you mean 0.8?)" in res.stderr
    res = invoke(run_dir, "--fail-under", "arith/exact_match=0.9")
    assert "did you mean" not in res.stderr


@pytest.mark.parametrize("spec", ["exact_match", "exact_match=high", "nosuch=0.5", "arith/nosuch=1", "/x=1", "x,=1"])
def test_fail_under_usage_errors_exit_2(run_dir, spec):
    res = invoke(run_dir, "--fail-under", spec)
    assert res.exit_code == 2, res.output


def test_unknown_metric_lists_the_known_ones(run_dir):
    res = invoke(run_dir, "--fail-under", "nosuch=0.5")
    assert "known: " in res.output and "arith/exact_match,none" in res.output


def test_parse_threshold():
    t = parse_threshold("arith/exact_match,strict=0.75")
    assert (t.task, t.metric, t.filter, t.value) == ("arith", "exact_match", "strict", 0.75)
    t = parse_threshold("acc=1")
    assert (t.task, t.metric, t.filter, t.value) == (None, "acc", None, 1.0)


def test_junit_option_writes_the_file(run_dir, tmp_path):
    out = tmp_path / "report.xml"
    res = invoke(run_dir, "--junit", out, "--format", "markdown")
    assert res.exit_code == 0 and out.is_file()
    assert "JUnit: 21 tests, 6 failures, 3 errors" in res.stderr


def test_html_without_the_html_module_is_a_clear_usage_error(run_dir, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "assay.report.html", None)
    monkeypatch.delattr(assay.report, "html", raising=False)
    res = invoke(run_dir, "--html", tmp_path / "r.html")
    assert res.exit_code == 2 and "HTML report is not available" in res.output
    assert not (tmp_path / "r.html").exists()


def test_html_calls_the_html_writer_with_runs_and_comparison(run_dir, tmp_path, monkeypatch):
    calls = []
    fake = types.ModuleType("assay.report.html")
    fake.write_html = lambda runs, path, compare=None, max_samples=None: calls.append(
        (runs, path, compare, max_samples)
    )
    monkeypatch.setitem(sys.modules, "assay.report.html", fake)
    monkeypatch.setattr(assay.report, "html", fake, raising=False)
    other = rich_run(tmp_path / "other")
    res = invoke(run_dir, other, "--html", tmp_path / "r.html", "--format", "markdown")
    assert res.exit_code == 0, res.output
    assert "## B vs A" in res.stdout and "|Task|Filter|Metric|A|B|" in res.stdout
    every_sample = invoke(run_dir, "--html", tmp_path / "all.html", "--html-samples", "0", "--format", "markdown")
    assert every_sample.exit_code == 0, every_sample.output
    (runs, path, compare, max_samples), (_, _, _, every) = calls
    assert max_samples == 20_000 and every == 0  # the page's budget of samples a run, and "all of them"
    assert [r.path.name for r in runs] == ["run", "other"] and path == tmp_path / "r.html"
    assert compare is not None and compare.run_a == "run" and compare.run_b == "other"


def test_two_runs_and_too_many(run_dir, tmp_path):
    b = rf.binary_run(tmp_path / "b", [0] * 5, task_name="arith")
    res = invoke(run_dir, b)
    assert res.exit_code == 0 and "B vs A" in res.stdout
    res = invoke(run_dir, b, b)
    assert res.exit_code == 2 and "expected one or two run folders" in res.output
    res = invoke(tmp_path / "b" / "nope")
    assert res.exit_code == 2


# ------------------------------------------------------------------------------------------- torn / corrupt samples


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    """A finished run made by `assay run` over a predictions file (10 samples, results.json written)."""
    from tests.e2e.e2e_support import only_run_dir, run_cli, write_task

    root = tmp_path_factory.mktemp("real")
    task = write_task(root, 10)
    with open(root / "preds.jsonl", "w") as fh:
        for i in range(10):
            fh.write(json.dumps({"id": f"q{i}", "prediction": str(2 * i + 1) if i % 2 else "no"}) + "\n")
    done = run_cli("run", str(task), "--model", "predictions:preds.jsonl", "-q", "-o", "runs", cwd=root)
    assert done.returncode == 0, done.stderr
    return only_run_dir(root / "runs")


def damaged(real_run, tmp_path, how):
    """A copy of the run whose samples.jsonl is torn (its last line cut) or corrupt (line 4 cut short)."""
    import shutil

    copy = tmp_path / how
    shutil.copytree(real_run, copy)
    samples = copy / "samples.jsonl"
    data = samples.read_bytes()
    if how == "torn":
        samples.write_bytes(data[:-40])
    else:
        lines = data.split(b"\n")
        lines[3] = lines[3][:50]
        samples.write_bytes(b"\n".join(lines))
    return copy


@pytest.mark.parametrize("how", ["torn", "corrupt"])
@pytest.mark.parametrize("fmt", ["rich", "markdown", "json"])
def test_every_format_says_the_samples_file_is_torn_or_corrupt(real_run, tmp_path, how, fmt):
    run = damaged(real_run, tmp_path, how)
    res = invoke(run, "--format", fmt)
    assert res.exit_code == 0, res.output  # the figures of results.json, with the note
    text = res.stdout if fmt != "json" else " ".join(json.loads(res.stdout)["runs"][0]["notes"])
    text = " ".join(text.split())  # rich wraps long notes
    if how == "torn":
        assert f"samples.jsonl is torn: line 10 of {run / 'samples.jsonl'} is an unfinished record" in text
        assert "holds 9 finished sample(s) but results.json counts 10" in text
    else:
        assert f"samples.jsonl is corrupt: {run / 'samples.jsonl'}:4: invalid sample record" in text
    assert "the figures shown are from results.json" in text


def test_a_sound_run_has_no_samples_note(real_run):
    res = invoke(real_run, "--format", "json")
    assert res.exit_code == 0 and not any("samples.jsonl" in n for n in json.loads(res.stdout)["runs"][0]["notes"])


@pytest.mark.parametrize("option", ["--html", "--junit"])
def test_per_sample_outputs_of_a_corrupt_run_are_a_clean_error(real_run, tmp_path, option):
    from tests.e2e.e2e_support import run_cli

    run = damaged(real_run, tmp_path, "corrupt")
    out = tmp_path / "out.file"
    proc = run_cli("report", str(run), option, str(out), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{option}: {run / 'samples.jsonl'}:4: invalid sample record" in proc.stderr
    torn = damaged(real_run, tmp_path, "torn")  # a torn tail is skipped: the page / XML is written, with the note
    proc = run_cli("report", str(torn), option, str(out), cwd=tmp_path)
    assert proc.returncode == 0 and out.is_file(), proc.stderr
    assert "samples.jsonl is torn" in " ".join(proc.stdout.split())
