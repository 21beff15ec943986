"""`assay judge labels import` and `assay judge calibrate` on runs with scripted judges of known agreement: the
figures equal scikit-learn's, scipy's and the krippendorff package's on the same pairs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.evaluators.judge.calibration.identity import judge_identity
from assay.evaluators.judge.calibration.records import read_records
from assay.store.rundir import read_manifest
from tests.evaluators.judge.calibration.calibration_support import judged_run, replier, write_labels

sk = pytest.importorskip("sklearn.metrics")
scipy_stats = pytest.importorskip("scipy.stats")
krippendorff = pytest.importorskip("krippendorff")

JUDGE_PASSES = {0, 1, 2, 3, 4, 5, 6}
PEOPLE_PASS = {0, 1, 2, 3, 4, 5, 8}
BROKEN = 9  # the judge gives no grade for this output: an error verdict, never paired


def _binary_grade(output: str, _: int) -> str:
    i = int(output[1:])
    return "I refuse to grade." if i == BROKEN else ("pass" if i in JUDGE_PASSES else "fail")


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [*args])
    return result.exit_code, result.stdout, result.stderr


def test_binary_judge_kappa_accuracy_and_confusion_equal_sklearn(serve, tmp_path: Path) -> None:
    server = serve(replier(_binary_grade))  # "I refuse to grade." is no grade on the scale: an error verdict
    run = judged_run(tmp_path, server, {f"s{i}": f"a{i}" for i in range(12)})
    labels = tmp_path / "labels.csv"
    labels.write_text(
        "sample_id,label,note\n" + "".join(f"s{i},{'pass' if i in PEOPLE_PASS else 'fail'},n{i}\n" for i in range(12))
    )
    code, _, err = _invoke("judge", "labels", "import", str(run), str(labels), "--who", "ann")
    assert code == 0, err
    assert "12 label(s)" in err
    project = tmp_path / "project-calibrations.jsonl"
    code, out, err = _invoke("judge", "calibrate", str(run), "--json", "--save", str(project))
    assert code == 0, err
    (record,) = json.loads(out)
    items = [i for i in range(12) if i != BROKEN]
    truth = ["pass" if i in PEOPLE_PASS else "fail" for i in items]
    judged = ["pass" if i in JUDGE_PASSES else "fail" for i in items]
    assert record["n_items"] == 11 and record["n_judge_errors"] == 1
    assert record["kappa"] == pytest.approx(sk.cohen_kappa_score(truth, judged), abs=1e-12)
    assert record["accuracy"] == pytest.approx(sk.accuracy_score(truth, judged))
    assert record["base_rate"] == pytest.approx(max(truth.count("pass"), truth.count("fail")) / 11)
    assert record["confusion"]["labels"] == ["pass", "fail"]
    assert record["confusion"]["matrix"] == sk.confusion_matrix(truth, judged, labels=["pass", "fail"]).tolist()
    low, high = record["kappa_ci"]
    assert low <= record["kappa"] <= high and low < high
    assert np.all(np.asarray(record["confusion"]["low"]) <= np.asarray(record["confusion"]["matrix"]))
    manifest = read_manifest(run)
    assert record["judge_id"] == judge_identity(manifest.tasks[0].metrics[0].evaluator)["id"]
    assert record["bootstrap"] == {"method": "percentile", "iters": 2000, "seed": 1234, "confidence": 0.95}
    assert read_records(run / "calibrations.jsonl") == [record] == read_records(project)
    # the rich table names the figures
    result = CliRunner().invoke(main, ["judge", "calibrate", str(run)])
    assert result.exit_code == 0, result.output + repr(result.exception)
    out = result.stdout
    assert "Cohen's κ" in out and f"{record['kappa']:.3f}" in out and "confusion" in out


def test_ordinal_judge_weighted_kappa_spearman_alpha_and_self_consistency(serve, tmp_path: Path) -> None:
    judge_grades = [1, 2, 2, 3, 4, 4, 5, 5]
    people = {
        "alice": [1, 2, 3, 3, 4, 5, 5, 4],
        "bob": [1, 2, 3, 3, 3, 5, 5, 4],
        "carol": [2, 1, 2, 3, 4, 5, 4, 4],
    }

    def grade(output: str, before: int) -> int:
        i = len(output) - 1  # outputs a, bb, ccc, …: the grade grows with the length
        return judge_grades[i] if not (i == 3 and before == 1) else 1  # judged again: one output changes its grade

    server = serve(replier(grade))
    answers = {f"s{i}": "abcdefgh"[i] * (i + 1) for i in range(8)}
    run = judged_run(tmp_path, server, answers, scale="1-5", repeats=2)
    rows = [
        {"sample_id": f"s{i}", "task": "qa", "metric": "llm_judge", "label": g, "who": who}
        for who, grades in people.items()
        for i, g in enumerate(grades)
    ]
    code, out, err = _invoke(
        "judge", "calibrate", str(run), "--labels", str(write_labels(tmp_path / "l.jsonl", rows)), "--json"
    )
    assert code == 0, err
    (record,) = json.loads(out)
    # the people's label of an item: the most common of the three
    truth = [max(set(col), key=col.count) for col in zip(*people.values(), strict=True)]
    judged = [float(g) for g in judge_grades]  # repeat 0: the first judgement of each output
    assert record["level"] == "ordinal" and record["kappa_weights"] == "quadratic"
    assert record["kappa"] == pytest.approx(sk.cohen_kappa_score(truth, judged, weights="quadratic"), abs=1e-12)
    assert record["linear_kappa"] == pytest.approx(sk.cohen_kappa_score(truth, judged, weights="linear"), abs=1e-12)
    assert record["spearman"] == pytest.approx(scipy_stats.spearmanr(truth, judged).statistic, abs=1e-12)
    assert record["confusion"]["matrix"] == sk.confusion_matrix(truth, judged, labels=[1, 2, 3, 4, 5]).tolist()
    raters = np.asarray(list(people.values()), dtype=float)
    alpha = record["krippendorff"]
    assert alpha["raters"] == ["alice", "bob", "carol"]
    assert alpha["people"] == pytest.approx(
        krippendorff.alpha(reliability_data=raters, level_of_measurement="ordinal"), abs=1e-12
    )
    assert alpha["people_and_judge"] == pytest.approx(
        krippendorff.alpha(reliability_data=np.vstack([raters, judged]), level_of_measurement="ordinal"), abs=1e-12
    )
    # each output was judged twice (two repeats, the same text): 7 of 8 kept their grade
    assert record["self_consistency"]["n_outputs"] == 8
    assert record["self_consistency"]["agreement"] == pytest.approx(7 / 8)
    second = [1 if i == 3 else g for i, g in enumerate(judge_grades)]
    assert record["self_consistency"]["krippendorff"] == pytest.approx(
        krippendorff.alpha(reliability_data=np.asarray([judge_grades, second], float), level_of_measurement="ordinal"),
        abs=1e-12,
    )
    scores = [(g - 1) / 4 for g in judge_grades + second]
    lengths = [i + 1 for i in range(8)] * 2
    assert record["verbosity"]["judge_spearman"] == pytest.approx(
        scipy_stats.spearmanr(scores, lengths).statistic, abs=1e-12
    )
    assert record["verbosity"]["judge_spearman"] > 0.8  # this judge prefers longer outputs


def test_bad_labels_name_file_and_line_and_nothing_is_written(serve, tmp_path: Path) -> None:
    server = serve(replier(lambda o, n: "pass"))
    run = judged_run(tmp_path, server, {"s0": "a", "s1": "b"})
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"sample_id": "s0", "label": "pass"}\n{"sample_id": "s1"}\n')
    code, _, err = _invoke("judge", "labels", "import", str(run), str(bad))
    assert code == 2 and f"{bad}:2: no 'label'" in err and "Traceback" not in err
    assert not (run / "labels.jsonl").exists()
    code, _, err = _invoke("judge", "calibrate", str(run))
    assert code == 2 and "no labels" in err
    unknown = write_labels(tmp_path / "u.jsonl", [{"sample_id": "s0", "label": "pass", "metric": "nope"}])
    code, _, err = _invoke("judge", "labels", "import", str(run), str(unknown))
    assert code == 2 and "qa/nope" in err
    good = write_labels(tmp_path / "g.jsonl", [{"sample_id": "s0", "label": "pass"}])
    assert _invoke("judge", "labels", "import", str(run), str(good))[0] == 0
    code, _, err = _invoke("judge", "calibrate", str(run), "--evaluator", "exact_match")
    assert code == 2 and "no judge metric named 'exact_match'" in err


def test_identity_follows_the_grading_not_the_connection() -> None:
    base = {"name": "llm_judge", "model": {"provider": "openai", "model": "j", "base_url": "http://a"}, "criteria": "c"}
    same = judge_identity(
        base | {"model": {"provider": "openai", "model": "j", "base_url": "http://b"}, "timeout_s": 5}
    )
    assert same["id"] == judge_identity(base)["id"]
    assert same["id"] == judge_identity(base | {"require_calibration": {"min_kappa": 0.9}})["id"]
    for change in (
        {"criteria": "d"},
        {"rubric": "r"},
        {"scale": "1-5"},
        {"scale": "1-5", "score_from": "logprobs"},
        {"model": "openai:other"},
    ):
        assert (
            judge_identity(base | change)["id"]
            != judge_identity(base | ({"scale": "1-5"} if "score_from" in change else {}))["id"]
        ), change
    assert judge_identity(base | {"scale": "1-5", "score_from": "logprobs"})["options"]["score_from"] == "logprobs"
    rag = {"name": "faithfulness", "model": "openai:j", "context": "doc.contexts"}
    assert judge_identity(rag)["id"] == judge_identity(rag | {"cache": True})["id"]
    assert judge_identity(rag)["id"] != judge_identity(rag | {"context": "doc.other"})["id"]


def test_calibrate_reports_a_pairwise_judges_swap_consistency(serve, tmp_path: Path) -> None:
    """q0's judge prefers whichever response is shown first (its verdict errs: never paired with a label, yet
    counted here); the others keep their preference when swapped: 3 of 4 consistent, the flip towards the first."""
    from tests.evaluators.judge.judge_support import blocks

    def reply(request: dict[str, object]) -> str:
        if request["model"] == "student":
            return request["messages"][-1]["content"].split("::")[-1]  # type: ignore[index]
        b = blocks(request)  # type: ignore[arg-type]
        if "q0" in (b["response A"], b["response B"]):
            return json.dumps({"explanation": "first is better", "winner": "A"})
        return json.dumps({"explanation": "better", "winner": "A" if b["response A"] != "old" else "B"})

    pairwise = {"mode": "pairwise", "baseline": "doc.old", "reference": None}
    server = serve(reply)
    run = judged_run(tmp_path, server, {f"q{i}": f"q{i}" for i in range(4)}, extra=pairwise, old="old")
    rows = [{"sample_id": f"q{i}", "label": "pass"} for i in range(4)]
    code, out, err = _invoke(
        "judge", "calibrate", str(run), "--labels", str(write_labels(tmp_path / "l.jsonl", rows)), "--json"
    )
    assert code == 0, err
    (record,) = json.loads(out)
    assert record["position_bias"] == {
        "judgements": 4, "inconsistent": 1, "prefers_first": 1, "prefers_second": 0, "swap_consistency": 0.75,
    }  # fmt: skip
    assert record["n_items"] == 3 and record["n_judge_errors"] == 1
    code, shown, _ = _invoke("judge", "calibrate", str(run), "--labels", str(tmp_path / "l.jsonl"))
    assert "swap consistency (1 of 4 flipped: 1 to the first, 0 to the second)" in shown and "0.75" in shown
