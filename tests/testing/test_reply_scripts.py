"""Reply scripts (issue 40): rules by prompt, substring, regex, turn, system message and model, read from a YAML or
JSON file, answering real HTTP requests, in the thread server and in ``python -m assay.testing.server --script``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from assay.errors import ConfigError
from assay.testing import OpenAITestServer, ScriptedReplies
from assay.testing.scripted import ReplyScript
from tests.testing.server_support import chat, complete, text_of

SCRIPT = """\
replies:
  - prompt: "What is 2 + 2?"
    reply: "4"
  - contains: weather
    reply: {tool_calls: [{name: get_weather, arguments: {city: Paris}}]}
  - regex: "^Translate .* to French"
    reply: Bonjour
  - contains: secret
    in: any
    reply: found it anywhere
  - system: pirate
    reply: Arr
  - turn: 2
    model: gpt-4o-mini
    reply: second turn, mini
  - turn: 2
    reply: second turn
  - contains: flaky
    replies: [{status: 503, error: busy}, first, second]
default: echo
"""


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[[str, str], str]]:
    """Start a server on a script written to ``tmp_path/name``; return its base URL. Stopped at teardown."""
    started: list[OpenAITestServer] = []

    def start(text: str, name: str = "replies.yaml") -> str:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        server = OpenAITestServer(ScriptedReplies.load(path))
        started.append(server)
        return server.start()

    yield start
    for server in started:
        server.stop()


def test_each_rule_kind(serve: Callable[..., str]) -> None:
    url = serve(SCRIPT)
    assert text_of(chat(url, "What is 2 + 2?")[1]) == "4"
    assert text_of(chat(url, "What is 2 + 2? ")[1]) == "What is 2 + 2? "  # prompt: exact, else the default echo
    _, body = chat(url, "how is the weather today?")
    (call,) = body["choices"][0]["message"]["tool_calls"]
    assert call["function"]["name"] == "get_weather" and json.loads(call["function"]["arguments"]) == {"city": "Paris"}
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    assert text_of(chat(url, "Translate cheese to French")[1]) == "Bonjour"
    assert text_of(chat(url, "Please Translate cheese to French")[1]) != "Bonjour"  # re.search with its anchor
    sys_msg = {"role": "system", "content": "You are a pirate."}
    assert text_of(chat(url, sys_msg, "hello")[1]) == "Arr"
    assert text_of(chat(url, "hello")[1]) == "hello"


def test_in_any_looks_at_every_message(serve: Callable[..., str]) -> None:
    url = serve(SCRIPT)
    history = ["the secret is 7", {"role": "assistant", "content": "ok"}]
    assert text_of(chat(url, *history, "what was it?")[1]) == "found it anywhere"
    # without `in: any` a condition reads the last user message only
    only_last = serve('replies: [{contains: secret, reply: "yes"}]\ndefault: "no"\n', "last.yaml")
    assert text_of(chat(only_last, *history, "what was it?")[1]) == "no"


def test_turn_counts_assistant_messages_and_model_narrows(serve: Callable[..., str]) -> None:
    url = serve(SCRIPT)
    second = ["hi", {"role": "assistant", "content": "hello"}, "and now?"]
    assert text_of(chat(url, *second)[1]) == "second turn"
    assert text_of(chat(url, *second, model="gpt-4o-mini")[1]) == "second turn, mini"
    third = [*second, {"role": "assistant", "content": "x"}, "again?"]
    assert text_of(chat(url, *third)[1]) == "again?"  # turn 3: no rule, the default echo


def test_first_matching_rule_wins(serve: Callable[..., str]) -> None:
    url = serve(SCRIPT)
    # `contains: weather` (rule 1) and `regex: ^Translate` (rule 2) both match: rule 1 answers
    _, body = chat(url, "Translate the weather to French")
    assert body["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "get_weather"
    url2 = serve("replies:\n  - {contains: a, reply: first}\n  - {contains: ab, reply: second}\n", "order.yaml")
    assert text_of(chat(url2, "ab")[1]) == "first"


def test_list_of_replies_in_order_then_the_last_again(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(SCRIPT, encoding="utf-8")
    with OpenAITestServer(ScriptedReplies.load(path)) as server:
        got = [chat(server.base_url, "a flaky one") for _ in range(4)]
        assert [s for s, _ in got] == [503, 200, 200, 200]
        assert got[0][1]["error"]["message"] == "busy"
        assert [text_of(b) for _, b in got[1:]] == ["first", "second", "second"]
        server.reset()  # the server's reset starts the lists again
        assert chat(server.base_url, "a flaky one")[0] == 503


def test_default_text_echo_and_absent(serve: Callable[..., str]) -> None:
    fixed = serve('replies: [{prompt: hi, reply: hello}]\ndefault: "I do not know"\n', "fixed.yaml")
    assert text_of(chat(fixed, "anything")[1]) == "I do not know"
    mapping = serve("replies: []\ndefault: {text: nope, finish_reason: length}\n", "mapping.yaml")
    assert chat(mapping, "x")[1]["choices"][0]["finish_reason"] == "length"
    echo = serve("replies: [{prompt: hi, reply: hello}]\ndefault: echo\n", "echo.yaml")
    assert text_of(chat(echo, "say this back")[1]) == "say this back"
    absent = serve("replies: [{prompt: hi, reply: hello}]\n", "absent.yaml")
    status, body = chat(absent, "an unscripted question", model="gpt-x")
    assert status == 500
    message = body["error"]["message"]
    assert "absent.yaml" in message and "'an unscripted question'" in message and "gpt-x" in message
    assert text_of(chat(absent, "hi")[1]) == "hello"


def test_json_script_and_the_completions_endpoint(serve: Callable[..., str]) -> None:
    script = {"replies": [{"contains": "capital", "reply": "Paris"}, {"prompt": "x", "reply": {"status": 429}}]}
    url = serve(json.dumps(script, indent=2), "replies.json")
    assert text_of(chat(url, "the capital of France?")[1]) == "Paris"
    status, body = complete(url, ["The capital of France is", "x"])
    assert status == 429  # a scripted error answers the whole request
    status, body = complete(url, "The capital of France is")
    assert status == 200 and body["choices"][0]["text"] == "Paris"
    status, body = complete(url, "unscripted prompt")
    assert status == 500 and "no rule matches the prompt 'unscripted prompt'" in body["error"]["message"]


def test_load_from_ScriptedReplies_and_from_data_are_the_same() -> None:
    script = ReplyScript.from_data({"replies": [{"regex": r"\d+", "reply": "a number"}]})
    request = {"model": "m", "messages": [{"role": "user", "content": "call 911"}]}
    assert script(request) == "a number"
    assert script({"model": "m", "messages": [{"role": "user", "content": "none"}]})["status"] == 500


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("replies:\n  - prompt: a\n    reply: b\n  - regex: '(unclosed'\n    reply: c\n", ":4: replies[1].regex: bad"),
        ("replies:\n  - prompt: a\n    replyy: b\n", ":3: replies[0].replyy: unknown key (did you mean 'reply'?)"),
        ("replies:\n  - {prompt: a, reply: b}\n  - {turn: two, reply: c}\n", ":3: replies[1].turn: must be a whole"),
        ("replies:\n  - {turn: 0, reply: c}\n", "replies[0].turn"),
        ("replies:\n  - {contains: 4, reply: c}\n", "replies[0].contains: must be a text, got int"),
        ("replies:\n  - {contains: a, reply: 42}\n", "replies[0].reply: a reply is a text or a mapping, got int"),
        ("replies:\n  - {contains: a, reply: {txt: b}}\n", "replies[0].reply.txt: unknown reply key"),
        ("replies:\n  - {contains: a, reply: {status: '500'}}\n", "replies[0].reply.status: must be int"),
        ("replies:\n  - {contains: a}\n", "replies[0]: a rule needs exactly one of 'reply'"),
        ("replies:\n  - {contains: a, reply: x, replies: [y]}\n", "replies[0]: a rule needs exactly one"),
        ("replies:\n  - {contains: a, replies: []}\n", "replies[0].replies: must be a non-empty list"),
        ("replies:\n  - {contains: a, in: all, reply: x}\n", "replies[0].in: must be 'last'"),
        ("replies:\n  - {turn: 2, in: any, reply: x}\n", "replies[0].in: applies to prompt, contains, regex"),
        ("replies:\n  - just a text\n", "replies[0]: a rule is a mapping"),
        ("replies: {prompt: a}\n", "replies: must be a list of rules"),
        ("rules: []\n", "rules: unknown key"),
        ("replies: []\ndefault: 3\n", "default: a reply is a text or a mapping"),
        ("replies: [\n", "invalid YAML"),
    ],
)
def test_a_bad_script_is_refused_naming_file_rule_and_line(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        ReplyScript.load(path)
    message = str(err.value)
    assert message.startswith(str(path)), message
    assert fragment in message, message


def test_a_bad_json_script_names_the_rule(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"replies": [{"prompt": "a", "reply": "b"}, {"regex": "[", "reply": "c"}]}))
    with pytest.raises(ConfigError, match=r"bad\.json(:\d+)?: replies\[1\]\.regex: bad regular expression"):
        ReplyScript.load(path)
    other = tmp_path / "replies.txt"
    other.write_text("replies: []")
    with pytest.raises(ConfigError, match=r"a reply script is a \.yaml, \.yml or \.json file"):
        ReplyScript.load(other)
    with pytest.raises(ConfigError, match="cannot read"):
        ReplyScript.load(tmp_path / "missing.yaml")


def _start_process(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "assay.testing.server", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_cli_script(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_text(SCRIPT, encoding="utf-8")
    proc = _start_process("--script", str(path))
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        assert text_of(chat(url, "What is 2 + 2?")[1]) == "4"
        assert text_of(chat(url, "Translate cat to French", stop=["jour"])[1]) == "Bon"
        assert text_of(chat(url, "anything else")[1]) == "anything else"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0
    assert "served 3 requests" in err and "RuntimeWarning" not in err


def test_cli_refuses_a_bad_script_naming_file_and_rule(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(
        textwrap.dedent("""\
        replies:
          - prompt: a
            reply: b
          - regex: "(oops"
            reply: c
        """)
    )
    proc = _start_process("--script", str(path))
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2 and out == ""
    assert f"{path}:4: replies[1].regex: bad regular expression" in err


def test_cli_script_and_reply_are_exclusive(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_text(SCRIPT, encoding="utf-8")
    proc = _start_process("--script", str(path), "--reply", "x")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2 and "not allowed with" in err


def test_scripted_reply_request_shape_is_unchanged_for_other_servers() -> None:
    """ScriptedReplies with a mapping keeps its old meaning (substring keys, echo default)."""
    replies = ScriptedReplies({"capital": "Paris"})
    assert replies({"messages": [{"role": "user", "content": "the capital?"}]}) == "Paris"
    assert replies({"messages": [{"role": "user", "content": "other"}]}) == "other"
