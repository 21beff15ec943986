"""The ``reasoning`` task key and the splitter behind it: how a reply is split into answer and reasoning, what the
key accepts, and what it does to the task's hash (nothing, for a task without it)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from assay.errors import ConfigError
from assay.models.base import Response
from assay.tasks import Task
from assay.tasks.reasoning import ReasoningSplitter
from tests.tasks.task_support import ROWS
from tests.tasks.test_task_hash import config, hash_of

# the hashes at the commit before the key existed: a task that does not set it must keep them
HASH_BEFORE = "829c2510c48066b15d2a232808ff1d044cb245fd7404856cbbb6f103f14b1a31"


@pytest.mark.parametrize(
    ("text", "answer", "reasoning"),
    [
        ("<think>the answer is 5</think>42", "42", "the answer is 5"),
        ("<think>\n\n</think>\n\n42", "42", ""),  # Qwen3 with thinking switched off: an empty block
        ("5 or 42?</think>\n42", "42", "5 or 42?"),  # the block was opened by the chat template
        ("<think>cut off at max_tokens", "", "cut off at max_tokens"),
        ("  <think>a</think>\n<think>b", "", "a\n\nb"),  # cut off in a second block: still nothing answered
        ("<think>a</think>b<think>c</think>d", "bd", "a\n\nc"),
        ("[THINK]hm[/THINK] ok", "ok", "hm"),
        ("◁think▷hm◁/think▷ok", "ok", "hm"),
        ("<thinking>x</thinking>y", "y", "x"),
        ("<reasoning>x</reasoning>y", "y", "x"),
        ("x <think>a", "x <think>a", None),  # an unclosed block after an answer is answer text
        ("a</think>b</think>c", "b</think>c", "a"),  # only the first closing one ends prompt-opened thinking
        (" 42 \n", " 42 \n", None),  # no delimiter: exactly as it came
        ("", "", None),
        (None, None, None),
    ],
)
def test_a_reply_is_split(text: str | None, answer: str | None, reasoning: str | None) -> None:
    assert ReasoningSplitter().split(text) == (answer, reasoning)


def test_given_delimiters_replace_the_default_ones() -> None:
    splitter = ReasoningSplitter([("<|begin_of_thought|>", "<|end_of_thought|>")])
    assert splitter.split("<|begin_of_thought|>hm<|end_of_thought|>42") == ("42", "hm")
    assert splitter.split("<think>hm</think>42") == ("<think>hm</think>42", None)


def test_a_response_keeps_everything_but_its_text_and_a_plain_one_is_not_copied() -> None:
    splitter = ReasoningSplitter()
    thinking = Response(text="<think>a</think>42", finish_reason="stop", metadata={"reasoning": "apart"})
    answered = splitter.answer(thinking)
    assert answered.text == "42" and answered.finish_reason == "stop" and answered.metadata == {"reasoning": "apart"}
    assert thinking.text == "<think>a</think>42"  # the stored response keeps the whole reply
    plain = Response(text="42")
    assert splitter.answer(plain) is plain and splitter.answer("<think>a</think>42") == "<think>a</think>42"
    assert splitter.reasoning([thinking, None, plain]) == ["a", None, None]
    assert splitter.reasoning([plain, None]) == []


def test_a_task_without_the_key_keeps_its_hash_and_the_default_written_out_is_the_same_task() -> None:
    assert hash_of(config()) == HASH_BEFORE
    assert hash_of(config(reasoning={"strip": True})) == HASH_BEFORE
    assert hash_of(config(reasoning=True)) == HASH_BEFORE
    assert "reasoning" not in Task.from_config(config(reasoning={"strip": True})).to_config()


@pytest.mark.parametrize(
    "reasoning",
    [{"strip": False}, False, {"delimiters": [["<t>", "</t>"]]}, {"strip": False, "delimiters": [["<t>", "</t>"]]}],
)
def test_a_reasoning_setting_changes_the_scoring_hash_not_the_request_hash(reasoning: Any) -> None:
    task = Task.from_config(config(reasoning=reasoning))
    plain = Task.from_config(config())
    assert task.hash != plain.hash
    assert task.request_hash == plain.request_hash  # the logged answers of one fit the other (assay score --task)
    again = Task.from_config(task.to_config())
    assert again.hash == task.hash and again.config.reasoning == task.config.reasoning


def test_the_key_as_python_keyword_and_as_yaml_agree() -> None:
    rows = copy.deepcopy(ROWS)
    python_task = Task("qa", rows, template="{{ question }}", fields={"target": "answer"}, reasoning=False)
    yaml_like = Task.from_config(
        {"name": "qa", "dataset": {"rows": rows}, "template": "{{ question }}", "fields": {"target": "answer"}}
        | {"reasoning": {"strip": False}}
    )
    assert python_task.hash == yaml_like.hash and python_task.reasoning is None


@pytest.mark.parametrize(
    ("reasoning", "message"),
    [
        ({"strip": False, "delimeters": []}, "reasoning.delimeters: unknown key (did you mean 'delimiters'?)"),
        ({"delimiters": []}, "reasoning.delimiters: give a list of [opening, closing] pairs"),
        ({"delimiters": "<think>"}, "reasoning.delimiters: give a list of [opening, closing] pairs"),
        ({"delimiters": [["<t>", ""]]}, "reasoning.delimiters: each pair is [opening, closing]"),
        ({"delimiters": [["<t>"]]}, "two texts that are not empty; got ['<t>']"),
    ],
)
def test_a_bad_reasoning_key_is_named(reasoning: Any, message: str) -> None:
    with pytest.raises(ConfigError, match="reasoning") as caught:
        Task.from_config(config(reasoning=reasoning))
    assert message in str(caught.value)


def test_a_task_that_scores_given_text_takes_nothing_out_and_refuses_the_key() -> None:
    rows = [{"question": "Sky?", "choices": ["blue", "green"], "label": 0}]
    mc = {
        "name": "mc",
        "dataset": {"rows": rows},
        "template": "{{ question }}",
        "output_type": "multiple_choice",
        "choices": "choices",
        "fields": {"target": "label"},
    }
    assert Task.from_config(mc).reasoning is None
    with pytest.raises(ConfigError, match="reasoning: output_type multiple_choice generates no reply"):
        Task.from_config(mc | {"reasoning": {"strip": False}})
