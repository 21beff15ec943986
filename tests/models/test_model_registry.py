"""load_model: string and dict specs, overrides, callables, errors that name the key, round trips."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest

from assay.errors import ConfigError
from assay.models.base import Model, Request, Response
from assay.models.openai_compat import OpenAIModel
from assay.models.predictions import PredictionsModel
from assay.models.python import PythonModel
from assay.models.registry import load_model, providers, register_provider
from assay.testing import OpenAITestServer


def test_openai_string_spec_with_overrides() -> None:
    model = load_model("openai:gpt-4o-mini", base_url="http://localhost:8000/v1", params={"temperature": 0})
    assert isinstance(model, OpenAIModel)
    assert model.identity() == {
        "provider": "openai",
        "base_url": "http://localhost:8000/v1",
        "model": "gpt-4o-mini",
        "params": {"temperature": 0},
    }


def test_openai_dict_spec_and_overrides_win() -> None:
    spec = {"provider": "openai", "model": "llama3", "base_url": "http://localhost:11434/v1", "timeout_s": "5"}
    model = load_model(spec, api_key_env="OLLAMA_KEY", timeout_s=7)
    assert isinstance(model, OpenAIModel)
    assert model.timeout_s == 7.0 and model.api_key_env == "OLLAMA_KEY" and model.model == "llama3"


def test_model_names_with_colons() -> None:
    model = load_model("openai:llama3.1:8b", base_url="http://localhost:11434/v1")
    assert isinstance(model, OpenAIModel) and model.model == "llama3.1:8b"


def test_python_specs() -> None:
    model = load_model("python:tests.models.sample_agents:Calculator", kwargs={"offset": 1}, version="3")
    assert isinstance(model, PythonModel)
    assert model.identity()["target"] == "tests.models.sample_agents:Calculator"
    assert model.identity()["version"] == "3"
    as_dict = load_model({"provider": "python", "target": "tests.models.sample_agents:echo", "threaded": False})
    assert isinstance(as_dict, PythonModel) and as_dict.threaded is False


async def test_plain_callable_becomes_python_model() -> None:
    model = load_model(lambda request: "hi", version="1")
    assert isinstance(model, PythonModel)
    assert (await model.generate(Request(sample_id="s", messages=[{"role": "user", "content": "x"}]))).text == "hi"


def test_object_with_generate_becomes_python_model() -> None:
    class Agent:
        def generate(self, request: Request) -> str:
            return "x"

    assert isinstance(load_model(Agent()), PythonModel)


def test_predictions_spec(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"id": "a", "answer": "x"}) + "\n")
    model = load_model(f"predictions:{path}", text_field="answer")
    assert isinstance(model, PredictionsModel) and len(model) == 1


def test_model_instance_passes_through() -> None:
    model = OpenAIModel("m")
    assert load_model(model) is model
    with pytest.raises(ConfigError, match="cannot apply options"):
        load_model(model, timeout_s=3)


@pytest.mark.parametrize(
    ("spec", "overrides", "message"),
    [
        ("gpt-4o", {}, "must look like 'provider:argument'"),
        ("openai:", {}, "must look like"),
        (
            "anthropic:claude",
            {},
            r"unknown model provider 'anthropic' \(known providers: .*openai.*predictions.*python",
        ),
        ({"model": "x"}, {}, r"needs a 'provider' key .* it has 'model'"),
        (
            {"provider": "openai", "model": "x", "base_ur": "http://h"},
            {},
            r"model 'openai': unknown option 'base_ur' \(known options: .*base_url",
        ),
        ({"provider": "openai"}, {}, r"missing option 'model'"),
        ("openai:m", {"timeout_s": "soon"}, r"option 'timeout_s': .*\(got 'soon'\)"),
        ("openai:m", {"timeout_s": -1}, r"'timeout_s' must be > 0"),
        ("python:tests.models.sample_agents:echo", {"kwarg": 1}, r"unknown option 'kwarg'"),
        (42, {}, "cannot make a model from int"),
    ],
)
def test_bad_specs_name_the_problem(spec: Any, overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_model(spec, **overrides)


def test_secret_values_are_not_echoed_in_errors() -> None:
    with pytest.raises(ConfigError) as err:
        load_model("openai:m", api_key=["sk-not-a-string-123"])
    assert "'api_key'" in str(err.value) and "sk-not-a-string-123" not in str(err.value)


def test_describe_round_trips_through_load_model(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"id": "a", "prediction": "x"}) + "\n")
    models: list[Model] = [
        OpenAIModel("m", base_url="http://localhost:1/v1", params={"seed": 1}, timeout_s=9, api_key_env="K"),
        PythonModel("tests.models.sample_agents:Calculator", kwargs={"offset": 2}, version="v", threaded=False),
        PredictionsModel(path, id_field="id"),
    ]
    for model in models:
        rebuilt = load_model(json.loads(json.dumps(model.describe())))
        assert type(rebuilt) is type(model)
        assert rebuilt.identity() == model.identity() and rebuilt.describe() == model.describe()


async def test_register_provider_and_class_spec() -> None:
    class Constant(Model):
        provider: ClassVar[str] = "constant"

        def __init__(self, text: str, *, upper: bool = False) -> None:
            self.name = "constant"
            self.text = text.upper() if upper else text

        async def generate(self, request: Request) -> Response:
            return Response(text=self.text)

    register_provider("constant", Constant)
    assert "constant" in providers()
    model = load_model("constant:hello", upper=True)
    request = Request(sample_id="s", messages=[{"role": "user", "content": "x"}])
    assert (await model.generate(request)).text == "HELLO"
    with pytest.raises(ConfigError, match="option 'upper'"):
        load_model({"provider": "constant", "text": "x", "upper": "maybe"})
    assert isinstance(load_model(Constant, text="direct"), Constant)
    with pytest.raises(ConfigError, match="not a Model subclass"):
        register_provider("bad", dict)  # type: ignore[arg-type]


async def test_loaded_openai_model_talks_to_the_server() -> None:
    with OpenAITestServer() as server:
        model = load_model({"provider": "openai", "model": "m", "base_url": server.base_url})
        try:
            response = await model.generate(Request(sample_id="s", messages=[{"role": "user", "content": "ping"}]))
        finally:
            await model.aclose()
    assert response.text == "ping"
