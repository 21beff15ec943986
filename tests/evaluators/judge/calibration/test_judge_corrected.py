"""A run judged by a lenient scripted judge, with people's labels imported after it: the report and a re-written
results.json show the judge's figure corrected by the labels (PPI++), equal to the estimator on the same pairs,
and say why when the labels cannot correct it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.results.ppi import corrected_difference, corrected_mean
from assay.results.writer import write_results
from tests.evaluators.judge.calibration.calibration_support import judged_run, replier

N = 60
PEOPLE_PASS = {i for i in range(N) if i % 10 < 6}  # people pass 60 %
JUDGE_PASSES = PEOPLE_PASS | {i for i in range(N) if i % 10 in (6, 7)}  # the judge also passes 20 % more
LABELLED = range(0, N, 2)  # people labelled every second sample


def _grade(output: str, _: int) -> str:
    return "pass" if int(output[1:]) in JUDGE_PASSES else "fail"


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [*args])
    return result.exit_code, result.stdout, result.stderr


def _import_labels(tmp_path: Path, run: Path, which: range | list[int]) -> None:
    labels = tmp_path / "labels.csv"
    rows = "".join(f"s{i},{'pass' if i in PEOPLE_PASS else 'fail'}\n" for i in which)
    labels.write_text("sample_id,label\n" + rows, encoding="utf-8")
    code, _, err = _invoke("judge", "labels", "import", str(run), str(labels), "--who", "ann")
    assert code == 0, err


def test_the_report_corrects_the_judge_by_the_labels_given_after_the_run(serve, tmp_path: Path) -> None:
    server = serve(replier(_grade))
    run = judged_run(tmp_path, server, {f"s{i}": f"a{i}" for i in range(N)})
    code, out, _ = _invoke("report", str(run), "--format", "json")
    assert code == 0 and "judge_corrected" not in out  # no labels yet: nothing to correct
    _import_labels(tmp_path, run, LABELLED)
    expected = corrected_mean(
        [float(i in PEOPLE_PASS) for i in LABELLED],
        [float(i in JUDGE_PASSES) for i in LABELLED],
        [float(i in JUDGE_PASSES) for i in range(N) if i not in LABELLED],
    )
    code, out, err = _invoke("report", str(run), "--format", "json")
    assert code == 0, err
    (row,) = json.loads(out)["runs"][0]["rows"]
    fig = row["judge_corrected"]
    assert fig["method"] == "ppi++" and fig["of"] == "pass rate"
    assert fig["n_labelled"] == 30 and fig["n_unlabelled"] == 30
    assert fig["judge_mean"] == pytest.approx(0.8) and row["pass_rate"] == pytest.approx(0.8)
    assert fig["estimate"] == pytest.approx(expected.estimate) and fig["ci"] == pytest.approx(list(expected.ci))
    assert fig["ci"][0] <= 0.6 <= fig["ci"][1] < 0.8  # the people's 60 % inside, the judge's 80 % outside
    code, table, _ = _invoke("report", str(run), "--html", str(tmp_path / "page.html"))
    assert code == 0 and "Judge figures corrected by people's labels" in table and "PPI++" in table
    assert "corrected by 30 people&#39;s labels (PPI++" in (tmp_path / "page.html").read_text(encoding="utf-8")
    # results.json written again (as assay score / a resume would) carries the figure with its method
    doc = write_results(run)
    entry = doc["assay"]["tasks"]["qa"]["filters"]["none"]["llm_judge"]
    assert entry["judge_corrected"]["estimate"] == pytest.approx(expected.estimate)


def test_too_few_labels_are_refused_with_the_reason(serve, tmp_path: Path) -> None:
    server = serve(replier(_grade))
    run = judged_run(tmp_path, server, {f"s{i}": f"a{i}" for i in range(N)})
    _import_labels(tmp_path, run, [0, 1, 2, 3, 4])
    code, out, _ = _invoke("report", str(run))
    assert code == 0
    assert "not corrected by people's labels: 5 labelled sample(s), fewer than the 20" in " ".join(out.split())


PEOPLE_PASS_B = {i for i in range(N) if i % 10 < 7}  # B is better by 10 points to people
JUDGE_PASSES_B = PEOPLE_PASS_B | {i for i in range(N) if i % 10 in (8, 9)}  # the judge: +10 points too


def test_compare_corrects_the_paired_difference_by_both_runs_labels(serve, tmp_path: Path) -> None:
    def grade(output: str, seen: int) -> str:  # run A is judged first, run B second: one judge, two runs
        return "pass" if int(output[1:]) in (JUDGE_PASSES if seen == 0 else JUDGE_PASSES_B) else "fail"

    server = serve(replier(grade))
    answers = {f"s{i}": f"a{i}" for i in range(N)}
    run_a = judged_run(tmp_path, server, answers, name="A")
    run_b = judged_run(tmp_path, server, answers, name="B")
    _import_labels(tmp_path, run_a, LABELLED)
    labels_b = tmp_path / "labels-b.csv"
    rows = "".join(f"s{i},{'pass' if i in PEOPLE_PASS_B else 'fail'}\n" for i in LABELLED)
    labels_b.write_text("sample_id,label\n" + rows, encoding="utf-8")
    code, _, err = _invoke("judge", "labels", "import", str(run_b), str(labels_b), "--who", "ann")
    assert code == 0, err
    rest = [i for i in range(N) if i not in LABELLED]
    expected = corrected_difference(
        [float(i in PEOPLE_PASS) for i in LABELLED],
        [float(i in PEOPLE_PASS_B) for i in LABELLED],
        [float(i in JUDGE_PASSES) for i in LABELLED],
        [float(i in JUDGE_PASSES_B) for i in LABELLED],
        [float(i in JUDGE_PASSES) for i in rest],
        [float(i in JUDGE_PASSES_B) for i in rest],
    )
    code, out, err = _invoke("compare", str(run_a), str(run_b), "--format", "json")
    assert code in (0, 1), err
    (metric,) = json.loads(out)["metrics"]
    fig = metric["judge_corrected"]
    assert fig["estimate"] == pytest.approx(expected.estimate) and fig["ci"] == pytest.approx(list(expected.ci))
    assert fig["n_labelled"] == 30 and fig["judge_mean"] == pytest.approx(0.1)
    code, table, _ = _invoke("compare", str(run_a), str(run_b))
    assert "corrected by 30 sample(s) people labelled in both runs" in " ".join(table.split())
