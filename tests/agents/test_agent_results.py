"""results.json says, per agent task, the mean turns and tool calls, tool errors and stop reasons; the run's
summary line counts the trajectories a limit stopped."""

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
