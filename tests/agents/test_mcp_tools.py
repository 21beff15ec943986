"""Tools of a stdio MCP server: listed when the run starts, called by the loop, errors sent back to the model, one
server for the run or one per sample (``per_sample: true``), stopped at the end."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from agent_support import run_task, write_agent_task

from assay.testing.server import Conversation, ConversationReplies, OpenAITestServer

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
