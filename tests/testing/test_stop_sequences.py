"""The request's ``stop`` sequences, applied as an OpenAI server applies them (issue 40): the text is cut before the
first occurrence of any of them, the sequence itself left out, finish_reason "stop", usage counting the cut text;
generation ends at whichever of a stop sequence and ``max_tokens`` comes first."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from assay.testing import OpenAITestServer
from tests.testing.server_support import chat, complete, text_of

REPLY = "The answer is 42.\nQuestion: what next? Answer: nothing"


@pytest.fixture
def url() -> Iterator[str]:
    """A server replying REPLY to chat, and REPLY to each completions prompt (after it, with echo)."""

    def completion(prompt: Any, body: dict[str, Any]) -> str:
        return (prompt if body.get("echo") else "") + REPLY

    with OpenAITestServer(REPLY, completion=completion) as server:
        yield server.base_url


def test_chat_text_is_cut_before_the_stop_sequence(url: str) -> None:
    status, body = chat(url, "q", stop="\nQuestion:")
    assert status == 200
    assert text_of(body) == "The answer is 42."
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"]["completion_tokens"] == 4  # the cut text's words


def test_chat_stop_not_present_changes_nothing(url: str) -> None:
    _, body = chat(url, "q", stop=["###", "Human:"])
    assert text_of(body) == REPLY
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"]["completion_tokens"] == len(REPLY.split())


def test_chat_the_earliest_of_several_wins_whatever_the_order(url: str) -> None:
    _, body = chat(url, "q", stop=["Answer:", "what", "42", "zzz"])
    assert text_of(body) == "The answer is "  # "42" occurs first in the text, though listed third
    _, body = chat(url, "q", stop=[])
    assert text_of(body) == REPLY


def test_chat_stop_overrides_a_scripted_finish_reason() -> None:
    with OpenAITestServer(lambda _: {"text": "a b STOP c", "finish_reason": "length"}) as server:
        _, body = chat(server.base_url, "q", stop="STOP")
        assert (text_of(body), body["choices"][0]["finish_reason"]) == ("a b ", "stop")
        _, body = chat(server.base_url, "q", stop="none")
        assert body["choices"][0]["finish_reason"] == "length"


@pytest.mark.parametrize(
    ("stop", "max_tokens", "text", "finish"),
    [
        ("\nQuestion:", 10, "The answer is 42.", "stop"),  # the stop sequence comes first
        ("\nQuestion:", 2, "The answer", "length"),  # max_tokens comes first
        ("\nQuestion:", 4, "The answer is 42.", "stop"),  # the stop right after the last allowed word
        ("zzz", 3, "The answer is", "length"),  # no stop sequence in the text: max_tokens alone
    ],
)
def test_chat_stop_and_max_tokens_whichever_comes_first(
    url: str, stop: str, max_tokens: int, text: str, finish: str
) -> None:
    _, body = chat(url, "q", stop=stop, max_tokens=max_tokens)
    assert (text_of(body), body["choices"][0]["finish_reason"]) == (text, finish)
    assert body["usage"]["completion_tokens"] == len(text.split())


def test_completions_stop(url: str) -> None:
    _, body = complete(url, "Q: ", stop=["\n", "Answer:"])
    (choice,) = body["choices"]
    assert (choice["text"], choice["finish_reason"]) == ("The answer is 42.", "stop")
    assert body["usage"]["completion_tokens"] == 4
    _, body = complete(url, ["a", "b"], stop="nothing like it")
    assert [c["text"] for c in body["choices"]] == [REPLY, REPLY]
    assert {c["finish_reason"] for c in body["choices"]} == {"length"}  # as before: no stop met


def test_completions_stop_cuts_only_the_text_made_after_an_echo(url: str) -> None:
    prompt = "The answer is? "  # holds "answer", a stop sequence, which the echo must not cut
    _, body = complete(url, prompt, echo=True, stop="answer")
    assert body["choices"][0]["text"] == prompt + "The "
    assert body["choices"][0]["finish_reason"] == "stop"


def test_completions_stop_cuts_the_logprobs_of_the_tokens_cut_off() -> None:
    tokens = ["4", "2", ".", "\n", "Q"]
    logprobs = {
        "tokens": tokens,
        "token_logprobs": [-0.1, -0.2, -0.3, -0.4, -0.5],
        "top_logprobs": [None] * 5,
        "text_offset": [0, 1, 2, 3, 4],
    }
    with OpenAITestServer(completion=lambda p, b: {"text": "42.\nQ", "logprobs": logprobs}) as server:
        _, body = complete(server.base_url, "x", stop="\n", logprobs=0)
    choice = body["choices"][0]
    assert choice["text"] == "42."
    assert choice["logprobs"]["tokens"] == ["4", "2", "."] and choice["logprobs"]["text_offset"] == [0, 1, 2]


@pytest.mark.parametrize(
    ("stop", "fragment"),
    [(["a", "b", "c", "d", "e"], "at most 4"), (5, "'stop' must be a string"), (["a", 1], "'stop' must be")],
)
def test_a_bad_stop_is_a_400(url: str, stop: Any, fragment: str) -> None:
    for status, body in (chat(url, "q", stop=stop), complete(url, "q", stop=stop)):
        assert status == 400 and fragment in body["error"]["message"]
