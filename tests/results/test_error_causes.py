"""Evaluator errors are counted apart from model errors, and a metric with no scored sample is listed with why."""

from __future__ import annotations

import json
import math
from typing import Any

from click.testing import CliRunner

import assay.api
from assay.commands.report import report_command
from assay.report.table import render_table
from assay.results import load_run, write_results
from assay.testing.server import OpenAITestServer
from tests.results import runfactory as rf
from tests.results import streaming_cases


def _only_numbers(task_result: dict[str, Any]) -> bool:
    return all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
        for k, v in task_result.items()
        if k not in ("name", "alias")
    )


def test_a_metric_whose_every_verdict_errored_is_listed_with_its_reason(tmp_path):
    run = streaming_cases.build("all_errored", tmp_path / "run")
    doc = write_results(run, bootstrap_iters=50)
    judged = doc["assay"]["tasks"]["judged"]
    entry = judged["filters"]["none"]["llm_judge"]
    assert entry["mean"] is None and entry["n_scored"] == 0
    assert entry["unscorable"] == "all 30 verdicts errored: llm_judge: judge unreachable (connection refused)"
    assert (entry["n_eval_errors"], entry["n_model_errors"]) == (30, 0)
    assert judged["n_eval_errors"] == 30 and judged["n_model_errors"] == 0
    assert judged["unscorable"] == {"llm_judge,none": entry["unscorable"]}
    assert any(
        w.startswith("judged/llm_judge,none has no value: all 30 verdicts errored") for w in doc["assay"]["warnings"]
    )
    # lm-eval's results hold numbers only: the unscorable metric is absent there (null or NaN would break readers)
    assert "llm_judge,none" not in doc["results"]["judged"] and _only_numbers(doc["results"]["judged"])
    assert "exact_match,none" in doc["results"]["judged"]
    # ... and the table lists it with a dash and the reason
    md = render_table(load_run(run), "markdown")
    assert any(line.startswith("|||none|0|llm_judge|↑|—|") and "|0/30|30 (30 evaluator; excluded)|" in line
               for line in md.splitlines())  # fmt: skip
    assert "judged/llm_judge,none has no value: all 30 verdicts errored" in md
    rows = {(r["task"], r["metric"]): r for r in json.loads(render_table(load_run(run), "json"))["rows"]}
    assert rows[("judged", "llm_judge")]["unscorable"] == entry["unscorable"]


def test_model_and_evaluator_errors_are_told_apart(tmp_path):
    recs = [
        rf.record("t", 0, {"em": [rf.verdict(1.0)]}),
        rf.record("t", 1, {"em": [rf.verdict(None, error="no response to evaluate: HTTP 500")]}, texts=[None]),
        rf.record("t", 2, {"em": [rf.verdict(None, error="regex broke")]}),
        rf.record("t", 3, {}, texts=[None]),  # the model failed and no verdict was written at all
        rf.record("t", 4, {"em": [rf.verdict(0.0)]}),
    ]
    run = rf.write_run(tmp_path / "run", rf.manifest([rf.task("t", (("em", True),), n=5)]), recs)
    doc = write_results(run, bootstrap_iters=10)
    entry = doc["assay"]["tasks"]["t"]["filters"]["none"]["em"]
    assert (entry["n_errored"], entry["n_model_errors"], entry["n_eval_errors"]) == (3, 2, 1)
    assert doc["assay"]["tasks"]["t"]["n_model_errors"] == 2 and doc["assay"]["tasks"]["t"]["n_eval_errors"] == 1
    assert doc["assay"]["tasks"]["t"]["eval_error_example"] == "regex broke"
    assert "t/em,none: 1 evaluator error(s) (exclude policy), e.g. regex broke" in doc["assay"]["warnings"]
    assert entry["unscorable"] is None


def test_judge_server_down_in_a_real_run(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "cache"))

    def reply(request: dict[str, Any]) -> Any:
        if request["model"] == "judge":
            return {"status": 503, "error": "judge unreachable"}
        return request["messages"][-1]["content"].split()[-1]

    with OpenAITestServer(reply) as server:
        judge = {"provider": "openai", "model": "judge", "base_url": server.base_url}
        task = {
            "name": "echo",
            "dataset": [{"id": f"q{i}", "question": f"Say q{i}", "answer": f"q{i}"} for i in range(4)],
            "fields": {"id": "id", "input": "question", "target": "answer"},
            "template": "{{ question }}",
            "evaluators": [
                "exact_match",
                {"name": "llm_judge", "model": judge, "criteria": "c", "max_attempts": 1, "initial_backoff_s": 0},
            ],
        }
        student = {"provider": "openai", "model": "student", "base_url": server.base_url}
        assay.api.run(task, student, output_dir=tmp_path / "runs", progress=False, cache=False, max_error_rate=None)
    run_dir = next((tmp_path / "runs").iterdir())
    doc = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    judge_entry = doc["assay"]["tasks"]["echo"]["filters"]["none"]["llm_judge"]
    assert judge_entry["n_eval_errors"] == 4 and judge_entry["n_model_errors"] == 0
    assert judge_entry["unscorable"].startswith("all 4 verdicts errored: ") and "503" in judge_entry["unscorable"]
    assert doc["results"]["echo"]["exact_match,none"] == 1.0 and "llm_judge,none" not in doc["results"]["echo"]
    assert any("echo/llm_judge,none has no value" in w for w in doc["assay"]["warnings"])
    res = CliRunner().invoke(report_command, [str(run_dir), "--format", "markdown"])
    assert res.exit_code == 0, res.output
    assert "|llm_judge|↑|—|" in res.output and "4 (4 evaluator; excluded)" in res.output


def test_pass_at_k_is_in_the_table_only_with_repeats(tmp_path):
    run = streaming_cases.build("repeats_mean", tmp_path / "rep")
    write_results(run, bootstrap_iters=20)
    md = render_table(load_run(run), "markdown")
    assert "|Task|Filter|Metric|k|pass@k|± pass@k|pass^k|± pass^k|Samples|" in md
    entry = load_run(run).results["assay"]["tasks"]["rep"]["filters"]["none"]["pass"]
    k3 = entry["pass_at_k"]["3"]
    assert f"|rep|none|pass|3|{k3['value']:.4f}|" in md
    hat2 = entry["pass_hat_k"]["2"]["value"]
    assert any(line.startswith("|rep|none|pass|2|") and f"|{hat2:.4f}|" in line for line in md.splitlines())
    single = rf.binary_run(tmp_path / "one", [1, 0, 1])
    write_results(single, bootstrap_iters=10)
    assert "pass@k" not in render_table(load_run(single), "markdown")
