"""Tools of a stdio MCP server: listed when the run starts, called by the loop, errors sent back to the model, one
server for the run or one per sample (``per_sample: true``), stopped at the end; a server that cannot start stops
the run before any sample, with its own error, and its start time-out is paid once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agent_support import run_task, write_agent_task

from assay.testing.server import Conversation, ConversationReplies, OpenAITestServer
from tests.e2e.e2e_support import assay_cmd, only_run_dir

pytest.importorskip("mcp")
SERVER = str(Path(__file__).with_name("mcp_server.py"))


def _step(conv: Conversation) -> Any:
    if not conv.tool_results:
        return {
            "tool_calls": [
                {"name": "add", "arguments": {"x": 2, "y": 40}},
                {"name": "greet", "arguments": {"name": "ada"}},
                {"name": "fail", "arguments": {}},
                {"name": "count", "arguments": {}},
            ]
        }
    return " | ".join(r["content"] for r in conv.tool_results)


def _run(tmp_path: Path, per_sample: bool) -> tuple[Any, list[dict[str, Any]]]:
    rows = [{"id": f"s{i}", "input": "go", "target": "42 | hi ada"} for i in range(3)]
    spec = {"command": [sys.executable], "args": [SERVER], "env": {"MCP_GREETING": "hi"}, "per_sample": per_sample}
    task = write_agent_task(tmp_path, rows, name=f"mcp{int(per_sample)}", tools=[{"mcp": spec}])
    with OpenAITestServer(ConversationReplies(_step)) as server:
        run = run_task(tmp_path, task, server, concurrency=1)
        sent = server.requests
    return run, sent


def test_the_loop_calls_an_mcp_servers_tools(tmp_path: Path) -> None:
    run, sent = _run(tmp_path, per_sample=False)
    names = {t["function"]["name"] for t in sent[0]["tools"]}
    assert names == {"add", "count", "greet", "fail"}
    assert run.results["results"]["mcp0"]["contains,none"] == 1.0
    counts = []
    for record in run.records:
        calls = record.responses[0].tool_calls
        assert [c.result for c in calls[:2]] == ["42", "hi ada"]
        assert calls[2].error is not None and "fail" in calls[2].error  # the server's error, sent to the model
        counts.append(int(calls[3].result or 0))
    assert sorted(counts) == [1, 2, 3]  # one server process for the whole run


def test_per_sample_servers_start_fresh_for_each_trajectory(tmp_path: Path) -> None:
    run, _ = _run(tmp_path, per_sample=True)
    assert [int(r.responses[0].tool_calls[3].result or 0) for r in run.records] == [1, 1, 1]


BROKEN = (
    "import sys\nsys.stderr.write('Traceback ...\\nModuleNotFoundError: No module named fancy_tools\\n')\nsys.exit(3)\n"
)
SILENT = "import sys, time\nsys.stderr.write('warming up the index...\\n')\nsys.stderr.flush()\ntime.sleep(600)\n"


def _cli_run(tmp_path: Path, script: str, **mcp: Any) -> tuple[subprocess.CompletedProcess[str], int, Path]:
    (tmp_path / "server.py").write_text(script)
    rows = [{"id": f"s{i}", "input": "go", "target": "42"} for i in range(4)]
    spec = {"command": [sys.executable, str(tmp_path / "server.py")], **mcp}
    evaluators = ["contains", {"name": "tool_usage", "required": ["add"]}]
    task = write_agent_task(tmp_path, rows, tools=[{"mcp": spec}], evaluators=evaluators)
    env = {**os.environ, "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
    with OpenAITestServer(ConversationReplies(_step)) as server:
        cmd = assay_cmd("run", str(task), "--model", "openai:assay-test", "--base-url", server.base_url, "-c", "4")
        done = subprocess.run(
            [*cmd, "-o", "runs", "-q", "--no-cache"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
        )
        sent = server.requests_total
    return done, sent, only_run_dir(tmp_path / "runs")


def test_a_server_that_cannot_start_stops_the_run_before_any_sample_with_its_own_error(tmp_path: Path) -> None:
    done, sent, run_dir = _cli_run(tmp_path, BROKEN)
    assert done.returncode == 3, done.stderr  # stopped, resumable once fixed
    assert "No module named fancy_tools" in done.stderr  # the server's own stderr, not a TaskGroup
    assert "TaskGroup" not in done.stderr and "--resume" in done.stderr
    assert sent == 0 and (run_dir / "samples.jsonl").read_text() == ""  # no sample ran without its tools
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["status"] == "failed"


def test_a_server_that_never_answers_costs_its_start_timeout_once(tmp_path: Path) -> None:
    done, sent, run_dir = _cli_run(tmp_path, SILENT, start_timeout_s=3)
    assert done.returncode == 3, done.stderr
    assert "did not start within 3s" in done.stderr and "warming up the index" in done.stderr
    assert sent == 0 and (run_dir / "samples.jsonl").read_text() == ""
    seconds = json.loads((run_dir / "run.json").read_text())["total_seconds"]
    # once for the run, not per sample (4 wait at once), and never again when closing it: the time-out plus the
    # mcp client's 2 s grace for a server to exit once its stdin is closed
    assert 3 <= seconds < 6
