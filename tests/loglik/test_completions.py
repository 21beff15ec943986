"""``openai-completions`` over real HTTP: the bundled test server answers ``/v1/completions`` with echoed
log-probabilities computed by a plain forward pass of the tiny model, and the figures equal ``hf``'s.

lm-eval's API models keep one position of ``max_length`` for the token the server generates (a prompt holds at most
``max_length - 1`` tokens) and roll windows of ``max_length - 2`` predicted tokens; its ``hf`` backend scores
``max_length + 1`` tokens (inputs of ``max_length``). So ``openai-completions`` at the tiny model's 128 equals ``hf``
at 126: the same truncations, the same windows, token for token."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.errors import ConfigError
from assay.testing.logprobs import logprob_reply
from assay.testing.server import OpenAITestServer
from tests.loglik.lldata import assay_tasks, wiki_rows, write_jsonl
from tests.loglik.reference import Reference

SERVED = 128  # the tiny model's positions: the server cannot score a longer prompt


@pytest.fixture(scope="module")
def scripted(tiny_lm: Path) -> Any:
    ref = Reference(tiny_lm)
    with OpenAITestServer(completion=logprob_reply(ref.tokenizer, ref.rows)) as server:
        yield server


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, Path]:
    folder = tmp_path_factory.mktemp("tasks")
    arc, wiki = assay_tasks(folder)
    rows = [{"id": r["id"], "context": r["page"], "next": " the end"} for r in wiki_rows()]  # long contexts are cut
    write_jsonl(folder / "long.jsonl", rows)
    long = folder / "long.yaml"
    long.write_text(
        "name: long_tiny\ndataset: long.jsonl\noutput_type: loglikelihood\ntemplate: '{{context}}'\n"
        "fields: {target: next}\n"
    )
    return folder, arc, wiki, long


def _figures(run: Any) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r.task, r.doc_id): r.responses[0].metadata["loglikelihood"] for r in run.iter_records()}


@pytest.fixture(scope="module")
def hf_run(tiny_lm: Path, tasks: tuple[Path, Path, Path, Path]) -> Any:
    folder, arc, wiki, long = tasks
    model = {"provider": "hf", "pretrained": str(tiny_lm), "max_length": SERVED - 2}
    return assay.run([str(arc), str(wiki), str(long)], model=model, output_dir=str(folder / "hf"), progress=False)


def test_token_prompts_give_hfs_figures(scripted: OpenAITestServer, tiny_lm: Path, tasks, hf_run):
    folder, arc, wiki, long = tasks
    scripted.reset()
    model = {"provider": "openai-completions", "model": "assay-test", "base_url": scripted.base_url,
             "tokenizer": str(tiny_lm), "max_length": SERVED}  # fmt: skip
    run = assay.run([str(arc), str(wiki), str(long)], model=model, output_dir=str(folder / "api"), progress=False)
    ours = json.loads((run.path / "results.json").read_text())["results"]
    theirs = json.loads((hf_run.path / "results.json").read_text())["results"]
    for task, n in (("arc_tiny", 3), ("wiki_tiny", 3), ("long_tiny", 2)):
        assert ours[task]["sample_len"] == theirs[task]["sample_len"] > 0
        keys = [k for k in theirs[task] if "," in k and "_stderr" not in k]
        assert len(keys) == n
        for key in keys:
            assert ours[task][key] == pytest.approx(theirs[task][key], rel=1e-6), f"{task} {key}"
    mine, hf = _figures(run), _figures(hf_run)
    for key, figures in hf.items():
        # a text's windows are summed in float32 by hf: 1e-5 of each pair, 1e-8 of a -1000 text
        assert mine[key]["logprobs"] == pytest.approx(figures["logprobs"], rel=1e-7, abs=1e-5), key
        assert mine[key]["greedy"] == figures["greedy"]
        assert mine[key]["tokens"] == figures["tokens"]
    assert len(mine) == len(hf) == 56
    sent = [b for b in scripted.requests if isinstance(b.get("prompt"), list)]
    assert sent and all(b["echo"] is True and b["logprobs"] == 1 and b["max_tokens"] == 1 for b in sent)
    prompts = [p for b in sent for p in b["prompt"]]
    assert all(isinstance(p, list) and all(isinstance(t, int) for t in p) for p in prompts)
    # never more than max_length tokens at the server (the prompt and the one it makes), and the limit is reached
    # by both the cut contexts and the rolling windows
    assert max(len(p) for p in prompts) == SERVED - 1
    assert sum(len(p) == SERVED - 1 for p in prompts) >= 2


def test_text_prompts_find_the_boundary_from_text_offsets(scripted: OpenAITestServer, tasks, hf_run):
    folder, arc, _, _ = tasks
    plain = folder / "arc_plain.yaml"  # acc_mutual_info scores empty contexts, which text prompts cannot
    plain.write_text(arc.read_text().replace("[acc, acc_norm, acc_mutual_info]", "[acc, acc_norm]"))
    model = {"provider": "openai-completions", "model": "assay-test", "base_url": scripted.base_url}
    run = assay.run(str(plain), model=model, output_dir=str(folder / "text"), progress=False)
    mine, hf = _figures(run), _figures(hf_run)
    compared = 0
    for (_, doc), figures in mine.items():
        assert figures["logprobs"] == pytest.approx(hf[("arc_tiny", doc)]["logprobs"], abs=1e-5)
        compared += 1
    assert compared == 40


def test_rolling_without_a_tokenizer_is_an_error_naming_the_option(scripted: OpenAITestServer, tasks):
    folder, _, wiki, _ = tasks
    model = {"provider": "openai-completions", "model": "assay-test", "base_url": scripted.base_url}
    with pytest.raises(assay.RunFailed) as failed:
        assay.run(str(wiki), model=model, output_dir=str(folder / "nope"), progress=False, max_error_rate=0.0)
    assert "tokenizer" in str(failed.value)


def test_generation_through_the_completions_endpoint(tmp_path: Path):
    rows = [{"id": "1", "q": "2+2=", "target": "4"}, {"id": "2", "q": "3+3=", "target": "6"}]
    task = {"name": "sums", "dataset": rows, "template": "{{q}}", "evaluators": ["exact_match"],
            "generation": {"max_tokens": 4}}  # fmt: skip
    answers = {"2+2=": "4", "3+3=": "7"}
    with OpenAITestServer(completion=lambda prompt, body: answers[prompt]) as server:
        model = {"provider": "openai-completions", "model": "m", "base_url": server.base_url}
        run = assay.run(task, model=model, output_dir=str(tmp_path), progress=False)
        assert [b["max_tokens"] for b in server.requests] == [4, 4]
    results = json.loads((run.path / "results.json").read_text())["results"]["sums"]
    assert results["exact_match,none"] == 0.5


def test_a_bad_tokenizer_fails_before_anything_is_sent(scripted: OpenAITestServer, tasks, tmp_path: Path):
    _, arc, _, _ = tasks
    scripted.reset()
    model = {"provider": "openai-completions", "model": "m", "base_url": scripted.base_url,
             "tokenizer": str(tmp_path / "missing")}  # fmt: skip
    with pytest.raises(ConfigError, match="tokenizer"):
        assay.run(str(arc), model=model, output_dir=str(tmp_path / "runs"), progress=False)
    assert scripted.requests_total == 0
