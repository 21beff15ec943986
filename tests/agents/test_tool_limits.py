"""What a misbehaving tool cannot do: a sync tool past its time-out is abandoned (the command still exits when the run
is done), a huge result is capped as answers are (for the model and in the record, with its full length), and a
tool call that failed never counts as the required tool having been used."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from agent_support import run_task, write_agent_task

from assay import evaluators
from assay.models.base import Response, ToolCall
from assay.testing.server import Conversation, ConversationReplies, OpenAITestServer
from tests.e2e.e2e_support import assay_cmd, only_run_dir, sample_lines

HERE = Path(__file__).parent


def test_a_sync_tool_that_never_returns_is_abandoned_and_assay_run_exits(tmp_path: Path) -> None:
    def step(conv: Conversation) -> Any:
        if not conv.tool_results:
            return {"tool_calls": [{"name": "block", "arguments": {"reason": "r"}}]}
        return "done: " + conv.tool_results[0]["content"]

    rows = [{"id": f"s{i}", "input": "go", "target": "done"} for i in range(3)]
    task = write_agent_task(tmp_path, rows, tools=[{"python": "agent_tools:block"}], agent={"tool_timeout_s": 0.5})
    env = {**os.environ, "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    with OpenAITestServer(ConversationReplies(step)) as server:
        cmd = assay_cmd("run", str(task), "--model", "openai:assay-test", "--base-url", server.base_url)
        t0 = time.monotonic()
        done = subprocess.run(
            [*cmd, "-o", "runs", "-q", "--no-cache"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30
        )
        elapsed = time.monotonic() - t0
    assert done.returncode == 0, done.stderr
    assert elapsed < 15  # the blocked threads are left behind: the process ends with the run
    run_dir = only_run_dir(tmp_path / "runs")
    assert json.loads((run_dir / "run.json").read_text())["status"] == "finished"
    for line in sample_lines(run_dir):
        call = line["responses"][0]["tool_calls"][0]
        assert call["error"] == "block did not finish within 0.5s"


def _huge_step(conv: Conversation) -> Any:
    if not conv.tool_results:
        return {"tool_calls": [{"name": "huge", "arguments": {"n": 3_000_000}}]}
    return f"read {len(conv.tool_results[0]['content'])} characters"


def _huge_run(tmp_path: Path, **options: Any) -> tuple[Any, list[dict[str, Any]], Path]:
    task = write_agent_task(
        tmp_path, [{"id": "s0", "input": "go", "target": "read"}], tools=[{"python": "agent_tools:huge"}]
    )
    with OpenAITestServer(ConversationReplies(_huge_step)) as server:
        run = run_task(tmp_path, task, server, **options)
        sent = server.requests
    return run, sent, only_run_dir(tmp_path / "runs")


def test_a_huge_tool_result_is_capped_for_the_model_and_the_record(tmp_path: Path) -> None:
    run, sent, run_dir = _huge_run(tmp_path, max_response_chars=1000)
    given = sent[1]["messages"][-1]["content"]  # what the model read of the tool's result
    assert given.startswith("x" * 1000) and len(given) < 1200 and "END" not in given
    assert "3000000" in given and "1000" in given  # the model is told it was cut, and at what cap
    response = run.records[0].responses[0]
    call = response.tool_calls[0]
    assert call.result == given and call.truncated_from == 3_000_000
    message = next(m for m in response.transcript if m["role"] == "tool")
    assert message["content"] == given and message["truncated_from"] == 3_000_000
    assert (run_dir / "samples.jsonl").stat().st_size < 20_000


def test_the_default_cap_is_the_answers_cap(tmp_path: Path) -> None:
    from assay.agents.config import MAX_TOOL_RESULT_CHARS
    from assay.runner.exits import DEFAULT_MAX_RESPONSE_CHARS

    assert MAX_TOOL_RESULT_CHARS == DEFAULT_MAX_RESPONSE_CHARS  # an AgentLoop used alone caps as a run does
    run, sent, run_dir = _huge_run(tmp_path)
    given = sent[1]["messages"][-1]["content"]
    assert DEFAULT_MAX_RESPONSE_CHARS <= len(given) < DEFAULT_MAX_RESPONSE_CHARS + 200
    assert run.records[0].responses[0].tool_calls[0].truncated_from == 3_000_000
    assert (run_dir / "samples.jsonl").stat().st_size < 3 * DEFAULT_MAX_RESPONSE_CHARS  # was 2 × 3 MB


def test_a_failed_call_never_counts_as_the_required_tool_used() -> None:
    failed = ToolCall(name="add", arguments={"x": 1}, result="Error: there is no tool named 'add'", error="no tool")
    verdict = evaluators.get("tool_usage", required=["add"]).evaluate(Response(text="3", tool_calls=[failed]))
    assert not verdict.passed and verdict.score == 0.0
    assert "every call failed" in (verdict.reason or "") and "no tool" in (verdict.reason or "")
    implied = evaluators.get("tool_usage", expected_calls=[{"name": "add"}])  # required, implied
    assert not implied.evaluate(Response(text="3", tool_calls=[failed])).passed
    ok = ToolCall(name="add", arguments={"x": 1}, result="3")
    again = evaluators.get("tool_usage", required=["add"]).evaluate(Response(text="3", tool_calls=[failed, ok]))
    assert again.passed  # a retry that worked is a use of the tool
