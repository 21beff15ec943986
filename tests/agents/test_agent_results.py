"""results.json says, per agent task, the mean turns and tool calls, tool errors and stop reasons; the run's
summary line counts the trajectories a limit stopped; operational figures count each model call of a trajectory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_support import write_agent_task

from assay.api import arun_outcome
from assay.runner.exits import summary_line
from assay.testing.server import Conversation, ConversationReplies, OpenAITestServer


def _step(conv: Conversation) -> Any:
    if "loop" in conv.user:
        return {"tool_calls": [{"name": "add", "arguments": {"x": 1, "y": 1}}]}
    if not conv.tool_results:
        return {
            "tool_calls": [
                {"name": "add", "arguments": {"x": 1, "y": 1}},
                {"name": "explode", "arguments": {"reason": "r"}},
            ]
        }
    return "done"


async def test_results_count_turns_tool_calls_errors_and_stops(tmp_path: Path) -> None:
    rows = [
        {"id": "a", "input": "answer", "target": "done"},
        {"id": "b", "input": "answer", "target": "done"},
        {"id": "c", "input": "loop", "target": "done"},
    ]
    task = write_agent_task(
        tmp_path, rows, tools=[{"python": "agent_tools:add"}, {"python": "agent_tools:explode"}], agent={"max_turns": 4}
    )
    with OpenAITestServer(ConversationReplies(_step)) as server:
        model = {"provider": "openai", "model": "assay-test", "base_url": server.base_url}
        outcome = await arun_outcome(task, model, output_dir=tmp_path / "runs", cache=False, progress=False)
    import json

    results = json.loads((outcome.run_dir / "results.json").read_text())
    agent = results["assay"]["tasks"]["agent"]["agent"]
    assert agent == {
        "trajectories": 3,
        "mean_turns": (2 + 2 + 4) / 3,
        "mean_tool_calls": (2 + 2 + 4) / 3,
        "tool_errors": 2,
        "stop_reasons": {"answer": 2, "max_turns": 1},
        "limit_stops": 1,
    }
    assert results["assay"]["agent_limit_stops"] == 1
    assert results["results"]["agent"]["contains,none"] == 2 / 3
    assert outcome.limit_stops == 1
    assert "1 agent trajectories stopped at a limit" in summary_line(outcome)


def test_operations_count_every_model_call_of_a_trajectory(tmp_path: Path, monkeypatch: Any) -> None:
    from agent_support import run_task

    from assay.testing.server import tool_then_answer

    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "cache"))
    rows = [{"id": f"s{i}", "input": f"add {i}", "target": str(2 * i)} for i in range(5)]
    task = write_agent_task(tmp_path, rows, tools=[{"python": "agent_tools:slow_add"}])

    def calls(user: str) -> list[dict[str, Any]]:
        i = int(user.split()[-1])
        return [{"name": "slow_add", "arguments": {"x": i, "y": i}}]

    with OpenAITestServer(tool_then_answer(calls, lambda user, results: results[0]), latency_s=0.02) as server:
        first = run_task(tmp_path, task, server, cache=True)
        assert server.requests_total == 10
        second = run_task(tmp_path, task, server, cache=True)
    ops = first.results["assay"]["operational"]["roles"]["model"]["assay-test"]
    assert ops["requests"] == 10 and ops["cache_hits"] == 0  # 5 trajectories of 2 model calls each
    assert ops["input_tokens"] == sum(r.responses[0].usage.input_tokens for r in first.records)
    assert ops["latency_s"]["max"] < 0.3  # each call's own latency: the 0.3 s tool runs between the calls
    again = second.results["assay"]["operational"]["roles"]["model"]["assay-test"]
    assert again["requests"] == 10 and again["cache_hits"] == 10
