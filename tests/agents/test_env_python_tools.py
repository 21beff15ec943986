"""A user's Python tool given a handle on the sample's environment: a parameter annotated ``Environment`` receives
it (the model's schema does not show it), and the tool reads the sample's own workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_support import run_task, write_agent_task

from assay.testing.server import Conversation, ConversationReplies, OpenAITestServer
from assay.tools.python import PythonTool
from tests.sandbox.sandbox_support import needs_bwrap


def test_the_environment_parameter_is_not_in_the_schema() -> None:
    from agent_tools import count_lines

    tool = PythonTool(count_lines)
    assert tool.parameters["properties"].keys() == {"path"} and tool.parameters["required"] == ["path"]
    assert tool.needs_environment and tool.needs_workspace


@needs_bwrap
def test_a_python_tool_reads_its_samples_workspace(tmp_path: Path) -> None:
    def step(conv: Conversation) -> Any:
        if not conv.tool_results:
            return {"tool_calls": [{"name": "count_lines", "arguments": {"path": "notes.txt"}}]}
        return conv.tool_results[0]["content"]

    rows = [
        {"id": "a", "input": "count", "target": "2", "files": {"notes.txt": "one\ntwo\n"}},
        {"id": "b", "input": "count", "target": "3", "files": {"notes.txt": "x\ny\nz\n"}},
    ]
    task = write_agent_task(tmp_path, rows, tools=[{"python": "agent_tools:count_lines"}], environment={})
    with OpenAITestServer(ConversationReplies(step)) as server:
        run = run_task(tmp_path, task, server)
    assert {r.sample_id: r.responses[0].text for r in run.records} == {"a": "2", "b": "3"}
    assert run.results["results"]["agent"]["contains,none"] == 1.0
