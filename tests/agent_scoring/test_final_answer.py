"""The ``final_answer`` filter step: an agent's submitted value, else its text, else its last assistant message, for
text evaluators (whole conversations and, with ``scope: turn``, each turn)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay.errors import ConfigError
from assay.models.base import Response, ToolCall
from assay.tasks.filters import build_step
from assay.tasks.final_answer import final_answer
from assay.testing.server import Conversation, ConversationReplies, OpenAITestServer
from tests.agent_scoring.scoring_support import NUMBERS, rescored, run_task, verdicts, write_task

FINAL = [{"name": "final", "steps": [{"type": "final_answer"}]}]


def test_the_last_assistant_message_with_text_is_the_answer(tmp_path: Path) -> None:
    """A model that answers beside its tool call and then says nothing: the reply that said something is judged."""

    def model(conv: Conversation) -> Any:
        if not conv.tool_results:
            return {"text": "the answer is 3", "tool_calls": [{"name": "add", "arguments": {"x": 1, "y": 2}}]}
        return {"text": ""}

    rows = [{"id": "a", "input": "add 1 and 2", "target": "answer is 3"}]
    task = write_task(tmp_path, rows, filters=FINAL, evaluators=["contains"])
    with OpenAITestServer(ConversationReplies(model)) as server:
        run = run_task(tmp_path, task, server)
    assert run.records[0].responses[0].text == ""
    (verdict,) = verdicts(run, "contains", "final")
    assert verdict["passed"] is True
    assert run.records[0].filters["final"].filtered == ["the answer is 3"]
    assert verdicts(rescored(run, tmp_path), "contains", "final") == [verdict]


def test_each_turn_is_judged_by_what_it_submitted(tmp_path: Path) -> None:
    """With submit, every turn ends in a submit call whose message has no text: final_answer reads the call."""

    def model(conv: Conversation) -> Any:
        x, y = (int(n) for n in NUMBERS.search(conv.user).groups())  # type: ignore[union-attr]
        return {"tool_calls": [{"name": "submit", "arguments": {"answer": str(x + y)}}]}

    rows = [{"id": "s", "input": "add 1 and 2", "target": "3", "turns": [{"content": "add 4 and 4", "expected": "8"}]}]
    evaluators = [
        {"name": "exact_match", "scope": "turn", "filters": ["final"]},
        {"name": "exact_match", "metric": "raw", "scope": "turn", "filters": ["none"]},
    ]
    task = write_task(tmp_path, rows, filters=[*FINAL, {"name": "none", "steps": []}], evaluators=evaluators)
    task.write_text(task.read_text() + "agent:\n  submit: true\n")
    with OpenAITestServer(ConversationReplies(model)) as server:
        run = run_task(tmp_path, task, server)
    (verdict,) = verdicts(run, "exact_match", "final")
    assert verdict["passed"] is True and verdict["details"]["turns_judged"] == 2
    (raw,) = verdicts(run, "raw", "none")
    assert raw["details"]["failed_turns"] == [0]  # the first turn's reply text is empty: only its submit answers
    assert verdicts(rescored(run, tmp_path), "exact_match", "final") == [verdict]


def _submitted_in_transcript_only() -> Response:
    transcript = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "thinking"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "1", "type": "function", "function": {"name": "submit", "arguments": '{"answer": 7}'}}
            ],
        },
    ]
    return Response(text=None, transcript=transcript)


@pytest.mark.parametrize(
    ("response", "source", "answer"),
    [
        (Response(text="t", tool_calls=[ToolCall(name="submit", arguments={"answer": "s"})]), "auto", "s"),
        (Response(text="t", tool_calls=[ToolCall(name="add", arguments={"x": 1})]), "auto", "t"),
        (_submitted_in_transcript_only(), "auto", "7"),
        (_submitted_in_transcript_only(), "last_message", "thinking"),
        (Response(text="t"), "submit", ""),
        (Response(text="t"), "last_message", "t"),
        (Response(text=None), "auto", ""),
    ],
)
def test_sources(response: Response, source: Any, answer: str) -> None:
    assert final_answer(response, source) == answer


def test_values_that_are_not_responses_pass_through_and_a_bad_source_names_the_option() -> None:
    step = build_step({"type": "final_answer"})
    assert step.apply([None, {"a": 1}, Response(text="x")]) == [None, {"a": 1}, "x"]
    with pytest.raises(ConfigError) as err:
        build_step({"type": "final_answer", "source": "first"})
    assert "final_answer: option 'source'" in str(err.value)
