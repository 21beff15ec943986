"""The calibration gate: a judge with require_calibration and no matching record is marked uncalibrated in
results.json, the table and the HTML report; report --fail-under on it warns, and fails with --strict-judges."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from assay.cli import main
from assay.optimize.engine import uncalibrated_objective
from assay.store.rundir import read_manifest
from tests.evaluators.judge.calibration.calibration_support import judged_run, replier, write_labels

ANSWERS = {f"s{i}": f"a{i}" for i in range(10)}
PASSING = {0, 1, 2, 3, 4, 5}


def _grade(output: str, _: int) -> str:
    return "pass" if int(output[1:]) in PASSING else "fail"


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [*args])
    return result.exit_code, result.stdout, result.stderr


def _labels(tmp_path: Path, disagree: set[int] = frozenset()) -> Path:  # type: ignore[assignment]
    rows = [{"sample_id": f"s{i}", "label": "pass" if (i in PASSING) != (i in disagree) else "fail"} for i in range(10)]
    return write_labels(tmp_path / "labels.jsonl", rows)


def _mark(run: Path) -> dict:
    doc = json.loads((run / "results.json").read_text())
    return doc["assay"]["tasks"]["qa"]["filters"]["none"]["llm_judge"]["calibration"]


def test_uncalibrated_judge_is_marked_everywhere_and_gates_only_when_strict(serve, tmp_path: Path) -> None:
    server = serve(replier(_grade))
    run = judged_run(tmp_path, server, ANSWERS, extra={"require_calibration": {"min_kappa": 0.6}})
    mark = _mark(run)
    assert mark["calibrated"] is False and "no calibration record" in mark["reason"]
    code, out, _ = _invoke("report", str(run))
    assert code == 0 and "llm_judge (uncalibrated)" in out and "uncalibrated judge" in out
    html = tmp_path / "r.html"
    assert _invoke("report", str(run), "--html", str(html))[0] == 0
    assert 'class="tag uncalibrated"' in html.read_text()
    code, _, err = _invoke("report", str(run), "--fail-under", "llm_judge=0.5")
    assert code == 0 and "WARNING --fail-under on qa/llm_judge,none: an uncalibrated judge" in err
    code, _, err = _invoke("report", str(run), "--fail-under", "llm_judge=0.5", "--strict-judges")
    assert code == 1 and "FAIL --fail-under on qa/llm_judge,none: an uncalibrated judge" in err
    # people agree with the judge on 9 of 10: κ 0.78 reaches 0.6, and the report says so at once
    assert _invoke("judge", "labels", "import", str(run), str(_labels(tmp_path, {7})))[0] == 0
    assert _invoke("judge", "calibrate", str(run), "--save", str(tmp_path / "project.jsonl"))[0] == 0
    code, out, err = _invoke("report", str(run), "--fail-under", "llm_judge=0.5", "--strict-judges")
    assert code == 0 and "(uncalibrated)" not in out and "uncalibrated judge" not in out + err
    code, out, _ = _invoke("report", str(run), "--format", "json")
    assert not [n for n in json.loads(out)["runs"][0]["notes"] if "uncalibrated" in n]


def test_a_record_covers_only_its_own_judge_and_kappa_below_the_minimum_does_not_count(serve, tmp_path: Path) -> None:
    server = serve(replier(_grade))
    project = tmp_path / "project.jsonl"
    gate = {"require_calibration": {"min_kappa": 0.6, "records": str(project)}}
    first = judged_run(tmp_path, server, ANSWERS, extra=gate, name="first")
    assert _invoke("judge", "calibrate", str(first), "--labels", str(_labels(tmp_path)), "--save", str(project))[0] == 0
    # the same judge in a new run: the project file's record covers it
    again = judged_run(tmp_path, server, ANSWERS, extra=gate, name="again")
    assert _mark(again)["calibrated"] is True and _mark(again)["record"]["kappa"] == 1.0
    # an edited rubric is another judge: uncalibrated, although the project file holds a record
    edited = judged_run(tmp_path, server, ANSWERS, extra=gate | {"rubric": "be strict"}, name="edited")
    assert _mark(edited)["calibrated"] is False and "no calibration record" in _mark(edited)["reason"]
    # a stricter minimum than the record reached
    strict = {"require_calibration": {"min_kappa": 1.0}}  # its own record only (the project one has κ 1)
    low = judged_run(tmp_path, server, ANSWERS, extra=strict, name="low")
    assert _invoke("judge", "calibrate", str(low), "--labels", str(_labels(tmp_path, {7})))[0] == 0
    code, _, err = _invoke("report", str(low), "--fail-under", "llm_judge=0.1", "--strict-judges")
    assert code == 1 and "κ 0.783 < 1" in err
    # assay optimize's objective check says the same
    evaluator = read_manifest(edited).tasks[0].metrics[0].evaluator
    (warning,) = uncalibrated_objective("llm_judge", evaluator, tmp_path)
    assert "the objective llm_judge is an uncalibrated judge" in warning
    assert uncalibrated_objective("llm_judge", read_manifest(again).tasks[0].metrics[0].evaluator, tmp_path) == []


def test_an_ungated_judge_is_not_marked(serve, tmp_path: Path) -> None:
    run = judged_run(tmp_path, serve(replier(_grade)), ANSWERS)
    entry = json.loads((run / "results.json").read_text())["assay"]["tasks"]["qa"]["filters"]["none"]["llm_judge"]
    assert "calibration" not in entry
    code, out, err = _invoke("report", str(run), "--fail-under", "llm_judge=0.5", "--strict-judges")
    assert code == 0 and "uncalibrated judge" not in out + err and "(uncalibrated)" not in out


def test_a_records_path_resolves_against_the_task_file_and_the_run_records_it(
    serve, tmp_path: Path, monkeypatch
) -> None:
    import yaml

    import assay
    from tests.evaluators.judge.calibration.calibration_support import judge_spec

    server = serve(replier(_grade))
    project = tmp_path / "proj"
    (project / "calib").mkdir(parents=True)
    records = project / "calib" / "project.jsonl"
    first = judged_run(tmp_path, server, ANSWERS, name="first")
    assert _invoke("judge", "calibrate", str(first), "--labels", str(_labels(tmp_path)), "--save", str(records))[0] == 0
    judge = {"name": "llm_judge", "expected": "none", "model": judge_spec(server), "criteria": "is it right?"}
    judge |= {"scale": "binary", "initial_backoff_s": 0, "require_calibration": {"records": "calib/project.jsonl"}}
    task = {
        "name": "qa",
        "dataset": [{"id": sid, "question": f"Say::{text}"} for sid, text in ANSWERS.items()],
        "fields": {"id": "id", "input": "question"},
        "template": "{{ question }}",
        "evaluators": [judge],
    }
    (project / "task.yaml").write_text(yaml.safe_dump(task, sort_keys=False))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the run is started away from the task file's folder
    student = {"provider": "openai", "model": "student", "base_url": server.base_url}
    assay.api.run(str(project / "task.yaml"), student, output_dir=tmp_path / "gated", progress=False, cache=False)
    run = next((tmp_path / "gated").iterdir())
    assert _mark(run)["calibrated"] is True
    recorded = read_manifest(run).tasks[0].metrics[0].evaluator["require_calibration"]["records"]
    assert recorded == str(records)
    for where in (project, tmp_path):  # `assay report RUN` says the same wherever it is typed
        monkeypatch.chdir(where)
        code, out, _ = _invoke("report", str(run))
        assert code == 0 and "(uncalibrated)" not in out
