"""The OpenAI-compatible test server, spoken to over plain HTTP (urllib), as any client would."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest

from assay.errors import ConfigError
from assay.testing import FaultPlan, OpenAITestServer, ScriptedReplies


def post(server: OpenAITestServer, body: Any, headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any], Any]:
    """(status, headers, JSON body) of a chat-completion request."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(
        server.base_url + "/chat/completions",
        data=data,
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), json.loads(err.read())


def chat(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "model": "m",
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": text}],
        **extra,
    }


def test_echo_default_and_response_shape(server: OpenAITestServer) -> None:
    status, _, body = post(server, chat("hello there world"))
    assert status == 200
    assert body["object"] == "chat.completion" and body["model"] == "m"
    choice = body["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": "hello there world"}
    assert choice["finish_reason"] == "stop"
    assert body["usage"] == {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}


def test_models_endpoint(make_server: Callable[..., OpenAITestServer]) -> None:
    server = make_server(models=("a", "b"))
    with urllib.request.urlopen(server.base_url + "/models", timeout=10) as resp:
        body = json.loads(resp.read())
    assert [m["id"] for m in body["data"]] == ["a", "b"]


def test_scripted_replies_tool_calls_and_request_log(make_server: Callable[..., OpenAITestServer]) -> None:
    replies = ScriptedReplies(
        {
            "weather": {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
            "capital": "Paris",
        },
        default="I don't know",
    )
    server = make_server(replies)
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    _, _, body = post(server, chat("what is the weather?", tools=tools))
    message = body["choices"][0]["message"]
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    assert message["content"] is None
    (call,) = message["tool_calls"]
    assert call["type"] == "function" and call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris"}  # a JSON string, as in the protocol
    assert post(server, chat("the capital of France?"))[2]["choices"][0]["message"]["content"] == "Paris"
    assert post(server, chat("something else"))[2]["choices"][0]["message"]["content"] == "I don't know"
    post(server, chat("json please", response_format={"type": "json_object"}))
    logged = server.requests
    assert logged[0]["tools"] == tools
    assert logged[-1]["response_format"] == {"type": "json_object"}
    assert server.requests_total == 4 and server.status_counts == {200: 4}


def test_reply_function_and_constant(make_server: Callable[..., OpenAITestServer]) -> None:
    server = make_server(lambda req: {"text": req["messages"][-1]["content"].upper(), "finish_reason": "custom"})
    _, _, body = post(server, chat("shout"))
    assert body["choices"][0]["message"]["content"] == "SHOUT"
    assert body["choices"][0]["finish_reason"] == "custom"
    constant = make_server("always this")
    assert post(constant, chat("x"))[2]["choices"][0]["message"]["content"] == "always this"


def test_async_reply_function(make_server: Callable[..., OpenAITestServer]) -> None:
    async def reply(req: dict[str, Any]) -> str:
        return "async " + req["model"]

    assert post(make_server(reply), chat("x"))[2]["choices"][0]["message"]["content"] == "async m"


def test_broken_reply_function_is_a_500_naming_the_error(make_server: Callable[..., OpenAITestServer]) -> None:
    server = make_server(lambda req: {"txt": "typo"})
    status, _, body = post(server, chat("x"))
    assert status == 500
    assert "unknown reply key" in body["error"]["message"] and "txt" in body["error"]["message"]


def test_max_tokens_truncates_with_finish_reason_length(server: OpenAITestServer) -> None:
    _, _, body = post(server, chat("one two three four five", max_tokens=2))
    assert body["choices"][0]["message"]["content"] == "one two"
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 2


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"not json", "not JSON"),
        ({"messages": [{"role": "user", "content": "x"}]}, "'model'"),
        ({"model": "m", "messages": []}, "'messages'"),
        ({"model": "m", "messages": ["hi"]}, "messages[0]"),
        ({"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True}, "streaming"),
    ],
)
def test_invalid_requests_are_400(server: OpenAITestServer, body: Any, fragment: str) -> None:
    status, _, reply = post(server, body)
    assert status == 400
    assert fragment in reply["error"]["message"]
    assert reply["error"]["type"] == "invalid_request_error"


def test_api_key_required_and_authorization_recorded(make_server: Callable[..., OpenAITestServer]) -> None:
    server = make_server(api_key="sk-test")
    assert post(server, chat("x"))[0] == 401
    assert server.last_authorization is None
    assert post(server, chat("x"), {"Authorization": "Bearer sk-test"})[0] == 200
    assert server.last_authorization == "Bearer sk-test"
    assert server.status_counts == {401: 1, 200: 1}


def test_fault_plan_is_seeded_and_deterministic(make_server: Callable[..., OpenAITestServer]) -> None:
    plan = FaultPlan(rate_429=0.3, rate_500=0.3, retry_after_s=2)
    outcomes = []
    for _ in range(2):
        server = make_server(faults=plan, seed=7)
        outcomes.append([post(server, chat(f"q{i}"))[0] for i in range(30)])
    assert outcomes[0] == outcomes[1]
    assert {200, 429, 500} <= set(outcomes[0])
    other = make_server(faults=plan, seed=8)
    assert [post(other, chat(f"q{i}"))[0] for i in range(30)] != outcomes[0]


def test_429_carries_retry_after(make_server: Callable[..., OpenAITestServer]) -> None:
    server = make_server(faults=FaultPlan(rate_429=1.0, retry_after_s=1.5))
    status, headers, body = post(server, chat("x"))
    assert status == 429 and headers["Retry-After"] == "1.5"
    assert body["error"]["type"] == "rate_limit_error"
    no_header = make_server(faults=FaultPlan(rate_429=1.0, retry_after_s=None))
    assert "Retry-After" not in post(no_header, chat("x"))[1]


def test_fail_first_fails_each_distinct_request_exactly_n_times(make_server: Callable[..., OpenAITestServer]) -> None:
    server = make_server(faults=FaultPlan(fail_first=2, fail_first_with=503))
    assert [post(server, chat("a"))[0] for _ in range(3)] == [503, 503, 200]
    assert [post(server, chat("b"))[0] for _ in range(3)] == [503, 503, 200]
    assert post(server, chat("a"))[0] == 200
    server.reset()
    assert post(server, chat("a"))[0] == 503
    assert server.requests_total == 1


def test_dropped_connection_has_no_response(make_server: Callable[..., OpenAITestServer]) -> None:
    server = make_server(faults=FaultPlan(rate_drop=1.0))
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request(
        "POST", "/v1/chat/completions", body=json.dumps(chat("x")), headers={"Content-Type": "application/json"}
    )
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        conn.getresponse()
    conn.close()
    assert server.status_counts == {"drop": 1}


def test_request_log_is_bounded(make_server: Callable[..., OpenAITestServer]) -> None:
    server = make_server(max_logged=3)
    for i in range(5):
        post(server, chat(f"m{i}"))
    assert [r["messages"][-1]["content"] for r in server.requests] == ["m2", "m3", "m4"]
    assert server.requests_total == 5


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"rate_429": 1.5}, "rate_429"),
        ({"rate_500": 0.6, "rate_drop": 0.6}, "more than 1"),
        ({"fail_first": -1}, "fail_first"),
        ({"fail_first_with": 200}, "fail_first_with"),
        ({"fail_first_with": "explode"}, "fail_first_with"),
    ],
)
def test_bad_fault_plan_names_the_key(kwargs: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError, match=key):
        FaultPlan(**kwargs)


def test_port_taken_raises_on_start(server: OpenAITestServer) -> None:
    with pytest.raises(OSError):
        OpenAITestServer(port=server.port).start()


def test_runs_as_a_separate_process() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "assay.testing.server", "--port", "0", "--reply", "pong", "--fail-first", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        fake = OpenAITestServer()
        fake.port = int(url.rsplit(":", 1)[1].split("/")[0])
        assert post(fake, chat("ping"))[0] == 500  # --fail-first 1, default status 500
        assert post(fake, chat("ping"))[2]["choices"][0]["message"]["content"] == "pong"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0
    assert "served 2 requests" in err
    assert "RuntimeWarning" not in err  # `python -m` runs the module once (assay.testing does not import it)
