"""llm_judge inside a whole run: judge server failures become error verdicts and the run goes on."""

from __future__ import annotations

import json
from typing import Any

import assay.api
from assay.feedback.themes import build_report
from assay.store.rundir import read_manifest
from assay.store.sampleindex import read_records
from assay.testing.server import OpenAITestServer
from tests.evaluators.judge.judge_support import blocks


def reply(request: dict[str, Any]) -> Any:
    if request["model"] == "student":
        return request["messages"][-1]["content"].split()[-1]  # echoes the last word: q0 … q5
    response = blocks(request)["response"]
    if response == "q3":
        return {"status": 503, "error": "judge overloaded"}
    if response == "q4":
        return "I refuse to grade."
    return json.dumps({"explanation": "ok", "label": "pass" if response != "q1" else "fail"})


def test_judge_failures_are_error_verdicts_and_the_run_finishes(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "cache"))
    with OpenAITestServer(reply) as server:
        judge = {"provider": "openai", "model": "judge", "base_url": server.base_url}
        task = {
            "name": "echo",
            "dataset": [{"id": f"q{i}", "question": f"Say q{i}"} for i in range(6)],
            "fields": {"id": "id", "input": "question"},
            "template": "{{ question }}",
            "evaluators": [
                {"name": "llm_judge", "expected": "none", "model": judge, "criteria": "c", "max_attempts": 2}
                | {"initial_backoff_s": 0}
            ],
        }
        student = {"provider": "openai", "model": "student", "base_url": server.base_url}
        # 2 of 6 verdicts are errors, above the default 10 %: this test is about the run finishing, so no limit
        assay.api.run(task, student, output_dir=tmp_path / "runs", progress=False, cache=False, max_error_rate=None)
    run_dir = next((tmp_path / "runs").iterdir())
    assert read_manifest(run_dir).status == "finished"
    verdicts = {r.sample_id: r.filters["none"].verdicts["llm_judge"][0] for r in read_records(run_dir)}
    assert [verdicts[f"q{i}"]["passed"] for i in (0, 1, 2, 5)] == [True, False, True, True]
    assert "HTTP 503" in verdicts["q3"]["error"] and "gave up after 2 attempts" in verdicts["q3"]["error"]
    assert verdicts["q3"]["details"]["judges"][0]["attempts"] == 2
    assert "no grade" in verdicts["q4"]["error"]
    assert verdicts["q4"]["details"]["judges"][0]["reply"] == "I refuse to grade."
    assert verdicts["q3"]["score"] is None and verdicts["q4"]["score"] is None
    themes = build_report(run_dir).themes
    assert sorted((t.kind, t.samples[0][1]) for t in themes) == [("error", "q3"), ("error", "q4"), ("failure", "q1")]
