"""``scope: turn``: each turn of a conversation judged on its own (its own expected value from the row's turn spec),
the sample's verdict gathering them, the same on the per-sample path (a run) and the batch path (a re-score)."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.agents.transcript import split_turns
from assay.errors import ConfigError
from assay.runner.turns import calls_by_turn
from assay.tasks import load_task
from assay.testing.server import ConversationReplies, OpenAITestServer
from tests.agent_scoring.scoring_support import adder, rescored, run_task, verdicts, write_task

ROWS = [
    {
        "id": "c1",
        "input": "add 1 and 2",
        "target": "3",
        "turns": [{"content": "now add 10 and 20", "expected": "30"}, {"content": "and 5 and 5", "expected": "11"}],
    },
    {"id": "c2", "input": "add 2 and 2", "target": "4", "turns": [{"content": "add 3 and 3", "expected": "6"}]},
]


@pytest.fixture(scope="module")
def turn_run(tmp_path_factory: pytest.TempPathFactory):
    tmp_path = tmp_path_factory.mktemp("turns")
    evaluators = [
        {"name": "contains", "scope": "turn"},
        {"name": "contains", "metric": "whole", "scope": "conversation"},
    ]
    task = write_task(tmp_path, ROWS, evaluators=evaluators)
    with OpenAITestServer(ConversationReplies(adder)) as server:
        run = run_task(tmp_path, task, server)
    return run, tmp_path


def test_each_turn_is_judged_against_its_own_expected_value(turn_run) -> None:
    run, _ = turn_run
    first, second = verdicts(run, "contains")
    turns = first["details"]["turns"]
    assert [t["turn"] for t in turns] == [0, 1, 2]
    assert [t["user"] for t in turns] == ["add 1 and 2", "now add 10 and 20", "and 5 and 5"]
    assert [t["passed"] for t in turns] == [True, True, False]  # the last reply says 10, its turn spec wants 11
    assert first["score"] == pytest.approx(2 / 3) and first["passed"] is False
    assert first["details"]["failed_turns"] == [2]
    assert first["reason"].startswith("1 of 3 turns failed: turn 2:")
    assert "Turn 2" in first["feedback"]
    assert second["score"] == 1.0 and second["passed"] is True and second["details"]["turns_judged"] == 2
    assert run.results["results"]["conv"]["contains,none"] == pytest.approx((2 / 3 + 1.0) / 2)


def test_scope_conversation_judges_the_whole_answer_as_before(turn_run) -> None:
    run, _ = turn_run
    first, second = verdicts(run, "whole")
    assert "turns" not in first["details"]
    assert first["passed"] is False and second["passed"] is False  # the final replies (10, 6) are not the targets


def test_the_batch_path_gives_the_same_verdicts(turn_run) -> None:
    run, tmp_path = turn_run
    again = rescored(run, tmp_path)
    for metric in ("contains", "whole"):
        assert verdicts(again, metric) == verdicts(run, metric)
    assert again.results["results"]["conv"]["contains,none"] == run.results["results"]["conv"]["contains,none"]


def test_each_turn_is_given_its_own_tool_calls(turn_run) -> None:
    """The test server names every reply's call ``call_0``: the calls are matched by order, not by id."""
    run, _ = turn_run
    response = sorted(run.records, key=lambda r: r.doc_id)[0].responses[0]
    per_turn = calls_by_turn(response, split_turns(response))
    assert [[(c.name, c.arguments, c.result) for c in calls] for calls in per_turn] == [
        [("add", {"x": 1, "y": 2}, "3")],
        [("add", {"x": 10, "y": 20}, "30")],
        [("add", {"x": 5, "y": 5}, "10")],
    ]


def test_a_turn_without_expected_value_is_not_judged_unless_expected_none(tmp_path: Path) -> None:
    rows = [{"id": "c", "input": "add 1 and 2", "target": "3", "turns": ["and 5 and 5"]}]
    evaluators = [
        {"name": "contains", "scope": "turn"},
        {"name": "contains", "metric": "anysum", "scope": "turn", "expected": "none", "substrings": ["the sum is"]},
    ]
    task = write_task(tmp_path, rows, evaluators=evaluators)
    with OpenAITestServer(ConversationReplies(adder)) as server:
        run = run_task(tmp_path, task, server)
    (only,) = verdicts(run, "contains")
    assert only["passed"] is True and only["details"]["turns_judged"] == 1
    assert only["details"]["turns"][1]["judged"] is False
    (every,) = verdicts(run, "anysum")
    assert every["details"]["turns_judged"] == 2 and every["passed"] is True


def test_a_turn_the_evaluator_cannot_judge_makes_an_error_verdict(tmp_path: Path) -> None:
    rows = [{"id": "c", "input": "add 1 and 2", "target": "3", "turns": [{"content": "boom", "expected": "x"}]}]
    evaluators = [{"name": "custom", "fn": "tests.agent_scoring.scoring_support:explode", "scope": "turn"}]
    task = write_task(tmp_path, rows, evaluators=evaluators)
    with OpenAITestServer(ConversationReplies(adder)) as server:
        run = run_task(tmp_path, task, server, max_error_rate=None)
    (verdict,) = verdicts(run, "custom")
    assert verdict["error"] is not None and verdict["score"] is None  # an error, never a zero or a mean of the rest
    assert "1 of 2 turns could not be judged: turn 1:" in verdict["error"] and "cannot judge a boom" in verdict["error"]
    assert verdict["details"]["turns"][0]["passed"] is True
    assert run.records[0].filters["none"].scores["custom"] is None
    assert verdicts(rescored(run, tmp_path), "custom") == [verdict]


def test_a_trajectory_stopped_at_a_limit_fails_on_both_paths(tmp_path: Path) -> None:
    """A model that only ever calls the tool stops at max_turns: a scored failure on the batch path too."""
    rows = [{"id": "c", "input": "add 1 and 2", "target": "how"}]
    always = ConversationReplies(lambda conv: {"tool_calls": [{"name": "add", "arguments": {"x": 1, "y": 1}}]})
    task = write_task(tmp_path, rows, evaluators=["contains"], agent={"max_turns": 2})
    with OpenAITestServer(always) as server:
        run = run_task(tmp_path, task, server)
    (verdict,) = verdicts(run, "contains")
    assert verdict["passed"] is False and "max_turns" in verdict["reason"] and verdict["error"] is None
    assert verdicts(rescored(run, tmp_path), "contains") == [verdict]


def test_a_bad_scope_names_its_key_and_line(tmp_path: Path) -> None:
    task = write_task(tmp_path, ROWS[:1], evaluators=[{"name": "contains", "scope": "turns"}])
    with pytest.raises(ConfigError) as err:
        load_task(task)
    message = str(err.value)
    assert "evaluators[0].scope" in message and "conv.yaml:" in message
    assert "scope must be one of turn, conversation, got 'turns'" in message
