"""PythonModel: functions, coroutines, classes and dotted paths; return shapes; errors."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from assay.errors import ConfigError
from assay.models.base import ModelError, Request, Response, ToolCall, Usage
from assay.models.python import PythonModel, import_object


def req(text: str = "hello", **kwargs: Any) -> Request:
    return Request(sample_id="s1", messages=[{"role": "user", "content": text}], **kwargs)


async def test_sync_function_taking_the_request_runs_in_a_thread() -> None:
    seen: list[str] = []

    def agent(request: Request) -> str:
        seen.append(threading.current_thread().name)
        return request.messages[-1]["content"][::-1]

    model = PythonModel(agent)
    response = await model.generate(req("abc"))
    assert response.text == "cba" and response.latency_s > 0
    assert seen and seen[0] != threading.main_thread().name


async def test_threaded_false_calls_inline() -> None:
    seen: list[str] = []
    model = PythonModel(lambda request: seen.append(threading.current_thread().name) or "ok", threaded=False)
    assert (await model.generate(req())).text == "ok"
    assert seen == [threading.main_thread().name]


async def test_keyword_arguments_are_chosen_by_name() -> None:
    got: dict[str, Any] = {}

    def agent(messages: list[Any], doc: dict[str, Any], metadata: dict[str, Any], params: dict[str, Any],
              tools: Any, repeat: int, sample_id: str, response_format: Any) -> str:  # fmt: skip
        got.update(messages=messages, doc=doc, metadata=metadata, params=params, tools=tools, repeat=repeat)
        got.update(sample_id=sample_id, response_format=response_format)
        return "done"

    tools = [{"type": "function", "function": {"name": "f"}}]
    request = req("q", doc={"a": 1}, metadata={"m": 2}, params={"temperature": 0}, tools=tools, repeat=3,
                  response_format={"type": "json_object"})  # fmt: skip
    await PythonModel(agent).generate(request)
    assert got == {
        "messages": [{"role": "user", "content": "q"}],
        "doc": {"a": 1},
        "metadata": {"m": 2},
        "params": {"temperature": 0},
        "tools": tools,
        "repeat": 3,
        "sample_id": "s1",
        "response_format": {"type": "json_object"},
    }


async def test_var_keyword_gets_everything_and_request_by_name() -> None:
    got: dict[str, Any] = {}

    def agent(**kwargs: Any) -> str:
        got.update(kwargs)
        return "x"

    await PythonModel(agent).generate(req())
    assert isinstance(got.pop("request"), Request)
    assert got.pop("prompt") == "hello"
    assert set(got) == {"messages", "doc", "metadata", "params", "tools", "response_format", "repeat", "sample_id"}


async def test_a_prompt_parameter_gets_the_last_user_message_as_text() -> None:
    """``def answer(prompt)``, the signature a new user writes first, gets the prompt text, not the Request."""

    def answer(prompt: str) -> str:
        return prompt.upper()

    request = Request(
        sample_id="s1",
        messages=[
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": [{"type": "text", "text": "what is "}, {"type": "text", "text": "2+2?"}]},
        ],
    )
    assert (await PythonModel(answer).generate(request)).text == "WHAT IS 2+2?"
    assert (await PythonModel(answer).generate(req("plain"))).text == "PLAIN"
    no_user = Request(sample_id="s1", messages=[{"role": "system", "content": "s"}])
    assert (await PythonModel(answer).generate(no_user)).text == ""


async def test_async_function_by_dotted_path() -> None:
    model = PythonModel("tests.models.sample_agents:async_upper")
    response = await model.generate(req("hi", repeat=2))
    assert response.text == "HI#2"
    assert model.name == "async_upper" and model.target == "tests.models.sample_agents:async_upper"


async def test_dotted_path_without_colon() -> None:
    assert (await PythonModel("tests.models.sample_agents.echo").generate(req("yo"))).text == "yo"


async def test_class_is_instantiated_with_kwargs_and_generate_used() -> None:
    model = PythonModel("tests.models.sample_agents:Calculator", kwargs={"offset": 10})
    response = await model.generate(req(doc={"a": 2, "b": 3}))
    assert response.text == "15"
    assert response.tool_calls == [ToolCall(name="add", arguments={"a": 2, "b": 3}, result=15)]


async def test_instance_with_async_call() -> None:
    class Agent:
        async def __call__(self, request: Request) -> dict[str, Any]:
            await asyncio.sleep(0)
            return {
                "text": "hi",
                "usage": {"prompt_tokens": 3, "completion_tokens": 1},
                "finish_reason": "stop",
                "metadata": {"steps": 2},
            }

    response = await PythonModel(Agent()).generate(req())
    assert response.text == "hi" and response.finish_reason == "stop"
    assert response.usage == Usage(input_tokens=3, output_tokens=1) and response.metadata == {"steps": 2}


@pytest.mark.parametrize(
    ("result", "text", "calls"),
    [
        ("plain", "plain", []),
        (("t", [ToolCall(name="a")]), "t", [ToolCall(name="a")]),
        (
            ("t", [{"name": "b", "arguments": {"x": 1}, "result": "ok"}]),
            "t",
            [ToolCall(name="b", arguments={"x": 1}, result="ok")],
        ),
        (
            {
                "text": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"q": 2}'}}],
            },
            None,
            [ToolCall(name="f", arguments={"q": 2}, id="c1")],
        ),
        (Response(text="r", tool_calls=[ToolCall(name="z")], latency_s=1.5), "r", [ToolCall(name="z")]),
    ],
)
async def test_return_shapes(result: Any, text: str | None, calls: list[ToolCall]) -> None:
    response = await PythonModel(lambda request: result).generate(req())
    assert response.text == text and response.tool_calls == calls


async def test_returned_response_keeps_its_latency() -> None:
    response = await PythonModel(lambda request: Response(text="r", latency_s=1.5)).generate(req())
    assert response.latency_s == 1.5


@pytest.mark.parametrize(
    ("result", "fragment"),
    [
        (None, "returned NoneType"),
        (42, "returned int"),
        (("a", [], "extra"), "tuple of 3 items"),
        ({"txt": "typo"}, "unknown key 'txt'"),
        ({"text": 5}, "'text' of type int"),
        ({"text": "x", "tool_calls": ["call"]}, "tool_calls[0] is a str"),
        ({"text": "x", "tool_calls": [{"arguments": {}}]}, "tool_calls[0] is invalid (name: Field required)"),
        ({"text": "x", "tool_calls": [{"name": "f", "args": {}}]}, "tool_calls[0] has unknown key 'args'"),
        ({"text": "x", "usage": 3}, "'usage' must be a Usage or dict"),
    ],
)
async def test_bad_return_values_are_non_retryable_errors(result: Any, fragment: str) -> None:
    with pytest.raises(ModelError) as err:
        await PythonModel(lambda request: result).generate(req())
    assert fragment in str(err.value) and not err.value.retryable


async def test_agent_exception_becomes_model_error() -> None:
    model = PythonModel("tests.models.sample_agents:Failing")
    with pytest.raises(ModelError) as err:
        await model.generate(req())
    assert not err.value.retryable
    assert "Failing raised RuntimeError: tool backend unavailable" in str(err.value)
    assert isinstance(err.value.__cause__, RuntimeError)


async def test_agent_model_error_passes_through() -> None:
    def agent(request: Request) -> str:
        raise ModelError("upstream busy", retryable=True, retry_after=2)

    with pytest.raises(ModelError) as err:
        await PythonModel(agent).generate(req())
    assert err.value.retryable and err.value.retry_after == 2 and str(err.value) == "upstream busy"


@pytest.mark.parametrize(
    ("target", "kwargs", "fragment"),
    [
        ("tests.models.nope:agent", {}, "cannot import module 'tests.models.nope'"),
        ("tests.models.sample_agents:missing", {}, "has no attribute 'missing'"),
        ("no_colon_or_dot", {}, "is not a dotted path of the form"),
        ("tests.models.sample_agents:NOT_CALLABLE", {}, "not callable"),
        ("tests.models.sample_agents:echo", {"offset": 1}, "not a class"),
        ("tests.models.sample_agents:Calculator", {"bogus": 1}, "cannot instantiate"),
    ],
)
def test_bad_targets_raise_config_errors(target: str, kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        PythonModel(target, kwargs=kwargs)


def test_signatures_that_cannot_be_filled() -> None:
    with pytest.raises(ConfigError, match="requires parameter 'other'"):
        PythonModel(lambda messages, other: "x")
    with pytest.raises(ConfigError, match="requires parameter 'b'"):
        PythonModel(lambda a, b: "x")
    with pytest.raises(ConfigError, match="takes no parameters"):
        PythonModel(lambda: "x")


def test_identity_tracks_path_version_source_and_kwargs_but_not_secrets() -> None:
    base = PythonModel("tests.models.sample_agents:Calculator", kwargs={"offset": 1, "api_key": "sk-a"})
    same = PythonModel("tests.models.sample_agents:Calculator", kwargs={"offset": 1, "api_key": "sk-b"})
    bumped = PythonModel("tests.models.sample_agents:Calculator", kwargs={"offset": 1}, version="2")
    other_kwargs = PythonModel("tests.models.sample_agents:Calculator", kwargs={"offset": 2})
    assert base.identity() == same.identity()
    assert base.identity()["target"] == "tests.models.sample_agents:Calculator"
    assert bumped.identity()["version"] == "2" and bumped.identity() != base.identity()
    assert other_kwargs.identity()["kwargs_sha256"] != base.identity()["kwargs_sha256"]
    assert base.identity()["source_sha256"]
    assert "sk-a" not in repr(base.describe()) and base.describe()["kwargs"] == {"offset": 1}


def test_two_lambdas_have_different_identities() -> None:
    first = PythonModel(lambda request: "a")
    second = PythonModel(lambda request: "b")
    assert first.target == second.target  # same module:qualname …
    assert first.identity() != second.identity()  # … but their source differs


def test_import_object() -> None:
    from tests.models import sample_agents

    assert import_object("tests.models.sample_agents:Calculator.generate") is sample_agents.Calculator.generate


async def test_sync_agents_run_concurrently_up_to_max_threads() -> None:
    barrier = threading.Barrier(6, timeout=10)

    def agent(request: Request) -> str:
        barrier.wait()  # passes only when 6 calls run at the same time
        return threading.current_thread().name

    model = PythonModel(agent, max_threads=6)
    try:
        names = await asyncio.gather(*(model.generate(req()) for _ in range(6)))
    finally:
        await model.aclose()
    assert len({r.text for r in names}) == 6 and all(str(r.text).startswith("assay-agent") for r in names)


async def test_max_threads_bounds_concurrency() -> None:
    lock = threading.Lock()
    running = [0, 0]  # now, peak

    def agent(request: Request) -> str:
        with lock:
            running[0] += 1
            running[1] = max(running[1], running[0])
        threading.Event().wait(0.02)
        with lock:
            running[0] -= 1
        return "x"

    model = PythonModel(agent, max_threads=2)
    try:
        await asyncio.gather(*(model.generate(req()) for _ in range(8)))
    finally:
        await model.aclose()
    assert running[1] == 2
    with pytest.raises(ConfigError, match="max_threads"):
        PythonModel(agent, max_threads=0)


async def test_context_variables_reach_threaded_agents() -> None:
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    var.set("from caller")
    model = PythonModel(lambda request: var.get())
    try:
        assert (await model.generate(req())).text == "from caller"
    finally:
        await model.aclose()
