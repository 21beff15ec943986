"""Resuming runs: several tasks with repeats after SIGKILL, an agent task after SIGKILL, Python agents and
predictions files, recorded settings, and the checks that stop a resume or a re-score from mixing answers that do
not belong together."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from assay.api import arun_outcome
from assay.errors import ConfigError
from assay.testing.server import OpenAITestServer, tool_then_answer
from tests.e2e.e2e_support import arithmetic_reply, assay_cmd, only_run_dir, run_cli, sample_lines, write_task
from tests.support import lines_written, wait_for

AGENT = """
def answer(doc):
    return str(int(doc["question"].split()[2]) * 2 + 1)
"""


def model_args(server: OpenAITestServer) -> list[str]:
    return ["--model", "openai:assay-test", "--base-url", server.base_url]


def cut_run(run_dir: Path, keep: int) -> None:
    """Make a finished run look like one killed mid-run: `keep` whole lines, then a torn one, no results."""
    lines = (run_dir / "samples.jsonl").read_text().splitlines(keepends=True)
    (run_dir / "samples.jsonl").write_text("".join(lines[:keep]) + lines[keep][: len(lines[keep]) // 2])
    (run_dir / "results.json").unlink()
    manifest = json.loads((run_dir / "run.json").read_text())
    manifest["status"] = "interrupted"
    (run_dir / "run.json").write_text(json.dumps(manifest))


def test_sigkill_with_two_tasks_and_repeats_then_resume(tmp_path: Path) -> None:
    first = write_task(tmp_path, 60, name="add", extra={"repeats": 3})
    second = write_task(tmp_path, 60, name="add2", extra={"repeats": 2})
    with OpenAITestServer(arithmetic_reply, latency_s=0.02) as srv:
        env = {**os.environ, "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
        cmd = assay_cmd("run", str(first), str(second), *model_args(srv), "-o", "runs", "-q", "-c", "4", "--no-cache")
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        samples = tmp_path / "runs"
        wait_for(lambda: lines_written(samples) >= 15, 60, "15 samples written", proc=proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        run_dir = only_run_dir(samples)
        whole = (run_dir / "samples.jsonl").read_bytes().count(b"\n")  # a last line may be torn by the kill
        assert 15 <= whole < 120
        resumed = run_cli("run", "--resume", str(run_dir), "-q", cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stderr
    lines = sample_lines(run_dir)
    counts = Counter((line["task"], line["sample_id"]) for line in lines)
    expected = {(task, f"q{i}") for task in ("add", "add2") for i in range(60)}
    assert set(counts) == expected and set(counts.values()) == {1}
    repeats = {line["task"]: {len(line["responses"])} for line in lines}
    assert repeats == {"add": {3}, "add2": {2}}
    assert not (tmp_path / "cache").exists()  # the recorded --no-cache held on resume
    results = json.loads((run_dir / "results.json").read_text())
    assert set(results["results"]) >= {"add", "add2"}


SUM_TOOLS = '''
def add(x: int, y: int) -> int:
    """Add two integers.

    Args:
        x: The first.
        y: The second.
    """
    return x + y
'''


def _add_calls(user: str) -> list[dict[str, Any]]:
    words = user.replace("?", "").split()
    return [{"name": "add", "arguments": {"x": int(words[-3]), "y": int(words[-1])}}]


def test_sigkill_an_agent_task_then_resume_from_the_run_folder_alone(tmp_path: Path) -> None:
    """An agent task (tools, an ``agent:`` block) resumes from run.json: its config records every key the task's
    hash covers, so the rebuilt task is the one the run started with; the task file is gone by then, and the resume is
    typed in another folder (the tools' module is found in the task file's folder, which run.json records)."""
    (tmp_path / "sum_tools.py").write_text(SUM_TOOLS)
    extra = {"tools": [{"python": "sum_tools:add"}], "agent": {"max_turns": 3, "tool_timeout_s": 5}}
    task = write_task(tmp_path, 40, extra=extra)
    reply = tool_then_answer(_add_calls, lambda user, results: results[0])
    with OpenAITestServer(reply, latency_s=0.05) as srv:
        env = {**os.environ, "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
        cmd = assay_cmd("run", str(task), *model_args(srv), "-o", "runs", "-q", "-c", "2", "--no-cache")
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        runs = tmp_path / "runs"
        wait_for(lambda: lines_written(runs) >= 6, 60, "6 samples written", interval=0.01, proc=proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        run_dir = only_run_dir(runs)
        before = (run_dir / "samples.jsonl").read_bytes().count(b"\n")
        assert 6 <= before < 40
        task.unlink()  # resumed from the run folder alone, typed in another folder
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        resumed = run_cli("run", "--resume", str(run_dir), "-q", cwd=elsewhere)
        assert resumed.returncode == 0, resumed.stderr
    lines = sample_lines(run_dir)
    assert Counter(line["sample_id"] for line in lines) == Counter({f"q{i}": 1 for i in range(40)})
    assert all(
        line["responses"][0]["tool_calls"][0]["result"] == str(2 * int(line["sample_id"][1:]) + 1) for line in lines
    )
    assert json.loads((run_dir / "results.json").read_text())["results"]["add"]["exact_match,none"] == 1.0


def test_resume_a_python_agent_run_from_the_recorded_spec(tmp_path: Path) -> None:
    (tmp_path / "my_agent.py").write_text(AGENT)
    task = write_task(tmp_path, 12)
    first = run_cli("run", str(task), "--model", "python:my_agent:answer", "-o", "runs", "-q", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    run_dir = only_run_dir(tmp_path / "runs")
    cut_run(run_dir, 5)
    resumed = run_cli("run", "--resume", str(run_dir), "-q", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    counts = Counter(line["sample_id"] for line in sample_lines(run_dir))
    assert set(counts) == {f"q{i}" for i in range(12)} and set(counts.values()) == {1}
    assert json.loads((run_dir / "run.json").read_text())["status"] == "finished"


def test_resume_a_predictions_run(tmp_path: Path) -> None:
    task = write_task(tmp_path, 8)
    with open(tmp_path / "preds.jsonl", "w") as fh:
        for i in range(8):
            fh.write(json.dumps({"id": f"q{i}", "prediction": str(2 * i + 1)}) + "\n")
    first = run_cli("run", str(task), "--model", "predictions:preds.jsonl", "-o", "runs", "-q", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    run_dir = only_run_dir(tmp_path / "runs")
    cut_run(run_dir, 3)
    resumed = run_cli("run", "--resume", str(run_dir), "-q", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(line["sample_id"] for line in sample_lines(run_dir)) == sorted(f"q{i}" for i in range(8))
    assert json.loads((run_dir / "results.json").read_text())["results"]["add"]["exact_match,none"] == 1.0


def test_resume_refuses_another_model_and_changed_settings(tmp_path: Path, server: OpenAITestServer) -> None:
    (tmp_path / "my_agent.py").write_text(AGENT)
    task = write_task(tmp_path, 6)
    assert (
        run_cli("run", str(task), "--model", "python:my_agent:answer", "-o", "runs", "-q", cwd=tmp_path).returncode == 0
    )
    run_dir = only_run_dir(tmp_path / "runs")
    cut_run(run_dir, 2)
    other = run_cli("run", "--resume", str(run_dir), *model_args(server), "-q", cwd=tmp_path)
    assert other.returncode == 2 and "would mix two models" in other.stderr
    limit = run_cli("run", "--resume", str(run_dir), "--limit", "3", "-q", cwd=tmp_path)
    assert limit.returncode == 2 and "--limit" in limit.stderr
    whole = (run_dir / "samples.jsonl").read_bytes().count(b"\n")
    assert server.requests_total == 0 and whole == 2  # nothing ran, nothing was written
    same = run_cli("run", "--resume", str(run_dir), "--model", "python:my_agent:answer", "-c", "2", "-q", cwd=tmp_path)
    assert same.returncode == 0, same.stderr
    assert len(sample_lines(run_dir)) == 6


def test_a_bad_row_far_into_the_dataset_fails_before_anything_is_written(tmp_path: Path) -> None:
    task = write_task(tmp_path, 50, extra={"template": "{{ question }} ({{ hint }})"})
    rows = [json.loads(line) for line in (tmp_path / "add.jsonl").read_text().splitlines()]
    with open(tmp_path / "add.jsonl", "w") as fh:
        for i, row in enumerate(rows):
            fh.write(json.dumps({**row, "hint": "add"} if i != 40 else row) + "\n")
    proc = run_cli("run", str(task), "--model", "openai:x", "--base-url", "http://127.0.0.1:9/v1", cwd=tmp_path)
    assert proc.returncode == 2
    assert "add.jsonl:41" in proc.stderr and "hint" in proc.stderr
    assert not (tmp_path / "runs").exists()


def test_score_refuses_a_task_whose_requests_changed_and_resume_works_after_a_score(
    tmp_path: Path, server: OpenAITestServer
) -> None:
    task = write_task(tmp_path, 10)
    assert run_cli("run", str(task), *model_args(server), "-o", "runs", "-q", cwd=tmp_path).returncode == 0
    run_dir = only_run_dir(tmp_path / "runs")
    cut_run(run_dir, 4)
    before = (run_dir / "samples.jsonl").read_bytes()
    changed = write_task(tmp_path, 10, name="add", extra={"template": "Q: {{ question }}"})
    refused = run_cli("score", str(run_dir), "--task", str(changed), "-q", cwd=tmp_path)
    assert refused.returncode == 2 and "asks different requests" in refused.stderr
    assert (run_dir / "samples.jsonl").read_bytes() == before  # nothing was rewritten
    rescored = write_task(tmp_path, 10, extra={"evaluators": [{"name": "numeric", "abs_tol": 1}]})
    scored = run_cli("score", str(run_dir), "--task", str(rescored), "--in-place", "-q", cwd=tmp_path)
    assert scored.returncode == 0, scored.stderr
    resumed = run_cli("run", "--resume", str(run_dir), "-q", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    lines = sample_lines(run_dir)
    assert len(lines) == 10 and all("numeric" in line["filters"]["none"]["verdicts"] for line in lines)
    assert json.loads((run_dir / "results.json").read_text())["results"]["add"]["numeric,none"] == 1.0


async def test_run_timeout_reaches_the_model_and_the_model_timeout_is_the_default(tmp_path: Path) -> None:
    with OpenAITestServer(arithmetic_reply, latency_s=0.5) as srv:
        task = write_task(tmp_path, 2)
        spec = {"provider": "openai", "model": "assay-test", "base_url": srv.base_url, "timeout_s": 0.1}
        common = {"output_dir": tmp_path / "runs", "cache": False, "progress": False, "max_attempts": 1}
        short = await arun_outcome(task, spec, **common)  # the model's own 0.1 s applies
        assert short.errors == 2
        longer = await arun_outcome(task, spec, timeout_s=5, **common)  # the run's timeout wins over the model's
        assert longer.errors == 0


def test_tasks_naming_different_models_need_an_explicit_model(tmp_path: Path) -> None:
    one = write_task(tmp_path, 2, name="one", extra={"model": {"provider": "python", "target": "a:b"}})
    two = write_task(tmp_path, 2, name="two", extra={"model": {"provider": "python", "target": "c:d"}})
    with pytest.raises(ConfigError, match="name different models"):
        import asyncio

        asyncio.run(arun_outcome([one, two], None, output_dir=tmp_path / "runs"))
    assert not (tmp_path / "runs").exists()


def test_a_bad_model_section_names_the_task_file_line_and_key(tmp_path: Path) -> None:
    import asyncio

    task = write_task(tmp_path, 2, extra={"model": {"provider": "python", "targt": "my_agent:answer"}})
    with pytest.raises(ConfigError, match=r"add\.yaml:\d+: model: .*unknown option 'targt'"):
        asyncio.run(arun_outcome(task, None, output_dir=tmp_path / "runs"))
    assert not (tmp_path / "runs").exists()


def test_an_unexpected_failure_marks_the_run_failed_not_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from assay.store.rundir import SampleWriter

    original = SampleWriter.write

    def write(self: SampleWriter, record: object) -> None:
        if getattr(record, "sample_id", None) == "q3":
            raise OSError("No space left on device")
        original(self, record)  # type: ignore[arg-type]

    monkeypatch.setattr(SampleWriter, "write", write)
    (tmp_path / "my_agent.py").write_text(AGENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    task = write_task(tmp_path, 10)
    with pytest.raises(OSError, match="No space left"):
        asyncio.run(arun_outcome(task, "python:my_agent:answer", output_dir=tmp_path / "runs", cache=False))
    manifest = json.loads((only_run_dir(tmp_path / "runs") / "run.json").read_text())
    assert manifest["status"] == "failed" and manifest["finished_at"] is None


def test_retry_errors_asks_again_only_for_failed_samples(tmp_path: Path) -> None:
    """After an outage, --retry-errors replaces the error samples; answered samples are not asked again."""
    state = {"down": True}

    def reply(request: dict) -> dict | str:
        if state["down"] and "3 + 4" in request["messages"][-1]["content"]:
            return {"status": 503, "error": "overloaded"}
        return arithmetic_reply(request)

    with OpenAITestServer(reply) as srv:
        task = write_task(tmp_path, 6)
        args = ["--model", "openai:assay-test", "--base-url", srv.base_url, "-q", "--max-attempts", "1"]
        first = run_cli("run", str(task), *args, "-o", "runs", cwd=tmp_path)
        assert first.returncode == 1, first.stderr  # 1 of 6 failed: above the default 10 %
        assert "--retry-errors" in first.stderr
        run_dir = only_run_dir(tmp_path / "runs")
        assert {line["sample_id"] for line in sample_lines(run_dir) if line["response_errors"][0]} == {"q3"}
        state["down"] = False
        before = srv.requests_total
        assert run_cli("run", "--retry-errors", cwd=tmp_path).returncode == 2  # only with --resume
        again = run_cli("run", "--resume", str(run_dir), "--retry-errors", "-q", cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert srv.requests_total - before == 1  # only q3 was asked again
    lines = sample_lines(run_dir)
    counts = Counter(line["sample_id"] for line in lines)
    assert set(counts) == {f"q{i}" for i in range(6)} and set(counts.values()) == {1}
    assert all(line["response_errors"] == [None] for line in lines)
    results = json.loads((run_dir / "results.json").read_text())
    assert results["assay"]["tasks"]["add"]["n_model_errors"] == 0
