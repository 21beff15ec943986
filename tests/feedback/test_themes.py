import json

import pytest

from assay.feedback.themes import ThemeReport, group_failures, reason_pattern
from assay.record import FilterRecord, MetricInfo, RunManifest, SampleRecord, TaskInfo
from assay.store.rundir import SampleWriter, write_manifest
from assay.store.sampleindex import SAMPLES
from assay.verdict import Verdict


@pytest.mark.parametrize(
    ("reason", "pattern"),
    [
        ("output 'Milan' does not equal expected 'Rome'", "output <text> does not equal expected <text>"),
        ('output "x" is not valid JSON at line 3', "output <text> is not valid JSON at line <n>"),
        ("value 3.75 differs from 4 by 6.2%", "value <n> differs from <n> by <n>"),
        ("it doesn't match", "it doesn't match"),
        ("tool call_7f3a9c21e4b5 missing", "tool call_7f3a9c21e4b5 missing"),
        ("run 7f3a9c21e4b5 failed", "run <id> failed"),
        ("  many   spaces\n here ", "many spaces here"),
        ("gpt-4o said no", "gpt-4o said no"),
    ],
)
def test_reason_pattern(reason, pattern):
    assert reason_pattern(reason) == pattern


def verdicts(*items: Verdict) -> list[dict]:
    return [v.to_dict() for v in items]


def record(sample_id: str, task: str = "t", **metrics: list[dict]) -> SampleRecord:
    filters = {"none": FilterRecord(filtered=["x"], verdicts=dict(metrics))}
    return SampleRecord(
        task=task, task_hash="h", doc_id=0, sample_id=sample_id, doc={}, prompt="p", messages=[], filters=filters
    )


def mismatch(out: str, exp: str) -> Verdict:
    return Verdict.fail(f"output {out!r} does not equal expected {exp!r}", feedback=f"Answer with exactly {exp!r}.")


def test_grouping_counts_examples_and_order():
    records = [
        record("a", em=verdicts(mismatch("1", "2"))),
        record("b", em=verdicts(mismatch("3", "4"), mismatch("5", "4"))),  # two repeats of one sample
        record("c", em=verdicts(Verdict.pass_())),
        record("d", em=verdicts(mismatch("6", "4")), judge=verdicts(Verdict.errored("judge reply unreadable"))),
        record("e", judge=verdicts(Verdict.fail("graded 'partial'", details={"grade": "partial"}))),
        record("f", judge=verdicts(Verdict.fail("graded 'incorrect'", details={"grade": "incorrect"}))),
        record("g", judge=verdicts(Verdict.fail("graded 'incorrect'", details={"grade": "incorrect"}))),
    ]
    themes = group_failures(records, examples=2)
    first = themes[0]
    assert (first.metric, first.kind, first.count) == ("em", "failure", 4)
    assert first.samples == [("t", "a"), ("t", "b"), ("t", "d")]
    assert [e.sample_id for e in first.examples] == ["a", "b"]  # capped, one example per sample
    assert first.feedback[0] == ("Answer with exactly '4'.", 3)
    grades = {t.grade: len(t.samples) for t in themes if t.metric == "judge" and t.kind == "failure"}
    assert grades == {"incorrect": 2, "partial": 1}
    errors = [t for t in themes if t.kind == "error"]
    assert len(errors) == 1 and errors[0].examples[0].reason == "judge reply unreadable"
    assert [t.kind for t in group_failures(records, include_errors=False)].count("error") == 0
    assert group_failures(records, tasks=["other"]) == []


def test_examples_of_two_tasks_with_the_same_sample_ids():
    records = [
        record("0", task="a", em=verdicts(mismatch("1", "2"))),
        record("0", task="b", em=verdicts(mismatch("3", "4"))),
    ]
    (theme,) = group_failures(records)
    assert [(e.task, e.sample_id) for e in theme.examples] == [("a", "0"), ("b", "0")]
    assert theme.samples == [("a", "0"), ("b", "0")]


def test_filters_are_part_of_the_metric_key():
    rec = record("a")
    rec.filters["first"] = FilterRecord(filtered=["x"], verdicts={"em": verdicts(mismatch("1", "2"))})
    (theme,) = group_failures([rec])
    assert theme.metric == "em,first"


def _run(tmp_path, records):
    metric = MetricInfo(name="strict", evaluator={"name": "exact_match", "ignore_case": False})
    task = TaskInfo(name="t", task_hash="h", config={}, metrics=[metric], n_docs=3, n_selected=3)
    manifest = RunManifest(run_id="r1", assay_version="0", created_at=0.0, model={"name": "m"}, tasks=[task])
    write_manifest(tmp_path, manifest)
    with SampleWriter(tmp_path / SAMPLES) as writer:
        for r in records:
            writer.write(r)
    return tmp_path


def test_run_folder_source_names_the_evaluator(tmp_path):
    run = _run(tmp_path, [record("a", strict=verdicts(mismatch("1", "2")))])
    (theme,) = group_failures(run)
    assert theme.metric == "strict" and theme.evaluator == "exact_match"


def test_report_text_and_json(tmp_path):
    from assay.feedback.themes import build_report

    records = [record(str(i), strict=verdicts(mismatch(str(i), "0"))) for i in range(1, 8)]
    records.append(record("ok", strict=verdicts(Verdict.pass_())))
    report = build_report(_run(tmp_path, records))
    assert (report.n_samples, report.n_failing, report.n_errored) == (8, 7, 0)
    text = report.to_text()
    assert "7 of 8 samples failing" in text
    assert "1. strict (exact_match) fails: output … does not equal expected '0'\n" in text
    assert "suggested change (the feedback of 7 of 7): Answer with exactly '0'." in text
    assert "samples: t/1, t/2, t/3, t/4, t/5 (+2 more)" in text
    data = json.loads(json.dumps(report.to_dict()))
    assert data["themes"][0]["n_samples"] == 7 and data["themes"][0]["example_ids"][:2] == ["t/1", "t/2"]


def test_empty_report():
    report = ThemeReport("r", 3, 0, 0, [])
    assert "No failing sample." in report.to_text()


def test_command_options_and_errors(tmp_path):
    from click.testing import CliRunner

    from assay.cli import main

    records = [
        record("a", strict=verdicts(mismatch("1", "2"))),
        record("b", strict=verdicts(Verdict.errored("strict raised ValueError: boom"))),
    ]
    (tmp_path / "run").mkdir()
    run = _run(tmp_path / "run", records)
    runner = CliRunner()
    full = json.loads(runner.invoke(main, ["feedback", str(run), "--format", "json"]).output)
    assert [t["kind"] for t in full["themes"]] == ["failure", "error"] and full["n_errored_samples"] == 1
    no_errors = json.loads(runner.invoke(main, ["feedback", str(run), "--format", "json", "--no-errors"]).output)
    assert [t["kind"] for t in no_errors["themes"]] == ["failure"]
    none = json.loads(runner.invoke(main, ["feedback", str(run), "--format", "json", "--examples", "0"]).output)
    assert none["themes"][0]["examples"] == [] and none["themes"][0]["n_samples"] == 1
    other = runner.invoke(main, ["feedback", str(run), "--task", "other"])
    assert other.exit_code == 2 and "no task 'other' in run r1; its tasks are t" in other.output
    only = runner.invoke(main, ["feedback", str(run), "--task", "t"])
    assert only.exit_code == 0 and "1 of 2 samples failing, 1 with errors" in only.output
    bad = runner.invoke(main, ["feedback", str(tmp_path)])
    assert bad.exit_code == 2 and "not a run folder" in bad.output
    bad_model = runner.invoke(main, ["feedback", str(run), "--summarize-with", "nonsense"])
    assert bad_model.exit_code == 2 and "provider:argument" in bad_model.output
