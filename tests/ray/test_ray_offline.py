"""Offline scoring on a real Ray cluster (head + worker node on 127.0.0.1): a predictions run and `assay score`
with --executor ray write the local executor's records and results, every sample exactly once, also when a
worker node is killed mid-score."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.e2e_support import assay_cmd, only_run_dir, sample_lines, write_task
from tests.ray.cluster import LocalCluster

pytest.importorskip("ray", reason="the Ray executor's tests need ray: pip install 'assay[ray]' (make test does)")

pytestmark = pytest.mark.timeout(300)

MISSING = {"q3", "q10"}  # no prediction: model errors, recorded as the local path records them
TIMINGS = ("started_at", "model_seconds", "eval_seconds")
SLOW = """
import time


def slow(actual, expected):
    time.sleep(0.002)
    return str(getattr(actual, "text", actual)).strip() == str(expected)
"""


def _predictions(root: Path, n: int) -> None:
    with open(root / "preds.jsonl", "w", encoding="utf-8") as fh:
        for i in range(n):
            if f"q{i}" not in MISSING:
                answer = str(2 * i + 1) if i % 5 else f"ungefähr {2 * i}"
                fh.write(json.dumps({"id": f"q{i}", "prediction": answer}, ensure_ascii=False) + "\n")


def _cli(
    root: Path, cluster: LocalCluster, *args: str, ray: bool = False, address: str | None = None
) -> subprocess.CompletedProcess[str]:
    where = address or cluster.address
    extra = ["--executor", "ray", "--ray-address", where, "--ray-workers", "2"] if ray else []
    env = {**cluster.env(), "ASSAY_CACHE_DIR": str(root / "cache")}
    out = subprocess.run(assay_cmd(*args, *extra, "-q"), cwd=root, env=env, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    return out


def _records(run_dir: Path, n: int) -> dict[str, dict[str, Any]]:
    """Every sample's record but its timings, checking each sample is there exactly once."""
    lines = sample_lines(run_dir)
    ids = [line["sample_id"] for line in lines]
    assert len(ids) == len(set(ids)), "a sample was written twice"
    assert sorted(ids) == sorted(f"q{i}" for i in range(n)), "a sample is missing"
    assert json.loads((run_dir / "run.json").read_text())["status"] == "finished"
    return {line["sample_id"]: {k: v for k, v in line.items() if k not in TIMINGS} for line in lines}


def _same_run(ray_dir: Path, local_dir: Path, n: int) -> None:
    assert _records(ray_dir, n) == _records(local_dir, n)
    ours = json.loads((ray_dir / "results.json").read_text())
    theirs = json.loads((local_dir / "results.json").read_text())
    assert ours["results"] == theirs["results"]


def _task(root: Path, n: int, evaluators: list[Any], name: str = "add.yaml") -> Path:
    """The test task (few-shot, so that workers render prompts) with ``evaluators``, as ``name``."""
    path = write_task(root, n, extra={"fewshot": {"n": 2}})
    config = yaml.safe_load(path.read_text())
    config["evaluators"] = evaluators
    (root / name).write_text(yaml.safe_dump(config, sort_keys=False))
    return root / name


def test_a_predictions_run_on_ray_writes_the_local_records(tmp_path: Path, cluster: LocalCluster) -> None:
    n = 3000
    task = _task(tmp_path, n, [{"name": "exact_match", "strip": True}, "token_f1"])
    _predictions(tmp_path, n)
    run = ("run", str(task), "--model", "predictions:preds.jsonl", "--bootstrap-iters", "200")
    _cli(tmp_path, cluster, *run, "-o", "ray", ray=True)
    _cli(tmp_path, cluster, *run, "-o", "local")
    ray_dir, local_dir = only_run_dir(tmp_path / "ray"), only_run_dir(tmp_path / "local")
    _same_run(ray_dir, local_dir, n)
    assert json.loads((ray_dir / "run.json").read_text())["config"]["executor"] == "ray"
    errors = [line["sample_id"] for line in sample_lines(ray_dir) if any(line["response_errors"])]
    assert sorted(errors) == sorted(MISSING)


def test_assay_score_on_ray_writes_the_local_records(tmp_path: Path, cluster: LocalCluster) -> None:
    n = 3000
    task = _task(tmp_path, n, [{"name": "exact_match", "strip": True}])
    _predictions(tmp_path, n)
    _cli(tmp_path, cluster, "run", str(task), "--model", "predictions:preds.jsonl", "-o", "runs")
    run_dir = only_run_dir(tmp_path / "runs")
    changed = _task(tmp_path, n, [{"name": "exact_match"}, "token_f1", {"name": "contains"}], "changed.yaml")
    score = ("score", str(run_dir), "--task", str(changed))
    _cli(tmp_path, cluster, *score, "-o", "ray", ray=True)
    _cli(tmp_path, cluster, *score, "-o", "local")
    ray_dir, local_dir = only_run_dir(tmp_path / "ray"), only_run_dir(tmp_path / "local")
    _same_run(ray_dir, local_dir, n)
    assert set(json.loads((ray_dir / "results.json").read_text())["results"]["add"]) >= {
        "exact_match,none",
        "token_f1,none",
        "contains,none",
    }

    _cli(tmp_path, cluster, "score", str(local_dir), "--in-place", ray=True)  # the same scores again, in place
    assert _records(local_dir, n) == _records(ray_dir, n)


def test_a_score_through_ray_client(tmp_path: Path, cluster: LocalCluster) -> None:
    """ray://host:port (Ray Client): the shards' records come back the same way. One client connection: with two
    in a row, the second's Ray Client server sometimes failed to start on this shared machine."""
    n = 300
    task = _task(tmp_path, n, [{"name": "exact_match", "strip": True}])
    _predictions(tmp_path, n)
    _cli(tmp_path, cluster, "run", str(task), "--model", "predictions:preds.jsonl", "-o", "local")
    local_dir = only_run_dir(tmp_path / "local")
    _cli(tmp_path, cluster, "score", str(local_dir), "-o", "scored", ray=True, address=cluster.client_address)
    assert _records(only_run_dir(tmp_path / "scored"), n) == _records(local_dir, n)


def test_worker_node_killed_mid_score_still_exactly_once(tmp_path: Path, cluster: LocalCluster) -> None:
    """A custom evaluator taking 2 ms a sample (a module in the driver's folder, which Ray puts on the workers'
    path): shards take about 2 s, so the node dies with shards in flight, which are scored again elsewhere."""
    n = 8192
    task = _task(tmp_path, n, [{"name": "exact_match", "strip": True}])
    _predictions(tmp_path, n)
    _cli(tmp_path, cluster, "run", str(task), "--model", "predictions:preds.jsonl", "-o", "runs")
    run_dir = only_run_dir(tmp_path / "runs")
    (tmp_path / "slow_eval.py").write_text(SLOW)
    changed = _task(tmp_path, n, [{"name": "custom", "fn": "slow_eval:slow"}], "slow.yaml")
    cmd = assay_cmd("score", str(run_dir), "--task", str(changed), "-o", "ray", "-q")
    cmd += ["--executor", "ray", "--ray-address", cluster.address, "--ray-workers", "2"]
    env = {**cluster.env(), "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_lines(tmp_path / "ray", 1024, proc)
        cluster.workers.pop().kill()  # the node and its worker actor vanish mid-shard
        _, stderr = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
        cluster.add_worker()  # for the tests that follow
    assert proc.returncode == 0, stderr
    assert "Ray worker was lost" in stderr  # a shard was cut short and sent again, not skipped
    records = _records(only_run_dir(tmp_path / "ray"), n)
    passed = sum(bool(r["filters"]["none"]["passed"]["custom"]) for r in records.values())
    assert passed == n - len(range(0, n, 5)) - len(MISSING - {f"q{i}" for i in range(0, n, 5)})


def _wait_lines(root: Path, n: int, proc: subprocess.Popen[str], timeout: float = 120) -> None:
    """Wait until the run folder under ``root`` has ``n`` records (the score is under way, not over)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        found = list(root.glob("*/samples.jsonl")) if root.exists() else []
        if found and found[0].read_bytes().count(b"\n") >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"the score did not write {n} samples in {timeout}s")


def test_a_predictions_run_on_ray_killed_then_resumed_has_every_sample_once(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    """SIGKILL of the driver mid-run (shards in flight on the workers), then `assay run --resume` (on Ray again:
    the executor and address are recorded): every sample once, and the results of an uninterrupted local run."""
    import signal

    n = 6000
    task = _task(tmp_path, n, [{"name": "custom", "fn": "slow_eval:slow"}])
    (tmp_path / "slow_eval.py").write_text(SLOW)
    _predictions(tmp_path, n)
    run = ("run", str(task), "--model", "predictions:preds.jsonl", "--bootstrap-iters", "200")
    cmd = assay_cmd(
        *run, "-o", "ray", "-q", "--executor", "ray", "--ray-address", cluster.address, "--ray-workers", "2"
    )
    env = {**cluster.env(), "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_lines(tmp_path / "ray", 1024, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    run_dir = only_run_dir(tmp_path / "ray")
    before = (run_dir / "samples.jsonl").read_bytes().count(b"\n")
    assert 1024 <= before < n
    out = _cli(tmp_path, cluster, "run", "--resume", str(run_dir))
    assert f"{before} already done" in out.stderr
    _cli(tmp_path, cluster, *run, "-o", "local")
    _same_run(run_dir, only_run_dir(tmp_path / "local"), n)


def test_score_workers_reserve_the_cpus_asked_for(tmp_path: Path, cluster: LocalCluster) -> None:
    """--ray-num-cpus is what each worker reserves: more than any live node has is an error before anything runs."""
    n = 20
    task = _task(tmp_path, n, [{"name": "exact_match", "strip": True}])
    _predictions(tmp_path, n)
    _cli(tmp_path, cluster, "run", str(task), "--model", "predictions:preds.jsonl", "-o", "runs")
    cmd = assay_cmd("score", str(only_run_dir(tmp_path / "runs")), "-o", "scored", "-q", "--executor", "ray")
    cmd += ["--ray-address", cluster.address, "--ray-num-cpus", "64"]
    out = subprocess.run(cmd, cwd=tmp_path, env=cluster.env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    wanted = (
        "each Ray worker asks for 64 CPU(s) (--ray-num-cpus or a task's resources:) but no live node of the cluster"
    )
    assert wanted in out.stderr
    assert not (tmp_path / "scored").exists() or not any((tmp_path / "scored").iterdir())  # no half-written folder
