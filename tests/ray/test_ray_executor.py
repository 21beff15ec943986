"""The Ray executor against a real cluster on 127.0.0.1 (a head and a worker node, separate processes): faults,
a worker node killed mid-run, the driver SIGKILLed then resumed; every sample exactly once, results as local."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from assay.testing.server import FaultPlan, OpenAITestServer
from tests.e2e.e2e_support import arithmetic_reply, assay_cmd, only_run_dir, sample_lines, write_task
from tests.ray.cluster import LocalCluster

pytest.importorskip("ray", reason="the Ray executor's tests need ray: pip install 'assay[ray]' (make test does)")

pytestmark = pytest.mark.timeout(300)


def _cmd(task: Path | None, server: OpenAITestServer, cluster: LocalCluster | None, *extra: str) -> list[str]:
    args = ["run"]
    if task is not None:
        args += [str(task), "--model", "openai:assay-test", "--base-url", server.base_url, "--bootstrap-iters", "200"]
    if cluster is not None:
        args += ["--executor", "ray", "--ray-address", cluster.address]
    if task is not None:
        args += ["-o", "runs"]
    return assay_cmd(*args, "-q", "--no-cache", *extra)


def _env(cwd: Path, cluster: LocalCluster | None) -> dict[str, str]:
    base = cluster.env() if cluster is not None else dict(os.environ)
    return {**base, "OPENAI_API_KEY": "test-key", "ASSAY_CACHE_DIR": str(cwd / "cache"), "COLUMNS": "200"}


def _run(cmd: list[str], cwd: Path, cluster: LocalCluster | None) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(cmd, cwd=cwd, env=_env(cwd, cluster), capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    return out


def _start(cmd: list[str], cwd: Path, cluster: LocalCluster) -> subprocess.Popen[str]:
    return subprocess.Popen(
        cmd, cwd=cwd, env=_env(cwd, cluster), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _wait_lines(root: Path, n: int, proc: subprocess.Popen[str], timeout: float = 120) -> Path:
    """The run folder, once its samples.jsonl has at least ``n`` lines (the run is under way)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        dirs = [p for p in root.iterdir() if p.is_dir()] if root.exists() else []
        samples = dirs[0] / "samples.jsonl" if dirs else None
        if samples is not None and samples.exists() and samples.read_bytes().count(b"\n") >= n:
            return dirs[0]
        time.sleep(0.05)
    raise AssertionError(f"the run did not write {n} samples in {timeout}s")


def _exactly_once(run_dir: Path, n: int) -> list[dict[str, Any]]:
    lines = sample_lines(run_dir)
    ids = [line["sample_id"] for line in lines]
    assert len(ids) == len(set(ids)), "a sample was written twice"
    assert sorted(ids) == sorted(f"q{i}" for i in range(n)), "a sample is missing"
    assert json.loads((run_dir / "run.json").read_text())["status"] == "finished"
    return lines


def _verdicts(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """Each sample's answer and verdicts (what must not depend on who ran it; timings may)."""
    return {
        line["sample_id"]: (
            [r["text"] for r in line["responses"]],
            line["response_errors"],
            {f: (rec["filtered"], rec["verdicts"], rec["scores"]) for f, rec in line["filters"].items()},
        )
        for line in lines
    }


def test_faults_every_sample_exactly_once_and_results_equal_local(tmp_path: Path, cluster: LocalCluster) -> None:
    n = 80
    faults = FaultPlan(rate_500=0.1, rate_429=0.05, rate_drop=0.05, retry_after_s=0.01)
    task = write_task(tmp_path, n)
    with OpenAITestServer(arithmetic_reply, faults=faults, seed=3) as server:
        out = _run(_cmd(task, server, cluster, "--concurrency", "16", "--max-attempts", "10"), tmp_path, cluster)
        assert server.status_counts.get(500, 0) > 0, "the faults were not injected"
    ray_dir = only_run_dir(tmp_path / "runs")
    ray_lines = _exactly_once(ray_dir, n)
    assert all(not any(line["response_errors"]) for line in ray_lines), out.stderr  # every fault was retried
    assert json.loads((ray_dir / "run.json").read_text())["config"]["executor"] == "ray"

    local_root = tmp_path / "local"
    local_root.mkdir()
    task_local = write_task(local_root, n)
    with OpenAITestServer(arithmetic_reply) as server:
        _run(_cmd(task_local, server, None, "--concurrency", "8"), local_root, None)
    local_dir = only_run_dir(local_root / "runs")
    assert _verdicts(ray_lines) == _verdicts(_exactly_once(local_dir, n))
    ray_results = json.loads((ray_dir / "results.json").read_text())
    local_results = json.loads((local_dir / "results.json").read_text())
    assert ray_results["results"] == local_results["results"]
    assert ray_results["results"]["add"]["exact_match,none"] == pytest.approx(1 - len(range(0, n, 7)) / n)


class _InFlight:
    """A reply that takes 50 ms and records the most requests the server held at once."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0

    async def __call__(self, request: dict[str, Any]) -> str:
        self.now += 1
        self.most = max(self.most, self.now)
        try:
            await asyncio.sleep(0.05)
        finally:
            self.now -= 1
        return arithmetic_reply(request)


def test_concurrency_bounds_the_whole_cluster_not_each_worker(tmp_path: Path, cluster: LocalCluster) -> None:
    task = write_task(tmp_path, 60)
    reply = _InFlight()
    with OpenAITestServer(reply) as server:
        cmd = _cmd(task, server, cluster, "--concurrency", "4", "--ray-workers", "2", "--ray-shard-size", "5")
        _run(cmd, tmp_path, cluster)
    run_dir = only_run_dir(tmp_path / "runs")
    _exactly_once(run_dir, 60)
    assert 3 <= reply.most <= 4  # 2 workers × 2, never 2 workers × 4
    assert json.loads((run_dir / "run.json").read_text())["config"]["ray"]["shard_size"] == 5


def test_worker_node_killed_mid_run_still_exactly_once(tmp_path: Path, cluster: LocalCluster) -> None:
    n = 240
    task = write_task(tmp_path, n)
    with OpenAITestServer(arithmetic_reply, latency_s=0.1) as server:
        cmd = _cmd(task, server, cluster, "--concurrency", "4", "--ray-workers", "2")
        proc = _start(cmd, tmp_path, cluster)
        try:
            _wait_lines(tmp_path / "runs", 30, proc)
            cluster.workers.pop().kill()  # the node and its worker actor vanish mid-shard
            _, stderr = proc.communicate(timeout=240)
        finally:
            if proc.poll() is None:
                proc.kill()
            cluster.add_worker()  # for the tests that follow
    assert proc.returncode == 0, stderr
    assert "Ray worker was lost" in stderr  # a shard was cut short and sent again, not skipped
    _exactly_once(only_run_dir(tmp_path / "runs"), n)


def test_driver_sigkill_then_resume_exactly_once(tmp_path: Path, cluster: LocalCluster) -> None:
    n = 240
    task = write_task(tmp_path, n)
    with OpenAITestServer(arithmetic_reply, latency_s=0.1) as server:
        proc = _start(_cmd(task, server, cluster, "--concurrency", "4"), tmp_path, cluster)
        try:
            run_dir = _wait_lines(tmp_path / "runs", 30, proc)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        before = len(sample_lines(run_dir))
        assert 30 <= before < n
        out = _run(_cmd(None, server, None, "--resume", str(run_dir)), tmp_path, cluster)  # recorded: ray, address
    assert f"{before} already done" in out.stderr
    lines = _exactly_once(run_dir, n)
    assert sum(1 for line in lines if line["filters"]["none"]["passed"]["exact_match"]) == n - len(range(0, n, 7))


def test_a_task_asking_for_gpus_the_cluster_lacks_is_a_clear_error(tmp_path: Path, cluster: LocalCluster) -> None:
    task = write_task(tmp_path, 3, extra={"resources": {"num_gpus": 1}})
    with OpenAITestServer(arithmetic_reply) as server:
        cmd = _cmd(task, server, cluster)
        out = subprocess.run(cmd, cwd=tmp_path, env=_env(tmp_path, cluster), capture_output=True, text=True)
    assert out.returncode == 2, out.stderr
    wanted = (
        "each Ray worker asks for 1 GPU(s) (--ray-num-gpus or a task's resources:) but no live node of the cluster "
        "has that many (the most one has: 0)"
    )
    assert wanted in out.stderr


def test_a_run_through_ray_client_finishes_exactly_once(tmp_path: Path, cluster: LocalCluster) -> None:
    """ray://host:port (Ray Client) cannot stream a shard's records: they come back when the shard ends."""
    n = 30
    task = write_task(tmp_path, n)
    with OpenAITestServer(arithmetic_reply) as server:
        cmd = _cmd(task, server, None, "--executor", "ray", "--ray-address", cluster.client_address)
        _run(cmd, tmp_path, cluster)
    _exactly_once(only_run_dir(tmp_path / "runs"), n)


def test_evaluator_errors_count_against_the_error_limit_on_ray(tmp_path: Path, cluster: LocalCluster) -> None:
    """The driver counts error verdicts as the local loop does: past --max-error-rate the run exits 1."""
    n = 30
    task = write_task(tmp_path, n, extra={"evaluators": [{"name": "numeric", "expected": "doc.alt"}]})
    data = tmp_path / "add.jsonl"
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    for row in rows:  # only the first row's expected value is a number: numeric errs on every other
        row["alt"] = row["answer"] if row is rows[0] else "not a number"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with OpenAITestServer(arithmetic_reply) as server:
        cmd = _cmd(task, server, cluster, "--max-error-rate", "0.5")
        out = subprocess.run(cmd, cwd=tmp_path, env=_env(tmp_path, cluster), capture_output=True, text=True)
    assert out.returncode == 1, out.stderr
    assert re.search(r"(\d+) of \d+ samples failed \(0 model errors, \1 evaluator errors\)", out.stderr), out.stderr
    assert "above the allowed error rate 50%" in out.stderr
    ids = [line["sample_id"] for line in sample_lines(only_run_dir(tmp_path / "runs"))]
    assert len(ids) == len(set(ids)) >= 20  # stopped once 20 samples were in, none written twice
