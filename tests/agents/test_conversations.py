"""Conversations: a row's scripted user turns and a simulated user, the model using tools on every turn; turns are
recorded (Response.turns) and split_turns gives each turn with its expected value; a Python agent may return its
own transcript."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from agent_support import run_task, write_agent_task

from assay.agents.transcript import split_turns
from assay.testing.server import Conversation, ConversationReplies, OpenAITestServer

NUMBERS = re.compile(r"(\d+) and (\d+)")


def _assistant(conv: Conversation) -> Any:
    """Adds the two numbers of each user message with the tool, then says the sum."""
    found = NUMBERS.search(conv.user)
    if found and not conv.tool_results:
        return {"tool_calls": [{"name": "add", "arguments": {"x": int(found[1]), "y": int(found[2])}}]}
    if conv.tool_results:
        return f"the sum is {conv.tool_results[0]['content']}"
    return "how can I help?"


def test_scripted_turns_each_answered_with_tools(tmp_path: Path) -> None:
    rows = [
        {
            "id": "c",
            "input": "add 1 and 2",
            "target": "3",
            "turns": [{"content": "now add 10 and 20", "expected": "30"}, "and 5 and 5"],
        }
    ]
    task = write_agent_task(tmp_path, rows, tools=[{"python": "agent_tools:add"}])
    with OpenAITestServer(ConversationReplies(_assistant)) as server:
        run = run_task(tmp_path, task, server)
        assert server.requests_total == 6  # two model calls per turn
    response = run.records[0].responses[0]
    assert response.stop_reason == "turns_done"
    assert [c.result for c in response.tool_calls] == ["3", "30", "10"]
    assert response.text == "the sum is 10"
    turns = split_turns(response, expected=["3", "30", None])
    assert [(t.user, t.reply, t.expected) for t in turns] == [
        ("add 1 and 2", "the sum is 3", "3"),
        ("now add 10 and 20", "the sum is 30", "30"),
        ("and 5 and 5", "the sum is 10", None),
    ]
    assert [response.transcript[i]["role"] for i in response.turns] == ["user"] * 3


def test_a_simulated_user_talks_until_its_goal_is_met(tmp_path: Path) -> None:
    def user(conv: Conversation) -> Any:
        system = conv.messages[0]["content"]
        assert "Your goal: learn the sums of 3 and 4, then 6 and 7" in system and "a terse accountant" in system
        said = sum(m["role"] == "assistant" for m in conv.messages)  # the user's own earlier messages
        if said == 1:
            return "and 6 and 7?"
        return "DONE"

    with OpenAITestServer(ConversationReplies(user)) as user_server:
        rows = [
            {
                "id": "u",
                "input": "what are 3 and 4?",
                "target": "13",
                "goal": "learn the sums of 3 and 4, then 6 and 7",
                "persona": "a terse accountant",
            }
        ]
        task = write_agent_task(
            tmp_path,
            rows,
            tools=[{"python": "agent_tools:add"}],
            user={
                "model": {"provider": "openai", "model": "sim-user", "base_url": user_server.base_url},
                "max_turns": 4,
            },
        )
        with OpenAITestServer(ConversationReplies(_assistant)) as server:
            run = run_task(tmp_path, task, server)
        assert user_server.requests_total == 2  # one follow-up, then DONE
    response = run.records[0].responses[0]
    assert response.stop_reason == "user_done"
    user_messages = [m for m in response.transcript if m["role"] == "user"]
    assert [m.get("simulated", False) for m in user_messages] == [False, True]
    assert [t.reply for t in split_turns(response)] == ["the sum is 7", "the sum is 13"]
    assert run.results["results"]["agent"]["contains,none"] == 1.0


def test_a_simulated_user_stops_at_its_max_turns(tmp_path: Path) -> None:
    with OpenAITestServer("and 1 and 1?") as user_server:
        rows = [{"id": "u", "input": "what are 3 and 4?", "target": "2", "goal": "chat forever"}]
        task = write_agent_task(
            tmp_path,
            rows,
            tools=[{"python": "agent_tools:add"}],
            user={"model": {"provider": "openai", "model": "u", "base_url": user_server.base_url}, "max_turns": 2},
        )
        with OpenAITestServer(ConversationReplies(_assistant)) as server:
            response = run_task(tmp_path, task, server).records[0].responses[0]
    assert response.stop_reason == "turns_done" and len(response.turns) == 3


AGENT = """
def answer(doc):
    transcript = [
        {"role": "user", "content": doc["input"]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "lookup", "content": "42"},
        {"role": "assistant", "content": "42"},
    ]
    return {"text": "42", "transcript": transcript, "stop_reason": "answer",
            "tool_calls": [{"name": "lookup", "arguments": {}, "id": "c1", "result": "42", "error": None}]}
"""


def test_a_python_agent_returns_its_transcript(tmp_path: Path, monkeypatch: Any) -> None:
    import assay

    (tmp_path / "my_conv_agent.py").write_text(AGENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    task = write_agent_task(tmp_path, [{"id": "p", "input": "q", "target": "42"}])
    run = assay.run(task, "python:my_conv_agent:answer", output_dir=tmp_path / "runs", cache=False, progress=False)
    response = run.records[0].responses[0]
    assert response.stop_reason == "answer" and len(response.transcript) == 4
    assert response.tool_calls[0].result == "42"
    assert [t.reply for t in split_turns(response)] == ["42"]
