"""One cache switch, off by default: a judge whose answers changed is asked again unless the run says --cache, and
every answer served from the cache (the model's and the judge's) is counted in the run's summary."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

import assay
from assay.evaluators.judge.evaluator import LLMJudge
from assay.store.sampleindex import read_records
from assay.testing.server import OpenAITestServer
from tests.evaluators.judge.judge_support import blocks, judge_spec

LABEL = {"now": "pass"}  # what the judge server says today; a test changes it between runs


def reply(request: dict[str, Any]) -> Any:
    if request["model"] == "student":
        return request["messages"][-1]["content"].split()[-1]
    assert blocks(request)["response"]
    return json.dumps({"explanation": "checked", "label": LABEL["now"]})


def _task(tmp_path: Path, server: OpenAITestServer, judge_options: dict[str, Any] | None = None) -> Path:
    judge = {"name": "llm_judge", "model": judge_spec(server, "judge"), "criteria": "Says the word."}
    task = {
        "name": "echo",
        "dataset": {"path": "rows.jsonl"},
        "fields": {"id": "id", "input": "question"},
        "template": "{{ question }}",
        "evaluators": [judge | {"expected": "none"} | (judge_options or {})],
    }
    (tmp_path / "rows.jsonl").write_text(
        "".join(json.dumps({"id": f"q{i}", "question": f"Say q{i}"}) + "\n" for i in range(4))
    )
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(task, sort_keys=False))
    return path


def _run(tmp_path: Path, server: OpenAITestServer, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "assay", "run", str(tmp_path / "task.yaml"), "--model", "openai:student"]
    cmd += ["--base-url", server.base_url, "-o", "runs", "-q", "--max-error-rate", "1", *args]
    return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def _newest_grades(tmp_path: Path) -> list[bool]:
    newest = max((tmp_path / "runs").iterdir(), key=lambda p: p.stat().st_mtime_ns)
    records = sorted(read_records(newest), key=lambda r: r.sample_id)
    return [r.filters["none"].verdicts["llm_judge"][0]["passed"] for r in records]


def _judge_requests(server: OpenAITestServer) -> int:
    return sum(1 for body in server.requests if body["model"] == "judge")


def test_without_cache_a_changed_judge_is_asked_again_and_its_new_grades_count(tmp_path: Path) -> None:
    LABEL["now"] = "pass"
    with OpenAITestServer(reply) as server:
        _task(tmp_path, server)
        first = _run(tmp_path, server)
        assert first.returncode == 0, first.stderr
        assert _newest_grades(tmp_path) == [True] * 4 and _judge_requests(server) == 4

        LABEL["now"] = "fail"  # the judge server's answers changed
        second = _run(tmp_path, server)
        assert second.returncode == 0, second.stderr
        assert _judge_requests(server) == 8  # the judge was asked again: nothing was reused by default
        assert _newest_grades(tmp_path) == [False] * 4
        assert "no answers from the cache" in second.stderr
    assert not (tmp_path / "cache" / "responses.sqlite").exists()  # off by default: nothing was written either


def test_with_the_switch_on_model_and_judge_hits_are_both_counted(tmp_path: Path) -> None:
    LABEL["now"] = "pass"
    with OpenAITestServer(reply) as server:
        _task(tmp_path, server)
        first = _run(tmp_path, server, "--cache")
        assert first.returncode == 0, first.stderr
        assert "no answers from the cache" in first.stderr and server.requests_total == 8
        LABEL["now"] = "fail"
        again = _run(tmp_path, server, "--cache")
        assert again.returncode == 0, again.stderr
        assert server.requests_total == 8  # neither the model nor the judge was asked: both from the cache
        assert _newest_grades(tmp_path) == [True] * 4  # the cached grades, as the user asked
        assert "4 model answers and 4 judge answers from the cache (model answers written " in again.stderr
        # --no-cache (the default) asks both again
        fresh = _run(tmp_path, server, "--no-cache")
        assert server.requests_total == 16 and _newest_grades(tmp_path) == [False] * 4
        assert "no answers from the cache" in fresh.stderr


def test_a_judge_option_turns_its_own_cache_on_and_hits_are_counted_without_the_run_switch(tmp_path: Path) -> None:
    LABEL["now"] = "pass"
    with OpenAITestServer(reply) as server:
        _task(tmp_path, server, {"cache": True})
        assert _run(tmp_path, server).returncode == 0
        LABEL["now"] = "fail"
        again = _run(tmp_path, server)
        assert _judge_requests(server) == 4 and server.requests_total == 12  # the model was asked again; the judge not
        assert _newest_grades(tmp_path) == [True] * 4
        assert "4 judge answers from the cache" in again.stderr and "model answers" not in again.stderr


def test_python_runs_and_bare_evaluators_do_not_cache_by_default(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "cache"))
    LABEL["now"] = "pass"
    with OpenAITestServer(reply) as server:
        task = _task(tmp_path, server)
        student = {"provider": "openai", "model": "student", "base_url": server.base_url}
        assay.run(task, student, output_dir=tmp_path / "runs", progress=False)
        LABEL["now"] = "fail"
        run = assay.run(task, student, output_dir=tmp_path / "runs", progress=False, max_error_rate=None)
        assert _judge_requests(server) == 8
        assert all(not r.filters["none"].verdicts["llm_judge"][0]["passed"] for r in run.records)
        judge = LLMJudge(model=judge_spec(server, "judge"), criteria="Says the word.")
        judge.evaluate("q1", None)
        judge.evaluate("q1", None)
        assert _judge_requests(server) == 10 and not judge.caching()
        assert not (tmp_path / "cache" / "responses.sqlite").exists()
