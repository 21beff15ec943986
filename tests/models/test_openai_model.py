"""OpenAIModel against the real test server over HTTP: replies, tool calls, errors, retries, secrets."""

from __future__ import annotations

import asyncio
import base64
import email.utils
import json
import socket
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from assay.errors import ConfigError
from assay.models.base import ModelError, Request
from assay.models.openai_compat import OpenAIModel, parse_retry_after
from assay.models.retry import RetryPolicy, call_with_retries
from assay.testing import FaultPlan, OpenAITestServer, ScriptedReplies

FAST_RETRIES = RetryPolicy(max_attempts=4, initial_backoff_s=0.01, max_backoff_s=5.0, jitter=False, timeout_s=None)
SECRET = "sk-SECRET-0123456789"

MakeModel = Callable[..., OpenAIModel]


def ask(text: str, **kwargs: Any) -> Request:
    return Request(sample_id="s1", messages=[{"role": "user", "content": text}], **kwargs)


@pytest.fixture
async def make_model() -> AsyncIterator[MakeModel]:
    """Build OpenAIModels for a server; all are closed at teardown."""
    models: list[OpenAIModel] = []

    def make(server: OpenAITestServer | str, **kwargs: Any) -> OpenAIModel:
        base_url = server if isinstance(server, str) else server.base_url
        model = OpenAIModel(kwargs.pop("model", "test-model"), base_url=base_url, **kwargs)
        models.append(model)
        return model

    yield make
    for model in models:
        await model.aclose()


async def test_reply_usage_finish_reason_and_latency(server: OpenAITestServer, make_model: MakeModel) -> None:
    model = make_model(server)
    response = await model.generate(ask("the answer is Paris"))
    assert response.text == "the answer is Paris"
    assert response.finish_reason == "stop"
    assert response.model == "test-model"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (4, 4)
    assert response.latency_s > 0 and response.cached is False and response.tool_calls == []


async def test_params_merge_request_over_model_and_drop_none(server: OpenAITestServer, make_model: MakeModel) -> None:
    model = make_model(server, params={"temperature": 0.7, "seed": 1, "top_p": None})
    await model.generate(ask("hi", params={"temperature": 0.0, "max_tokens": 5, "stop": None}))
    sent = server.requests[-1]
    assert sent == {
        "model": "test-model",
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0.0,
        "seed": 1,
        "max_tokens": 5,
    }


async def test_max_tokens_gives_finish_reason_length(server: OpenAITestServer, make_model: MakeModel) -> None:
    response = await make_model(server).generate(ask("a b c d", params={"max_tokens": 2}))
    assert response.text == "a b" and response.finish_reason == "length"


async def test_tools_and_response_format_are_sent(server: OpenAITestServer, make_model: MakeModel) -> None:
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}]
    fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}
    await make_model(server).generate(ask("hi", tools=tools, response_format=fmt))
    sent = server.requests[-1]
    assert sent["tools"] == tools and sent["response_format"] == fmt


async def test_tool_calls_are_parsed(make_server: Callable[..., OpenAITestServer], make_model: MakeModel) -> None:
    reply = {
        "text": "calling",
        "tool_calls": [
            {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}, "id": "call_a"},
            {"name": "broken", "arguments": '{"city": "Par'},
            {"name": "no_args", "arguments": ""},
            {"name": "a_list", "arguments": "[1, 2]"},
        ],
    }
    server = make_server(ScriptedReplies({"weather": reply}))
    response = await make_model(server).generate(ask("weather?"))
    assert response.text == "calling" and response.finish_reason == "tool_calls"
    calls = response.tool_calls
    assert [c.name for c in calls] == ["get_weather", "broken", "no_args", "a_list"]
    assert calls[0].arguments == {"city": "Paris", "days": 2} and calls[0].id == "call_a"
    assert calls[1].arguments == {"_raw": '{"city": "Par'}
    assert calls[2].arguments == {}
    assert calls[3].arguments == {"_raw": "[1, 2]"}
    assert response.metadata["unparsed_tool_arguments"] == ["broken", "a_list"]


async def test_429_is_retryable_with_retry_after(
    make_server: Callable[..., OpenAITestServer], make_model: MakeModel
) -> None:
    server = make_server(faults=FaultPlan(rate_429=1.0, retry_after_s=7))
    with pytest.raises(ModelError) as err:
        await make_model(server).generate(ask("x"))
    assert err.value.retryable and err.value.retry_after == 7.0
    assert "HTTP 429" in str(err.value) and "injected fault" in str(err.value)


async def test_retry_after_as_http_date_and_ms(
    make_server: Callable[..., OpenAITestServer], make_model: MakeModel
) -> None:
    in_3s = email.utils.formatdate(time.time() + 3, usegmt=True)
    replies = ScriptedReplies(
        {
            "date": {"status": 503, "headers": {"Retry-After": in_3s}},
            "millis": {"status": 429, "headers": {"retry-after-ms": "250", "Retry-After": "9"}},
        }
    )
    model = make_model(make_server(replies))
    with pytest.raises(ModelError) as err:
        await model.generate(ask("date"))
    assert err.value.retryable and err.value.retry_after is not None and 1.0 <= err.value.retry_after <= 3.0
    with pytest.raises(ModelError) as err:
        await model.generate(ask("millis"))
    assert err.value.retry_after == 0.25


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after({"Retry-After": email.utils.formatdate(time.time() - 60, usegmt=True)}) == 0.0


async def test_429_retry_after_is_honoured_by_retries(
    make_server: Callable[..., OpenAITestServer], make_model: MakeModel
) -> None:
    server = make_server(faults=FaultPlan(fail_first=1, fail_first_with=429, retry_after_s=0.4))
    model = make_model(server)
    start = time.perf_counter()
    response, attempts = await call_with_retries(lambda: model.generate(ask("patience")), FAST_RETRIES)
    elapsed = time.perf_counter() - start
    assert response.text == "patience" and attempts == 2
    assert 0.4 <= elapsed < 3.0  # waited for Retry-After (0.4 s), not the 0.01 s backoff
    assert server.status_counts == {429: 1, 200: 1}


async def test_500_then_success(make_server: Callable[..., OpenAITestServer], make_model: MakeModel) -> None:
    server = make_server(faults=FaultPlan(fail_first=2, fail_first_with=500))
    model = make_model(server)
    retried: list[tuple[int, str]] = []
    response, attempts = await call_with_retries(
        lambda: model.generate(ask("eventually")), FAST_RETRIES, on_retry=lambda n, e: retried.append((n, str(e)))
    )
    assert response.text == "eventually" and attempts == 3
    assert [n for n, _ in retried] == [1, 2] and all("HTTP 500" in msg for _, msg in retried)


@pytest.mark.parametrize("status", [408, 409, 502, 503])
async def test_other_retryable_statuses(
    make_server: Callable[..., OpenAITestServer], make_model: MakeModel, status: int
) -> None:
    server = make_server(faults=FaultPlan(fail_first=1, fail_first_with=status))
    with pytest.raises(ModelError) as err:
        await make_model(server).generate(ask("x"))
    assert err.value.retryable and f"HTTP {status}" in str(err.value)


async def test_dropped_connections_are_retryable(
    make_server: Callable[..., OpenAITestServer], make_model: MakeModel
) -> None:
    server = make_server(faults=FaultPlan(fail_first=2, fail_first_with="drop"))
    model = make_model(server)
    with pytest.raises(ModelError) as err:
        await model.generate(ask("x"))
    assert err.value.retryable and "closed the connection" in str(err.value)
    response, attempts = await call_with_retries(lambda: model.generate(ask("x")), FAST_RETRIES)
    assert response.text == "x" and attempts == 2  # the first of the two drops was used above
    assert server.status_counts == {"drop": 2, 200: 1}


async def test_slow_reply_times_out_and_is_retried(
    make_server: Callable[..., OpenAITestServer], make_model: MakeModel
) -> None:
    server = make_server(faults=FaultPlan(fail_first=1, fail_first_with="slow", slow_s=5.0))
    model = make_model(server, timeout_s=0.3)
    start = time.perf_counter()
    response, attempts = await call_with_retries(lambda: model.generate(ask("slowly")), FAST_RETRIES)
    assert response.text == "slowly" and attempts == 2
    assert time.perf_counter() - start < 3.0  # did not wait for the 5 s reply


async def test_timeout_error_message(make_server: Callable[..., OpenAITestServer], make_model: MakeModel) -> None:
    server = make_server(latency_s=2.0)
    with pytest.raises(ModelError, match=r"no response within 0\.2s") as err:
        await make_model(server, timeout_s=0.2).generate(ask("x"))
    assert err.value.retryable


async def test_400_is_not_retried(make_server: Callable[..., OpenAITestServer], make_model: MakeModel) -> None:
    server = make_server(ScriptedReplies({"bad": {"status": 400, "error": "unsupported parameter: 'foo'"}}))
    model = make_model(server)
    with pytest.raises(ModelError) as err:
        await call_with_retries(lambda: model.generate(ask("bad")), FAST_RETRIES)
    assert not err.value.retryable
    assert "HTTP 400" in str(err.value) and "unsupported parameter: 'foo'" in str(err.value)
    assert server.requests_total == 1


async def test_wrong_path_404_is_not_retryable(server: OpenAITestServer, make_model: MakeModel) -> None:
    with pytest.raises(ModelError) as err:
        await make_model(server.base_url + "/nowhere").generate(ask("x"))
    assert not err.value.retryable and "HTTP 404" in str(err.value)


async def test_connection_refused_is_retryable(make_model: MakeModel) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ModelError) as err:
        await make_model(f"http://127.0.0.1:{port}/v1").generate(ask("x"))
    assert err.value.retryable and f"127.0.0.1:{port}" in str(err.value)


async def test_missing_key_401_names_the_variable(
    make_server: Callable[..., OpenAITestServer], make_model: MakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ASSAY_TEST_KEY", raising=False)
    server = make_server(api_key=SECRET)
    with pytest.raises(ModelError, match=r"HTTP 401.*\$ASSAY_TEST_KEY") as err:
        await make_model(server, api_key_env="ASSAY_TEST_KEY").generate(ask("x"))
    assert not err.value.retryable
    assert server.last_authorization is None


async def test_api_key_is_sent_but_never_shown(
    make_server: Callable[..., OpenAITestServer], make_model: MakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSAY_TEST_KEY", SECRET)
    echo_key = ScriptedReplies({"leak": {"status": 400, "error": f"invalid key {SECRET} for this model"}})
    server = make_server(echo_key, api_key=SECRET)
    model = make_model(server, api_key_env="ASSAY_TEST_KEY")
    assert (await model.generate(ask("hi"))).text == "hi"
    assert server.last_authorization == f"Bearer {SECRET}"
    shown = [repr(model), str(model), json.dumps(model.identity()), json.dumps(model.describe())]
    with pytest.raises(ModelError) as err:
        await model.generate(ask("leak"))
    shown += [str(err.value), repr(err.value)]
    assert "invalid key *** for this model" in str(err.value)
    await server_stopped(server)
    with pytest.raises(ModelError) as down:
        await model.generate(ask("hi"))
    shown += [str(down.value), repr(down.value)]
    assert all(SECRET not in s for s in shown), shown
    assert model.describe()["api_key_env"] == "ASSAY_TEST_KEY"


async def server_stopped(server: OpenAITestServer) -> None:
    await asyncio.to_thread(server.stop)


async def test_explicit_api_key_wins_over_env(
    make_server: Callable[..., OpenAITestServer], make_model: MakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    server = make_server()
    await make_model(server, api_key="sk-explicit").generate(ask("x"))
    assert server.last_authorization == "Bearer sk-explicit"
    await make_model(server).generate(ask("x"))
    assert server.last_authorization == "Bearer sk-from-env"


async def test_credentials_in_the_url_work_beside_an_api_key(
    server: OpenAITestServer, make_model: MakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """aiohttp refuses URL credentials plus an Authorization header; the URL's login is sent as Basic auth."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    url = server.base_url.replace("http://", "http://me:p%40ss@")
    model = make_model(url)
    assert (await model.generate(ask("hi"))).text == "hi"
    assert server.last_authorization == "Basic " + base64.b64encode(b"me:p@ss").decode()
    assert "p%40ss" not in repr(model) and "p%40ss" not in json.dumps(model.describe())


async def test_extra_headers_are_sent(server: OpenAITestServer, make_model: MakeModel) -> None:
    await make_model(server, headers={"Authorization": "Bearer custom"}).generate(ask("x"))
    assert server.last_authorization == "Bearer custom"


async def test_many_concurrent_requests_share_a_bounded_pool(server: OpenAITestServer, make_model: MakeModel) -> None:
    model = make_model(server, max_connections=4)
    responses = await asyncio.gather(*(model.generate(ask(f"q{i}")) for i in range(200)))
    assert [r.text for r in responses] == [f"q{i}" for i in range(200)]
    assert server.status_counts == {200: 200}


@pytest.mark.filterwarnings("ignore::ResourceWarning")  # the first loop's pooled socket is reclaimed by the GC
def test_works_across_event_loops(server: OpenAITestServer) -> None:
    model = OpenAIModel("m", base_url=server.base_url)
    assert asyncio.run(model.generate(ask("one"))).text == "one"
    assert asyncio.run(model.generate(ask("two"))).text == "two"  # a new loop gets a new session
    asyncio.run(model.aclose())


def test_identity_and_describe() -> None:
    model = OpenAIModel("gpt-x", base_url="http://localhost:8000/v1/", params={"temperature": 0}, timeout_s=5)
    assert model.identity() == {
        "provider": "openai",
        "base_url": "http://localhost:8000/v1",
        "model": "gpt-x",
        "params": {"temperature": 0},
    }
    assert model.describe()["timeout_s"] == 5.0 and model.name == "gpt-x"


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [({"model": ""}, "model"), ({"base_url": "localhost:8000"}, "base_url"), ({"timeout_s": 0}, "timeout_s")],
)
def test_bad_settings_name_the_key(kwargs: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError, match=key):
        OpenAIModel(**{"model": "m", **kwargs})


def test_check_wants_a_key_for_remote_servers_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("MY_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"no API key for https://api.openai.com/v1: .*OPENAI_API_KEY is not set"):
        OpenAIModel("gpt-4o-mini").check()
    with pytest.raises(ConfigError, match=r"MY_KEY is not set.*--api-key-env"):
        OpenAIModel("m", base_url="http://gpu-box:8000/v1", api_key_env="MY_KEY").check()
    for local in ("http://localhost:8000/v1", "http://127.0.0.1:1/v1", "http://[::1]:8000/v1"):
        OpenAIModel("m", base_url=local).check()  # local servers need no key
    OpenAIModel("m", api_key=SECRET).check()
    OpenAIModel("m", headers={"api-key": "azure-style"}).check()  # the caller's own auth header
    monkeypatch.setenv("MY_KEY", "EMPTY")
    OpenAIModel("m", api_key_env="MY_KEY").check()


def test_non_completion_bodies() -> None:
    model = OpenAIModel("m", base_url="http://127.0.0.1:1/v1", api_key=SECRET)
    with pytest.raises(ModelError, match="not JSON") as err:
        model._parse(b"<html>bad gateway</html>", 0.0)
    assert not err.value.retryable
    with pytest.raises(ModelError, match="not a chat completion"):
        model._parse(b'{"choices": []}', 0.0)
    with pytest.raises(ModelError, match="overloaded") as err:
        model._parse(b'{"error": {"message": "overloaded", "code": 503}}', 0.0)
    assert err.value.retryable


def test_content_parts_and_reasoning_are_read() -> None:
    model = OpenAIModel("m", base_url="http://127.0.0.1:1/v1")
    body = {
        "model": "m",
        "choices": [
            {
                "message": {
                    "content": [{"type": "text", "text": "4"}, {"type": "text", "text": "2"}],
                    "reasoning_content": "6*7",
                },
                "finish_reason": "stop",
            }
        ],
        "usage": None,
    }
    response = model._parse(json.dumps(body).encode(), 0.1)
    assert response.text == "42" and response.metadata == {"reasoning": "6*7"}
    assert response.usage.input_tokens == 0


@pytest.mark.parametrize(
    "body",
    [
        {"choices": [{"message": "just a string"}]},
        {"choices": [{"message": {"content": "x", "tool_calls": ["not an object"]}}]},
        {"choices": [{"message": {"content": "x"}, "finish_reason": 3}]},
        {"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": "many"}},
    ],
)
def test_malformed_completions_are_model_errors(body: dict[str, Any]) -> None:
    model = OpenAIModel("m", base_url="http://127.0.0.1:1/v1")
    with pytest.raises(ModelError, match="not a chat completion") as err:
        model._parse(json.dumps(body).encode(), 0.0)
    assert not err.value.retryable


async def test_invalid_url_is_not_retryable(make_model: MakeModel) -> None:
    with pytest.raises(ModelError) as err:
        await make_model("http://exa mple:99999/v1").generate(ask("x"))
    assert not err.value.retryable and "InvalidUrlClientError" in str(err.value)


async def test_host_names_are_resolved_in_a_thread_that_ends_with_the_client(server: OpenAITestServer) -> None:
    """A host name is looked up in the client's own thread (aiohttp's default resolver leaves one in the loop's
    executor for good), which ends when the client closes: an online run's results may then fork."""
    import threading

    def dns_threads() -> list[str]:
        return [t.name for t in threading.enumerate() if t.name.startswith("assay-dns")]

    by_name = server.base_url.replace("127.0.0.1", "localhost")
    model = OpenAIModel("test-model", base_url=by_name, api_key="k")
    try:
        first = await model.generate(ask("hello"))
        second = await model.generate(ask("again"))  # aiohttp caches the lookup: still one thread
        assert first.text and second.text
        assert len(dns_threads()) == 1
    finally:
        await model.aclose()
    assert dns_threads() == []
    assert (await model.generate(ask("after"))).text  # a closed client opens again, with a new thread
    await model.aclose()
    assert dns_threads() == []
