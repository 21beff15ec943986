"""lm-eval task YAMLs copied from the installed lm-eval (only dataset_path / data_files rewritten to local JSONL in
the fixture copies) read by `assay run` unchanged: gsm8k against the OpenAI test server, figures by hand."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from assay.errors import ConfigError
from assay.tasks.importers.lmeval import find_task, is_lmeval_reference, load_lmeval_task
from assay.testing.server import OpenAITestServer
from tests.e2e.e2e_support import assay_cmd
from tests.importers.lmeval.conftest import FIXTURES


def _answers() -> list[int]:
    rows = [json.loads(line) for line in (FIXTURES / "gsm8k" / "test.jsonl").read_text().splitlines()]
    return [int(r["answer"].rsplit("#### ", 1)[1]) for r in rows]


def reply(request: dict[str, Any]) -> str:
    text = request["messages"][-1]["content"]
    question = text.rsplit("Question: ", 1)[1]
    a, b = (int(x) for x in re.findall(r"\d+", question)[:2])
    if a % 3 == 0:
        return f"So {a} + {b} = {a + b + 1}.\n#### {a + b + 1} (1 try)"  # wrong; flexible's last match: one digit
    if a % 3 == 1:
        return f"He ends with {a + b} apples."  # right, but no '####': only flexible-extract finds it
    return f"{a} + {b} = {a + b}\n#### {a + b}"


def test_gsm8k_runs_unchanged_with_lm_evals_keys_and_figures(tmp_path: Path) -> None:
    work = tmp_path / "gsm8k"
    shutil.copytree(FIXTURES / "gsm8k", work)
    env = {**os.environ, "OPENAI_API_KEY": "EMPTY", "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
    with OpenAITestServer(reply) as server:
        cmd = assay_cmd("run", "gsm8k.yaml", "-m", "openai:test-model", "--base-url", server.base_url, "-o", "runs")
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=300)
        requests = server.requests
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert len(requests) == 6
    first = requests[0]
    prompt = first["messages"][-1]["content"]
    train = [json.loads(line) for line in (work / "train.jsonl").read_text().splitlines()]
    assert prompt.count("Question: ") == 6 and prompt.endswith("\nAnswer:")  # 5 shots + the question
    assert all(
        f"Question: {r['question']}\nAnswer: {r['answer']}\n\n" in prompt for r in train if r["question"] in prompt
    )
    assert first["stop"] == ["Question:", "</s>", "<|im_end|>"] and first["temperature"] == 0.0
    assert first["max_tokens"] == 256  # lm-eval's max_gen_toks default
    # by hand: strict-match needs '#### N'; flexible-extract takes the last number
    rows = [json.loads(line) for line in (work / "test.jsonl").read_text().splitlines()]
    strict, flexible = [], []
    for r in rows:
        a = int(re.findall(r"\d+", r["question"])[0])
        strict.append(a % 3 == 2)
        flexible.append(a % 3 != 0)
    (run_dir,) = [p for p in (work / "runs").iterdir() if p.is_dir()]
    results = json.loads((run_dir / "results.json").read_text())["results"]["gsm8k"]
    assert results["exact_match,strict-match"] == pytest.approx(sum(strict) / 6)
    assert results["exact_match,flexible-extract"] == pytest.approx(sum(flexible) / 6)
    assert 0 < sum(strict) < sum(flexible) < 6  # the data exercise every branch


def test_include_merges_the_included_file_and_the_includer_wins() -> None:
    easy = load_lmeval_task(FIXTURES / "arc" / "arc_easy.yaml")
    challenge = load_lmeval_task(FIXTURES / "arc" / "arc_challenge.yaml")
    assert (easy.name, challenge.name) == ("arc_easy", "arc_challenge")
    assert challenge.output_type == "multiple_choice" and [m.name for m in challenge.metrics] == ["acc", "acc_norm"]
    sample = challenge.samples()[0]
    assert sample.target == sample.doc["choices"]["label"].index(sample.doc["answerKey"])  # the target template
    query = challenge.build_request(sample).loglikelihood
    assert query is not None and query.context == f"Question: {sample.doc['question']}\nAnswer:"
    assert query.continuations == tuple(" " + c for c in sample.doc["choices"]["text"])


def test_hellaswag_process_docs_hook_runs_from_the_tasks_folder() -> None:
    task = load_lmeval_task(FIXTURES / "hellaswag" / "hellaswag.yaml")
    sample = task.samples()[0]
    assert "[title]" not in sample.doc["query"] and sample.doc["gold"] == int(sample.doc["label"])
    query = task.build_request(sample).loglikelihood
    assert query is not None and query.context == sample.doc["query"]
    assert sample.target == int(sample.doc["label"])


def test_multiple_choice_few_shot_shows_the_gold_choice_text(tmp_path: Path) -> None:
    work = tmp_path / "arc"
    shutil.copytree(FIXTURES / "arc", work)
    text = (work / "arc_easy.yaml").read_text()
    (work / "arc_easy.yaml").write_text(text + "num_fewshot: 2\nfewshot_config:\n  sampler: first_n\n")
    task = load_lmeval_task(work / "arc_easy.yaml")
    train = [json.loads(line) for line in (work / "train.jsonl").read_text().splitlines()]
    context = task.build_request(task.samples()[0]).loglikelihood.context  # type: ignore[union-attr]
    shots = [
        f"Question: {r['question']}\nAnswer: {r['choices']['text'][r['choices']['label'].index(r['answerKey'])]}"
        for r in train[:2]
    ]
    assert context.startswith("\n\n".join(shots) + "\n\nQuestion: ")


def test_an_unsupported_key_is_named_with_file_and_line(tmp_path: Path) -> None:
    work = tmp_path / "gsm8k"
    shutil.copytree(FIXTURES / "gsm8k", work)
    lines = (work / "gsm8k.yaml").read_text().splitlines()
    lines.insert(3, "gen_prefix: 'So'")
    (work / "gsm8k.yaml").write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=r"gsm8k\.yaml:4: gen_prefix: lm-eval key not supported"):
        load_lmeval_task(work / "gsm8k.yaml")
    proc = subprocess.run(assay_cmd("run", "gsm8k.yaml", "-m", "openai:x"), cwd=work, capture_output=True, text=True)
    assert proc.returncode != 0 and "gsm8k.yaml:4: gen_prefix" in proc.stderr and "Traceback" not in proc.stderr


def test_lm_eval_name_finds_the_installed_task_file() -> None:
    pytest.importorskip("lm_eval")
    import lm_eval

    path = find_task("arc_easy")
    assert path == Path(lm_eval.__file__).parent / "tasks" / "arc" / "arc_easy.yaml"
    assert is_lmeval_reference("lm-eval:arc_easy") and is_lmeval_reference(FIXTURES / "gsm8k" / "gsm8k.yaml")
    with pytest.raises(ConfigError, match="no task 'no_such_task'"):
        find_task("no_such_task")


def test_task_format_lm_eval_reads_a_file_auto_detection_would_not(tmp_path: Path) -> None:
    """A task file auto-detection does not take for lm-eval's (its suffix is not .yaml) is read as lm-eval's with
    ``--task-format lm-eval`` and ``assay.run(task_format="lm-eval")``; an unknown format is named."""
    import assay

    work = tmp_path / "gsm8k"
    shutil.copytree(FIXTURES / "gsm8k", work)
    text = (work / "gsm8k.yaml").read_text()
    (work / "gsm8k.task").write_text(text)
    (work / "gsm8k.yaml").unlink()
    assert not is_lmeval_reference(work / "gsm8k.task")
    env = {**os.environ, "OPENAI_API_KEY": "EMPTY", "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
    with OpenAITestServer(reply) as server:
        cmd = assay_cmd(
            "run", "gsm8k.task", "--task-format", "lm-eval", "-m", "openai:test-model",
            "--base-url", server.base_url, "-o", "runs", "--name", "cli",
        )  # fmt: skip
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode in (0, 1), proc.stdout + proc.stderr
        run = assay.run(
            str(work / "gsm8k.task"), "openai:test-model", task_format="lm-eval", base_url=server.base_url,
            output_dir=str(work / "api-runs"), cache=False, quiet=True, max_error_rate=None,
        )  # fmt: skip
    (cli_dir,) = [p for p in (work / "runs").iterdir() if p.is_dir()]
    cli = json.loads((cli_dir / "results.json").read_text())["results"]["gsm8k"]
    api = run.results["results"]["gsm8k"]
    assert cli["exact_match,strict-match"] == api["exact_match,strict-match"]
    assert cli["exact_match,flexible-extract"] == api["exact_match,flexible-extract"] > 0  # gsm8k's own filters ran
    with pytest.raises(ConfigError, match="task_format: one of auto, lm-eval, got 'inspect'"):
        assay.run(str(work / "gsm8k.task"), "openai:x", task_format="inspect")
