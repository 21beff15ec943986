"""lm-eval task YAMLs copied from the installed lm-eval (only dataset_path / data_files rewritten to local JSONL in
the fixture copies) read by lm-eval's own task layer and run by `assay run`: gsm8k against the OpenAI test server
(figures by hand), hellaswag's utils.py, errors, the missing extra, a chat model refused a log-likelihood task."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from assay.errors import ConfigError
from assay.tasks.importers.lmeval import is_lmeval_reference, load_lmeval_tasks
from assay.testing.server import OpenAITestServer
from tests.e2e.e2e_support import assay_cmd
from tests.importers.lmeval.conftest import FIXTURES, reply


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


def test_a_task_files_utils_and_includes_are_lm_evals_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """hellaswag's process_docs (its utils.py) and arc's include: lm-eval's own task objects build the requests."""
    from lm_eval.tasks import TaskManager

    work = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, work)
    monkeypatch.chdir(work / "hellaswag")
    (task,) = load_lmeval_tasks(work / "hellaswag" / "hellaswag.yaml")
    theirs = TaskManager(include_path=str(work / "hellaswag"), include_defaults=False).load(["hellaswag"])["tasks"]
    docs = list(theirs["hellaswag"].validation_docs())
    samples = task.samples()
    assert len(samples) == len(docs) > 3
    for doc, sample in zip(docs, samples, strict=True):
        query = task.build_request(sample).loglikelihood
        assert query is not None and query.context == theirs["hellaswag"].fewshot_context(doc, 0)
        assert [c.strip() for c in query.continuations] == doc["choices"]  # process_docs's cleaned endings
        assert sample.target == theirs["hellaswag"].doc_to_target(doc)


def test_lm_eval_errors_name_the_task_and_nothing_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "gsm8k"
    shutil.copytree(FIXTURES / "gsm8k", work)
    monkeypatch.chdir(work)
    text = (work / "gsm8k.yaml").read_text()
    (work / "gsm8k.yaml").write_text(text.replace("test.jsonl", "missing.jsonl"))
    with pytest.raises(ConfigError, match=r"lm-eval could not load gsm8k: .*missing\.jsonl"):
        load_lmeval_tasks(work / "gsm8k.yaml")
    with pytest.raises(ConfigError, match="no such lm-eval task file"):
        load_lmeval_tasks(work / "absent.yaml")


def test_without_lm_eval_the_message_names_the_extra(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['lm_eval'] = None\n"
        "from assay.errors import ConfigError\n"
        "from assay.tasks.importers.lmeval.suite import require_lm_eval\n"
        "try:\n    require_lm_eval()\nexcept ConfigError as err:\n    print(err)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "pip install 'assay[lm-eval]'" in out.stdout, out.stderr


def test_lm_eval_names_and_files_are_recognised() -> None:
    assert is_lmeval_reference("lm-eval:arc_easy") and is_lmeval_reference(FIXTURES / "gsm8k" / "gsm8k.yaml")
    assert is_lmeval_reference(FIXTURES / "mmlu_group" / "_mmlu_stem.yaml")  # a group file
    assert not is_lmeval_reference(Path(__file__).parents[3] / "examples" / "qa_tools" / "task.yaml")


def test_a_chat_model_is_refused_a_loglikelihood_task_before_any_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import assay

    work = tmp_path / "arc"
    shutil.copytree(FIXTURES / "arc", work)
    monkeypatch.chdir(work)
    with OpenAITestServer("A") as server:
        with pytest.raises(ConfigError, match="multiple_choice ranks text by its log-likelihood"):
            assay.run(str(work / "arc_easy.yaml"), "openai:m", base_url=server.base_url, output_dir=str(tmp_path))
        assert server.requests_total == 0


def test_task_format_lm_eval_reads_a_file_auto_detection_would_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task file auto-detection does not take for lm-eval's (its suffix is not .yaml) is read as lm-eval's with
    ``--task-format lm-eval`` and ``assay.run(task_format="lm-eval")``; an unknown format is named."""
    import assay

    work = tmp_path / "gsm8k"
    shutil.copytree(FIXTURES / "gsm8k", work)
    text = (work / "gsm8k.yaml").read_text()
    (work / "gsm8k.task").write_text(text)
    (work / "gsm8k.yaml").unlink()
    monkeypatch.chdir(work)  # lm-eval reads relative data_files from the working directory
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


def test_optimize_refuses_an_lm_eval_task_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import assay

    work = tmp_path / "gsm8k"
    shutil.copytree(FIXTURES / "gsm8k", work)
    monkeypatch.chdir(work)
    with pytest.raises(ConfigError, match="task 'gsm8k' is lm-eval's"):
        assay.optimize(str(work / "gsm8k.yaml"), "openai:m", budget=10, output_dir=str(tmp_path / "opt"))
