"""split_turns reads a transcript by its turns; the new Response fields load from old records."""

from __future__ import annotations

from assay.agents.transcript import split_turns
from assay.models.base import Response, ToolCall


def test_turns_split_at_recorded_user_messages() -> None:
    transcript = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "add 1 and 2"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "add", "content": "3"},
        {"role": "assistant", "content": "3"},
        {"role": "user", "content": "times 2?"},
        {"role": "assistant", "content": "6"},
    ]
    response = Response(text="6", transcript=transcript, turns=[1, 5], stop_reason="turns_done")
    turns = split_turns(response, expected=["3", "6"])
    assert [(t.index, t.user, t.reply, t.expected) for t in turns] == [
        (0, "add 1 and 2", "3", "3"),
        (1, "times 2?", "6", "6"),
    ]
    assert len(turns[0].messages) == 4 and turns[1].messages[-1]["content"] == "6"


def test_without_recorded_turns_every_user_message_opens_one() -> None:
    transcript = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
        {"role": "assistant", "content": "d"},
    ]
    assert [t.reply for t in split_turns(Response(text="d", transcript=transcript))] == ["b", "d"]


def test_plain_response_is_one_turn_and_old_records_load() -> None:
    assert [(t.user, t.reply) for t in split_turns(Response(text="hi"))] == [("", "hi")]
    old = Response.model_validate({"text": "x", "tool_calls": [{"name": "f", "arguments": {}}]})
    assert old.transcript == [] and old.stop_reason is None and old.turns == []
    assert old.tool_calls[0] == ToolCall(name="f") and old.tool_calls[0].error is None
