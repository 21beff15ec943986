"""Every `assay run` option is a keyword of assay.run / assay.arun under the same name (with underscores), so the
README's promise holds and the two cannot drift apart."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import click
import pytest

import assay
from assay.commands.run import run_command
from assay.testing.server import OpenAITestServer
from tests.e2e.e2e_support import arithmetic_reply, write_task


def keyword(param: click.Parameter) -> str:
    """The Python keyword for a CLI parameter: its first long option, dashes as underscores (or its name)."""
    longs = [o for o in param.opts if o.startswith("--")]
    return longs[0][2:].replace("-", "_") if longs else str(param.name)


def sample_value(param: click.Parameter, tmp_path: Path) -> Any:
    """A value of the parameter's type, so that the keyword is tried the way a user would pass it."""
    kind = param.type
    if isinstance(param, click.Option) and param.is_flag:
        return True
    if isinstance(kind, click.Choice):
        return kind.choices[0]
    if isinstance(kind, click.Path):
        return str(tmp_path / "missing")
    if isinstance(kind, click.IntRange | type(click.INT)):
        return 2
    if isinstance(kind, click.FloatRange | type(click.FLOAT)):
        return 2.0
    return ["x=1"] if param.multiple else "x"


def refusal(error: BaseException) -> str | None:
    """The message when ``error`` says the keyword itself is not known (any other error is about its value)."""
    text = str(error)
    return text if "unknown keyword argument" in text or "unexpected keyword" in text else None


def test_every_cli_option_of_assay_run_is_accepted_by_assay_run_and_arun(tmp_path: Path) -> None:
    params = [p for p in run_command.params if p.name not in ("tasks",)]
    assert len(params) > 30  # the walk sees the whole command
    refused: dict[str, str] = {}
    for param in params:
        name = keyword(param)
        for call in ("run", "arun"):
            try:
                if call == "run":
                    assay.run(None, None, **{name: sample_value(param, tmp_path)})
                else:
                    asyncio.run(assay.arun(None, None, **{name: sample_value(param, tmp_path)}))
            except (assay.AssayError, TypeError, ValueError) as err:  # no task given, a bad value, …: not refused
                why = refusal(err)
                if why is not None:
                    refused[f"{call}({name}=…)"] = why
    assert refused == {}


def test_an_unknown_keyword_is_still_refused_with_a_hint(tmp_path: Path) -> None:
    with pytest.raises(assay.ConfigError, match=r"unknown keyword argument 'base_ur' \(did you mean 'base_url'\?\)"):
        assay.run(None, None, base_ur="http://x")


def test_cli_keywords_take_effect_in_a_python_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("MY_KEY", "k-123")
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"assay-test": {"input": 1000.0, "output": 0.0}}))
    with OpenAITestServer(arithmetic_reply, api_key="k-123") as server:
        task = write_task(tmp_path, 4)
        run = assay.run(
            task,
            "openai:assay-test",
            base_url=server.base_url,  # refused before: the README says the keywords are the CLI's options
            api_key_env="MY_KEY",
            params=["seed=7"],
            timeout=9,
            cache=True,
            cache_dir=tmp_path / "cache",
            prices=str(prices),
            name="keywords",
            output_dir=tmp_path / "runs",
            quiet=True,
            max_error_rate=1,
        )
        assert server.requests_total == 4 and all(body["seed"] == 7 for body in server.requests)
        manifest = run.manifest
        assert manifest.model["base_url"] == server.base_url and manifest.model["api_key_env"] == "MY_KEY"
        assert manifest.name == "keywords" and manifest.config["timeout_s"] == 9
        assert (tmp_path / "cache" / "responses.sqlite").exists()
        assert run.operational["roles"]["model"]["assay-test"]["cost_usd"] > 0  # the prices file was read
        assert capsys.readouterr().out == ""  # quiet: nothing printed

        again = assay.run(
            task,
            "openai:assay-test",
            base_url=server.base_url,
            api_key_env="MY_KEY",
            params={"seed": 7},
            cache=True,
            cache_dir=tmp_path / "cache",
            output_dir=tmp_path / "runs",
            format="markdown",
            name="again",
            ray_workers=2,  # recorded for a Ray run; this one runs here
        )
        assert server.requests_total == 4  # every answer came from the cache in cache_dir
        shown = capsys.readouterr()
        assert "|Tasks|" in shown.out and "exact_match" in shown.out
        assert "run 'again': 4 samples evaluated" in shown.err and "4 answers from the cache" in shown.err
        assert again.manifest.config["ray"]["workers"] == 2


def test_model_options_need_a_model_spec(tmp_path: Path) -> None:
    task = write_task(tmp_path, 1)
    with pytest.raises(assay.ConfigError, match="base_url need a model"):
        assay.run(task, None, base_url="http://127.0.0.1:1/v1", output_dir=tmp_path / "runs")
    from assay.demo.agent import answer

    with pytest.raises(assay.ConfigError, match="apply to a model spec"):
        assay.run(task, assay.load_model(answer), base_url="http://127.0.0.1:1/v1", output_dir=tmp_path / "runs")
    with pytest.raises(assay.ConfigError, match="give 'timeout' or 'timeout_s', not both"):
        assay.run(task, "openai:m", timeout=1, timeout_s=2, output_dir=tmp_path / "runs")
    with pytest.raises(assay.ConfigError, match=r"invalid run settings: concurrency: "):
        assay.run(task, "openai:m", concurrency=0, output_dir=tmp_path / "runs")
    assert not (tmp_path / "runs").exists()
