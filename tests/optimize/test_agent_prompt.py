"""``assay optimize`` on an agent: the system prompt of a task whose model acts with a Python tool is improved from
its trajectory verdicts (tool_usage's feedback names the tool the model never called), and the gain is proved on
the held-out test split by running the tool loop with the winning prompt."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

import assay
from assay.optimize import aoptimize
from assay.testing.server import Conversation, ConversationReplies, OpenAITestServer, last_user_text
from tests.optimize.optimize_support import NO_CACHE, model_spec

SUM = re.compile(r"(\d+) \+ (\d+)")
RULE = "Always call the add tool for arithmetic and answer with its result."


def agent_step(conv: Conversation) -> Any:
    """A tool-using model that calls ``add`` only when its system prompt tells it to; otherwise it guesses (off by
    one), so only a trajectory with the tool call answers right."""
    system = " ".join(str(m.get("content") or "") for m in conv.messages if m.get("role") == "system")
    a, b = (int(x) for x in SUM.findall(conv.user)[0])
    if conv.tool_results:
        return f"The answer is {conv.tool_results[0]['content']}."
    if "add tool" in system and "add" in conv.tools:
        return {"tool_calls": [{"name": "add", "arguments": {"x": a, "y": b}}]}
    return f"The answer is {a + b + 1}."


def optimiser(body: dict[str, Any]) -> str:
    """The optimiser model: adds the rule the feedback asks for (a never-called tool) to the current prompt."""
    prompt = last_user_text(body)
    blocks = re.findall(r"```\n?(.*?)```", prompt, re.DOTALL)
    current = blocks[0].strip() if blocks else ""
    feedback = "\n".join(re.findall(r"BEGIN feedback>>>\n(.*?)\n<<<END feedback", prompt, re.DOTALL))
    lines = [line for line in current.splitlines() if line.strip()]
    if "add" in feedback and RULE not in lines:
        lines.append(RULE)
    return "```\n" + "\n".join(lines) + "\n```"


def agent_task(tmp_path: Path) -> Path:
    rows = [{"id": f"q{i}", "input": f"What is {i} + {2 * i + 3}?", "target": str(3 * i + 3)} for i in range(30)]
    data = tmp_path / "sums.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "sum_tools.py").write_text(
        'def add(x: int, y: int) -> int:\n    """Add two integers.\n\n    Args:\n        x: The first.\n'
        '        y: The second.\n    """\n    return x + y\n'
    )
    task = {
        "name": "sums",
        "dataset": data.name,
        "template": "{{ input }}",
        "system": "You are a helpful assistant.",
        "tools": [{"python": "sum_tools:add"}],
        "agent": {"max_turns": 4},
        "evaluators": [{"name": "tool_usage", "required": ["add"]}, "numeric"],
        "optimize": {"components": ["system"], "metric": "tool_usage"},
    }
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(task, sort_keys=False))
    return path


@pytest.fixture
def agent_server() -> Any:
    with OpenAITestServer(ConversationReplies(agent_step)) as srv:
        yield srv


@pytest.fixture
def reflect_server() -> Any:
    with OpenAITestServer(optimiser) as srv:
        yield srv


async def test_optimize_improves_an_agents_system_prompt_from_its_trajectory_verdicts(
    tmp_path: Path, agent_server: OpenAITestServer, reflect_server: OpenAITestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))  # the task's Python tool
    monkeypatch.chdir(tmp_path)
    task = agent_task(tmp_path)
    result = await aoptimize(
        str(task), model_spec(agent_server), optimizer_model=model_spec(reflect_server), budget=120,
        output_dir=tmp_path / "out", run_settings=NO_CACHE,
    )  # fmt: skip
    assert result.test["baseline"]["mean"] == 0.0  # the original prompt never calls the tool
    assert result.test["best"]["mean"] == 1.0
    assert result.improved and result.test["comparison"]["better"]
    # the optimiser was shown the trajectory verdict's feedback: the tool that was never called
    reflections = [last_user_text(body) for body in reflect_server.requests]
    assert reflections and any("add" in text and "BEGIN feedback>>>" in text for text in reflections)
    winner = yaml.safe_load((result.folder / "best_task.yaml").read_text())
    assert RULE in winner["system"]
    # the winning task runs the loop: every sample calls the tool, then answers with its result
    run = await assay.arun(winner, model_spec(agent_server), output_dir=tmp_path / "check", cache=False)
    assert run.row("sums", "tool_usage").mean == 1.0
    assert run.row("sums", "numeric").mean == 1.0
    record = run.records[0]
    response = record.responses[0]
    assert [c.name for c in response.tool_calls] == ["add"] and response.stop_reason == "answer"
    assert [m["role"] for m in response.transcript][-2:] == ["tool", "assistant"]
