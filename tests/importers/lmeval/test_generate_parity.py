"""gsm8k (generate_until, two filter pipelines) imported unchanged gives lm-eval's own figures and per-sample
extractions when both ask the same OpenAI test server: lm-eval through its local-chat-completions model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from assay.testing.server import OpenAITestServer
from tests.e2e.e2e_support import assay_cmd, sample_lines
from tests.importers.lmeval.conftest import FIXTURES, lmeval_chat, reply

pytest.importorskip("lm_eval", reason="lm-eval is not installed")
pytest.importorskip("tenacity", reason="lm-eval's API models need lm-eval[api] (tenacity)")


def test_gsm8k_figures_and_extractions_equal_lm_evals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "gsm8k"
    shutil.copytree(FIXTURES / "gsm8k", work)
    monkeypatch.chdir(work)  # lm-eval reads relative data_files from the working directory
    monkeypatch.setenv("OPENAI_API_KEY", "EMPTY")
    env = {**os.environ, "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
    with OpenAITestServer(reply) as server:
        cmd = assay_cmd("run", "gsm8k.yaml", "-m", "openai:test-model", "--base-url", server.base_url, "-o", "runs")
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=300)
        theirs = lmeval_chat(server.base_url, "gsm8k", work)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run_dir,) = [p for p in (work / "runs").iterdir() if p.is_dir()]
    ours = json.loads((run_dir / "results.json").read_text())["results"]["gsm8k"]
    for key in ("exact_match,strict-match", "exact_match,flexible-extract"):
        assert ours[key] == pytest.approx(float(theirs["results"]["gsm8k"][key]))
        stderr = key.replace(",", "_stderr,")
        assert ours[stderr] == pytest.approx(float(theirs["results"]["gsm8k"][stderr]))
    records = {r["doc_id"]: r for r in sample_lines(run_dir)}
    compared = 0
    for sample in theirs["samples"]["gsm8k"]:
        mine = records[sample["doc_id"]]["filters"][sample["filter"]]
        assert mine["filtered"] == [sample["filtered_resps"][0]]
        assert mine["scores"]["exact_match"] == pytest.approx(float(sample["exact_match"]))
        compared += 1
    assert compared == 12  # 6 documents x 2 filters
    assert 0 < ours["exact_match,strict-match"] < ours["exact_match,flexible-extract"] < 1
