"""Parity with lm-evaluation-harness on the same model and data: lm-eval's own ``hf`` backend, run in this process
on the tiny checkpoint and an lm-eval task YAML over the same JSONL files, gives the figures assay gives (acc,
acc_norm, acc_mutual_info, word/byte perplexity, bits per byte), and the same per-sample log-likelihoods."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

import assay
from tests.loglik.lldata import assay_tasks, lmeval_tasks

lm_eval = pytest.importorskip("lm_eval", reason="lm-eval is not installed (pip install 'assay[dev]' installs it)")
pytest.importorskip("accelerate", reason="lm-eval's hf backend needs accelerate")

METRICS = {
    "arc_tiny": ["acc", "acc_norm", "acc_mutual_info"],
    "wiki_tiny": ["word_perplexity", "byte_perplexity", "bits_per_byte"],
}


@pytest.fixture(scope="module")
def both(tiny_lm: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict[str, Any]]:
    """(assay's run, lm-eval's results with its samples) on the same model and data."""
    from lm_eval.tasks import TaskManager

    folder = tmp_path_factory.mktemp("parity")
    arc, wiki = assay_tasks(folder)
    run = assay.run([str(arc), str(wiki)], model=f"hf:{tiny_lm}", output_dir=str(folder / "runs"), progress=False)
    manager = TaskManager(include_path=str(lmeval_tasks(folder / "lmeval", folder)))
    theirs = lm_eval.simple_evaluate(
        model="hf",
        model_args=f"pretrained={tiny_lm}",
        tasks=["arc_tiny_lm", "wiki_tiny_lm"],
        task_manager=manager,
        batch_size=4,
        device="cpu",
        log_samples=True,
    )
    return run, theirs


def test_figures_equal_lm_evals_under_its_own_key_names(both: tuple[Any, dict[str, Any]]):
    run, theirs = both
    ours = json.loads((run.path / "results.json").read_text())["results"]
    for task, metrics in METRICS.items():
        for metric in metrics:
            mine, lm = ours[task][f"{metric},none"], theirs["results"][f"{task}_lm"][f"{metric},none"]
            assert mine == pytest.approx(lm, rel=1e-6, abs=1e-9), f"{task} {metric}"
            assert math.isfinite(ours[task][f"{metric}_stderr,none"])  # every figure has an interval
    for metric in METRICS["arc_tiny"]:  # a mean of 0/1 values: lm-eval's stderr too
        mine = ours["arc_tiny"][f"{metric}_stderr,none"]
        assert mine == pytest.approx(theirs["results"]["arc_tiny_lm"][f"{metric}_stderr,none"], rel=1e-6)
    assert ours["arc_tiny"]["sample_len"] == theirs["results"]["arc_tiny_lm"]["sample_len"] == 40


def test_per_sample_loglikelihoods_equal_lm_evals(both: tuple[Any, dict[str, Any]]):
    run, theirs = both
    records = {(r.task, r.doc_id): r for r in run.iter_records()}
    compared = 0
    for sample in theirs["samples"]["arc_tiny_lm"]:
        lls = [resp[0][0] for resp in sample["resps"]]  # choices, then the unconditional ones
        figures = records[("arc_tiny", sample["doc_id"])].responses[0].metadata["loglikelihood"]
        assert figures["logprobs"] + figures["unconditional"] == pytest.approx(lls, rel=1e-6, abs=1e-5)  # float32
        assert figures["greedy"] == [resp[0][1] for resp in sample["resps"]][: len(figures["greedy"])]
        compared += len(lls)
    for sample in theirs["samples"]["wiki_tiny_lm"]:
        ll = sample["resps"][0][0]
        figures = records[("wiki_tiny", sample["doc_id"])].responses[0].metadata["loglikelihood"]
        assert figures["logprobs"][0] == pytest.approx(ll, abs=1e-4)
        compared += 1
    assert compared > 200
