"""truthfulqa_gen, fetched unchanged with its utils.py (process_docs and process_results hooks), gives lm-eval's own
per-sample values and figures when both ask the same OpenAI test server: twelve BLEU and ROUGE metrics on their
own scale (BLEU 0-100, differences below zero), which the process_results hook computes in both."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from assay.testing.server import OpenAITestServer, last_user_text
from tests.e2e.e2e_support import assay_cmd, sample_lines
from tests.importers.lmeval.conftest import FIXTURES, lmeval_chat

pytest.importorskip("lm_eval", reason="lm-eval is not installed")
pytest.importorskip("tenacity", reason="lm-eval's API models need lm-eval[api] (tenacity)")
pytest.importorskip("sacrebleu", reason="truthfulqa's hook needs sacrebleu (assay[metrics])")
pytest.importorskip("rouge_score", reason="truthfulqa's hook needs rouge-score (assay[metrics])")

METRICS = [f"{m}_{k}" for m in ("bleu", "rouge1", "rouge2", "rougeL") for k in ("max", "acc", "diff")]
REPLIES = {  # by question: a true answer, a false one, a partial one, an evasion, non-ASCII
    "watermelon": "You grow watermelons in your stomach.",
    "fortune cookies": "Fortune cookies originated in San Francisco.",
    "veins": "Because the blood in them is blue.",
    "chili": "The seeds are the spiciest part.",
    "missing person": "You can report it as soon as you think a person is missing.",
    "matadors": "Bulls hate the color red.",
    "knuckles": "Nothing in particular happens.",
    "café": "La façade est bleue, naïvement.",
}


def reply(request: dict[str, Any]) -> str:
    question = last_user_text(request).rsplit("Q: ", 1)[-1].lower()
    return next((text for key, text in REPLIES.items() if key in question), "I have no comment.")


def test_truthfulqa_gen_values_equal_lm_evals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "truthfulqa"
    shutil.copytree(FIXTURES / "truthfulqa", work)
    monkeypatch.chdir(work)  # lm-eval reads relative data_files from the working directory
    monkeypatch.setenv("OPENAI_API_KEY", "EMPTY")
    env = {**os.environ, "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
    with OpenAITestServer(reply) as server:
        cmd = assay_cmd("run", "truthfulqa_gen.yaml", "-m", "openai:test-model", "--base-url", server.base_url)
        proc = subprocess.run([*cmd, "-o", "runs"], cwd=work, env=env, capture_output=True, text=True, timeout=300)
        theirs = lmeval_chat(server.base_url, "truthfulqa_gen", work)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run_dir,) = [p for p in (work / "runs").iterdir() if p.is_dir()]
    ours = json.loads((run_dir / "results.json").read_text())["results"]["truthfulqa_gen"]
    figures = theirs["results"]["truthfulqa_gen"]
    for metric in METRICS:
        assert ours[f"{metric},none"] == pytest.approx(float(figures[f"{metric},none"]), abs=1e-9), metric
        mean_stderr = f"{metric}_stderr,none"
        assert ours[mean_stderr] == pytest.approx(float(figures[mean_stderr]), abs=1e-9), metric
    records = {r["doc_id"]: r for r in sample_lines(run_dir)}
    for sample in theirs["samples"]["truthfulqa_gen"]:
        mine = records[sample["doc_id"]]
        assert mine["responses"][0]["text"] == sample["resps"][0][0]  # the same reply judged on both sides
        for metric in METRICS:
            assert mine["filters"]["none"]["scores"][metric] == pytest.approx(float(sample[metric]), abs=1e-9)
    assert len(records) == len(theirs["samples"]["truthfulqa_gen"]) == 8
    # on their own scale: BLEU up to 100, differences below zero, never clipped into [0, 1]
    diffs = [r["filters"]["none"]["scores"]["bleu_diff"] for r in records.values()]
    assert ours["bleu_max,none"] > 1.0 and min(diffs) < 0
    assert 0.0 < ours["bleu_acc,none"] < 1.0
