"""A model that cannot give log-likelihoods (a chat endpoint) is refused before anything is sent: a real test
server sees no request, and the message names the model kinds that can run the task."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import assay
from assay.cli import main
from assay.errors import ConfigError
from assay.testing.server import OpenAITestServer
from tests.loglik.lldata import assay_tasks

KINDS = ("hf:", "vllm:", "openai-completions:")


@pytest.fixture()
def server() -> OpenAITestServer:
    with OpenAITestServer(reply="A") as running:
        yield running


@pytest.mark.parametrize("which", ["arc", "wiki"])
def test_a_chat_model_is_refused_before_any_request(server: OpenAITestServer, tmp_path: Path, which: str):
    arc, wiki = assay_tasks(tmp_path)
    task = arc if which == "arc" else wiki
    model = {"provider": "openai", "model": "chat-only", "base_url": server.base_url, "api_key": "sk-test"}
    with pytest.raises(ConfigError) as refused:
        assay.run(str(task), model=model, output_dir=str(tmp_path / "runs"), progress=False)
    message = str(refused.value)
    assert "'openai'" in message and ("arc_tiny" if which == "arc" else "wiki_tiny") in message
    assert all(kind in message for kind in KINDS), message
    assert server.requests_total == 0
    assert not list((tmp_path / "runs").glob("*/samples.jsonl"))  # no run folder of failed samples


def test_the_cli_refuses_with_a_message_not_a_traceback(server: OpenAITestServer, tmp_path: Path):
    arc, _ = assay_tasks(tmp_path)
    args = ["run", str(arc), "--model", "openai:chat-only", "--base-url", server.base_url]
    result = CliRunner().invoke(main, [*args, "--output-dir", str(tmp_path / "runs")], env={"OPENAI_API_KEY": "sk-t"})
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert "multiple_choice" in result.output and all(kind in result.output for kind in KINDS), result.output
    assert server.requests_total == 0


def test_a_completions_model_is_not_refused(server: OpenAITestServer, tmp_path: Path):
    """The same check lets a model with the capability through (here it fails later: this server scripts no
    log-probabilities, so the sample errors, after a request was sent)."""
    arc, _ = assay_tasks(tmp_path, mutual_info=False)  # text prompts cannot score empty contexts
    model = {"provider": "openai-completions", "model": "m", "base_url": server.base_url}
    with pytest.raises(assay.RunFailed):
        assay.run(str(arc), model=model, output_dir=str(tmp_path / "runs"), progress=False, limit=1, max_error_rate=0.0)
    assert server.requests_total > 0
