"""The tool loop's rules: errors reach the model, limits are scored failures, parallel calls overlap, a model error
mid-trajectory is an error sample, declared-only tools keep today's behaviour, the cache answers per turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import agent_tools
from agent_support import run_task, write_agent_task

from assay.testing.server import Conversation, ConversationReplies, OpenAITestServer

ROW = [{"id": "s0", "input": "go", "target": "done"}]


def test_a_tool_that_raises_or_hangs_answers_the_model_with_its_error(tmp_path: Path) -> None:
    def step(conv: Conversation) -> Any:
        if not conv.tool_results:
            return {
                "tool_calls": [
                    {"name": "explode", "arguments": {"reason": "x"}},
                    {"name": "hang", "arguments": {"seconds": 30}},
                ]
            }
        return "done: " + " | ".join(r["content"] for r in conv.tool_results)

    task = write_agent_task(
        tmp_path,
        ROW,
        tools=[{"python": "agent_tools:explode"}, {"python": "agent_tools:hang"}],
        agent={"tool_timeout_s": 0.3},
    )
    with OpenAITestServer(ConversationReplies(step)) as server:
        run = run_task(tmp_path, task, server)
    response = run.records[0].responses[0]
    assert response.stop_reason == "answer"
    assert response.text == "done: Error: RuntimeError: boom: x | Error: hang did not finish within 0.3s"
    assert [c.error for c in response.tool_calls] == ["RuntimeError: boom: x", "hang did not finish within 0.3s"]
    tools = [m for m in response.transcript if m["role"] == "tool"]
    assert all(m["error"] is True for m in tools)
    assert run.results["results"]["agent"]["contains,none"] == 1.0


def test_a_model_that_always_calls_a_tool_stops_at_max_turns_as_a_scored_failure(tmp_path: Path) -> None:
    always = ConversationReplies(
        lambda conv: {"tool_calls": [{"name": "add", "arguments": {"x": 1, "y": 2}}], "text": "done"}
    )
    task = write_agent_task(tmp_path, ROW, tools=[{"python": "agent_tools:add"}], agent={"max_turns": 3})
    with OpenAITestServer(always) as server:
        run = run_task(tmp_path, task, server)
        assert server.requests_total == 3
    record = run.records[0]
    response = record.responses[0]
    assert response.stop_reason == "max_turns" and len(response.tool_calls) == 3
    assert record.error is None  # not an error sample: scored, and failed
    verdict = record.filters["none"].verdicts["contains"][0]
    assert verdict["passed"] is False and verdict["score"] == 0.0 and "max_turns" in verdict["reason"]
    assert run.results["results"]["agent"]["contains,none"] == 0.0  # its text says "done", yet it fails


def test_max_tool_calls_and_token_budget_are_limits(tmp_path: Path) -> None:
    two = ConversationReplies(lambda conv: {"tool_calls": [{"name": "add", "arguments": {"x": 1, "y": 1}}] * 2})
    task = write_agent_task(tmp_path, ROW, tools=[{"python": "agent_tools:add"}], agent={"max_tool_calls": 3})
    with OpenAITestServer(two) as server:
        response = run_task(tmp_path, task, server).records[0].responses[0]
    assert response.stop_reason == "max_tool_calls" and len(response.tool_calls) == 2
    budget = write_agent_task(
        tmp_path, ROW, name="budget", tools=[{"python": "agent_tools:add"}], agent={"token_budget": 5}
    )
    with OpenAITestServer(two) as server:
        response = run_task(tmp_path, budget, server).records[0].responses[0]
    assert response.stop_reason == "token_budget"


def test_parallel_calls_run_concurrently_within_their_bound(tmp_path: Path) -> None:
    def step(conv: Conversation) -> Any:
        if not conv.tool_results:
            return {"tool_calls": [{"name": "slow_add", "arguments": {"x": i, "y": i}} for i in range(4)]}
        return " ".join(r["content"] for r in conv.tool_results)

    agent_tools.CONCURRENT.clear()
    task = write_agent_task(tmp_path, ROW, tools=[{"python": "agent_tools:slow_add"}], agent={"parallel_tool_calls": 2})
    with OpenAITestServer(ConversationReplies(step)) as server:
        response = run_task(tmp_path, task, server).records[0].responses[0]
    assert response.text == "0 2 4 6"  # results in call order
    spans = sorted(agent_tools.CONCURRENT)
    most = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    assert most == 2  # two at a time: overlapping, and never more than the bound


def test_a_model_error_mid_trajectory_is_an_error_sample_after_retries(tmp_path: Path) -> None:
    def step(conv: Conversation) -> Any:
        if not conv.tool_results:
            return {"tool_calls": [{"name": "add", "arguments": {"x": 1, "y": 1}}]}
        return {"status": 500, "error": "down"}

    task = write_agent_task(tmp_path, ROW, tools=[{"python": "agent_tools:add"}])
    with OpenAITestServer(ConversationReplies(step)) as server:
        run = run_task(tmp_path, task, server, max_attempts=3, max_error_rate=1.0)
        assert server.requests_total == 4  # the first call, then the second tried 3 times
    record = run.records[0]
    assert record.responses == [None] and "mid-trajectory" in (record.error or "")
    assert record.filters["none"].verdicts["contains"][0]["error"]


def test_declared_only_tools_keep_todays_behaviour(tmp_path: Path) -> None:
    schema = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}
    reply = {"tool_calls": [{"name": "lookup", "arguments": {}}]}
    task = write_agent_task(
        tmp_path, ROW, tools=[schema], evaluators=[{"name": "tool_usage", "expected_calls": [{"name": "lookup"}]}]
    )
    with OpenAITestServer(reply) as server:
        run = run_task(tmp_path, task, server)
        assert server.requests_total == 1
    response = run.records[0].responses[0]
    assert response.stop_reason is None and [(c.name, c.result) for c in response.tool_calls] == [("lookup", None)]


def test_submit_tool_gives_the_answer(tmp_path: Path) -> None:
    def step(conv: Conversation) -> Any:
        if not conv.tool_results:
            return {"tool_calls": [{"name": "add", "arguments": {"x": 20, "y": 22}}]}
        return {"tool_calls": [{"name": "submit", "arguments": {"answer": f"done {conv.tool_results[0]['content']}"}}]}

    task = write_agent_task(
        tmp_path,
        [{"id": "s0", "input": "go", "target": "done 42"}],
        tools=[{"python": "agent_tools:add"}],
        agent={"submit": True},
    )
    with OpenAITestServer(ConversationReplies(step)) as server:
        run = run_task(tmp_path, task, server)
    response = run.records[0].responses[0]
    assert response.stop_reason == "submit" and response.text == "done 42"
    assert run.results["results"]["agent"]["contains,none"] == 1.0


def test_the_cache_answers_each_turn_of_a_trajectory(tmp_path: Path, monkeypatch: Any) -> None:
    from agent_support import write_agent_task as write
    from test_inspect_examples import _answer, _calls

    from assay.testing.server import tool_then_answer

    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "cache"))
    rows = [{"id": f"s{i}", "input": f"What is {i} + 1?", "target": str(i + 1)} for i in range(3)]
    task = write(tmp_path, rows, tools=[{"python": "agent_tools:add"}])
    with OpenAITestServer(tool_then_answer(_calls, _answer)) as server:
        first = run_task(tmp_path, task, server, cache=True)
        assert server.requests_total == 6
        second = run_task(tmp_path, task, server, cache=True)
        assert server.requests_total == 6  # every turn answered from the cache: nothing sent
    assert [r.responses[0].text for r in second.records] == [r.responses[0].text for r in first.records]
    assert all(r.cache_hits == 1 for r in second.records)
    assert [c.result for c in second.records[0].responses[0].tool_calls] == ["1"]  # the tool ran again
