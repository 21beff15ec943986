"""An lm-eval task on assay's runner: killed with SIGKILL and resumed, every document is answered exactly once and
the figures equal an uninterrupted run's; run again with the response cache, every answer comes from the cache and
the figures are the same."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from assay.testing.server import OpenAITestServer
from tests.e2e.e2e_support import assay_cmd, only_run_dir, sample_lines
from tests.importers.lmeval.parity import registry_copy
from tests.importers.lmeval.sweep.test_generate_core import chat_reply
from tests.support import lines_written, wait_for

pytest.importorskip("lm_eval", reason="lm-eval is not installed")

ROWS = [
    {"question": f"Tom has {a} apples and buys {a % 7 + 1} more. How many apples does he have?",
     "answer": f"{a}+{a % 7 + 1}\n#### {a + a % 7 + 1}"}
    for a in range(1, 61)
]  # fmt: skip


def _figures(run_dir: Path) -> dict[str, float]:
    results = json.loads((run_dir / "results.json").read_text())["results"]["gsm8k"]
    return {k: v for k, v in results.items() if "," in k}


def _cmd(path: Path, server: OpenAITestServer, *extra: str) -> list[str]:
    model = ["-m", "openai:test-model", "--base-url", server.base_url, "--num-fewshot", "2", "--bootstrap-iters", "0"]
    return assay_cmd("run", str(path), *model, "-q", *extra)


def test_sigkill_then_resume_answers_every_document_once(tmp_path: Path) -> None:
    path = registry_copy("gsm8k", tmp_path, {"train": ROWS[:5], "test": ROWS})
    env = {**os.environ, "OPENAI_API_KEY": "EMPTY", "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
    with OpenAITestServer(chat_reply, latency_s=0.03) as server:
        whole = subprocess.run(_cmd(path, server, "-o", "whole", "--no-cache"), cwd=tmp_path, env=env, timeout=300)
        assert whole.returncode == 0
        proc = subprocess.Popen(_cmd(path, server, "-o", "runs", "-c", "2", "--no-cache"), cwd=tmp_path, env=env)
        wait_for(lambda: lines_written(tmp_path / "runs") >= 12, 120, "12 samples written", proc=proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        run_dir = only_run_dir(tmp_path / "runs")
        done = (run_dir / "samples.jsonl").read_bytes().count(b"\n")
        assert 12 <= done < len(ROWS)
        requests_before = server.requests_total
        resumed = subprocess.run(
            assay_cmd("run", "--resume", str(run_dir), "-q"), cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert resumed.returncode == 0, resumed.stderr
        assert server.requests_total - requests_before <= len(ROWS) - done + 1  # the rest (a torn line's again)
    counts = Counter(line["doc_id"] for line in sample_lines(run_dir))
    assert set(counts) == set(range(len(ROWS))) and set(counts.values()) == {1}
    assert _figures(run_dir) == _figures(only_run_dir(tmp_path / "whole"))


def test_the_response_cache_answers_a_second_run(tmp_path: Path) -> None:
    path = registry_copy("gsm8k", tmp_path, {"train": ROWS[:5], "test": ROWS[:12]})
    env = {**os.environ, "OPENAI_API_KEY": "EMPTY", "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
    with OpenAITestServer(chat_reply) as server:
        for out in ("first", "second"):
            proc = subprocess.run(_cmd(path, server, "-o", out, "--cache"), cwd=tmp_path, env=env, timeout=300)
            assert proc.returncode == 0
        assert server.requests_total == 12
    second = only_run_dir(tmp_path / "second")
    assert all(line["cache_hits"] == 1 for line in sample_lines(second))
    assert _figures(second) == _figures(only_run_dir(tmp_path / "first"))
