"""Agent trajectories on a real Ray cluster: ``--executor ray`` runs the tool loop on the workers unchanged, so
every sample calls its Python tool, answers with the tool's result and keeps its transcript, exactly once and
with the records the local executor writes."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from assay.testing.server import OpenAITestServer, tool_then_answer
from tests.e2e.e2e_support import assay_cmd, only_run_dir, sample_lines, write_task
from tests.ray.cluster import LocalCluster

pytest.importorskip("ray", reason="the Ray executor's tests need ray: pip install 'assay[ray]' (make test does)")

pytestmark = pytest.mark.timeout(300)

TOOLS = '''
def add(x: int, y: int) -> int:
    """Add two integers.

    Args:
        x: The first.
        y: The second.
    """
    return x + y
'''
SUM = re.compile(r"(\d+) \+ (\d+)")
TIMINGS = ("started_at", "model_seconds", "eval_seconds", "latency_s", "duration_s")


def _calls(user: str) -> list[dict[str, Any]]:
    return [{"name": "add", "arguments": {"x": int(a), "y": int(b)}} for a, b in SUM.findall(user)]


def _answer(user: str, results: list[str]) -> str:
    return " ".join(results)  # only the tool's output: a tool that did not run fails the sample


def _run(root: Path, server: OpenAITestServer, cluster: LocalCluster, *extra: str) -> Path:
    root.mkdir(exist_ok=True)
    (root / "sum_tools.py").write_text(TOOLS)  # in the driver's folder, which Ray puts on the workers' path
    task = write_task(root, 40, extra={"tools": [{"python": "sum_tools:add"}], "agent": {"max_turns": 3}})
    cmd = assay_cmd("run", str(task), "--model", "openai:assay-test", "--base-url", server.base_url, "-o", "runs")
    cmd += ["-q", "--no-cache", "--bootstrap-iters", "200", *extra]
    env = {**cluster.env(), "OPENAI_API_KEY": "test-key", "ASSAY_CACHE_DIR": str(root / "cache")}
    out = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    return only_run_dir(root / "runs")


def _strip(value: Any) -> Any:
    """A record without its timings (what may differ between executors)."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def test_ray_runs_agent_trajectories_as_the_local_executor_does(tmp_path: Path, cluster: LocalCluster) -> None:
    with OpenAITestServer(tool_then_answer(_calls, _answer)) as server:
        ray_dir = _run(tmp_path / "ray", server, cluster, "--executor", "ray", "--ray-address", cluster.address)
        assert server.requests_total == 80  # two model calls a sample: the tool call, then the answer
    with OpenAITestServer(tool_then_answer(_calls, _answer)) as server:
        local_dir = _run(tmp_path / "local", server, cluster)
    assert json.loads((ray_dir / "run.json").read_text())["config"]["executor"] == "ray"
    ray_lines = {line["sample_id"]: line for line in sample_lines(ray_dir)}
    assert len(ray_lines) == len(sample_lines(ray_dir)) == 40  # every trajectory exactly once
    for line in ray_lines.values():
        response = line["responses"][0]
        assert [m["role"] for m in response["transcript"]] == ["user", "assistant", "tool", "assistant"]
        assert response["stop_reason"] == "answer"
        assert line["filters"]["none"]["passed"]["exact_match"] is True  # the tool's result, so it ran on a worker
    local_lines = {line["sample_id"]: line for line in sample_lines(local_dir)}
    assert {k: _strip(v) for k, v in ray_lines.items()} == {k: _strip(v) for k, v in local_lines.items()}
    ray_results = json.loads((ray_dir / "results.json").read_text())
    local_results = json.loads((local_dir / "results.json").read_text())
    assert ray_results["results"] == local_results["results"]
    assert ray_results["results"]["add"]["exact_match,none"] == 1.0
