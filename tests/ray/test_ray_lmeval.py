"""An lm-eval task on a real Ray cluster: the workers rebuild lm-eval's task from the settings run.json records and
score each document with its filters and process_results; every document once, records and figures equal to the
local executor's."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from assay.testing.server import OpenAITestServer
from tests.e2e.e2e_support import assay_cmd, only_run_dir, sample_lines
from tests.importers.lmeval.parity import registry_copy
from tests.importers.lmeval.sweep.test_generate_core import ROWS, chat_reply
from tests.ray.cluster import LocalCluster

pytest.importorskip("ray", reason="the Ray executor's tests need ray: pip install 'assay[ray]' (make test does)")
pytest.importorskip("lm_eval", reason="lm-eval is not installed")

pytestmark = pytest.mark.timeout(300)
TIMINGS = ("started_at", "model_seconds", "eval_seconds", "latency_s", "duration_s")


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _run(root: Path, task: Path, server: OpenAITestServer, cluster: LocalCluster, *extra: str) -> Path:
    cmd = assay_cmd("run", str(task), "-m", "openai:test-model", "--base-url", server.base_url, "-o", str(root))
    cmd += ["-q", "--no-cache", "--num-fewshot", "2", "--bootstrap-iters", "200", *extra]
    env = {**cluster.env(), "OPENAI_API_KEY": "EMPTY", "ASSAY_CACHE_DIR": str(root / "cache")}
    out = subprocess.run(cmd, cwd=task.parent, env=env, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    return only_run_dir(root)


def test_ray_scores_lm_eval_documents_as_the_local_executor_does(tmp_path: Path, cluster: LocalCluster) -> None:
    task = registry_copy("gsm8k", tmp_path, {"train": ROWS, "test": ROWS})
    with OpenAITestServer(chat_reply) as server:
        ray_dir = _run(tmp_path / "ray", task, server, cluster, "--executor", "ray", "--ray-address", cluster.address)
        local_dir = _run(tmp_path / "local", task, server, cluster)
    assert json.loads((ray_dir / "run.json").read_text())["config"]["executor"] == "ray"
    ray_lines = {line["doc_id"]: line for line in sample_lines(ray_dir)}
    assert len(ray_lines) == len(sample_lines(ray_dir)) == len(ROWS)
    local_lines = {line["doc_id"]: line for line in sample_lines(local_dir)}
    assert {k: _strip(v) for k, v in ray_lines.items()} == {k: _strip(v) for k, v in local_lines.items()}
    ours = json.loads((ray_dir / "results.json").read_text())["results"]["gsm8k"]
    assert ours == json.loads((local_dir / "results.json").read_text())["results"]["gsm8k"]
    assert ours["exact_match,strict-match"] < ours["exact_match,flexible-extract"]  # gsm8k's own filters ran
