"""`assay run --model predictions:FILE` as a user runs it: killed mid-run (SIGKILL, perhaps mid-chunk), resumed,
every sample exactly once and the same results as an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.e2e_support import assay_cmd, only_run_dir, run_cli, sample_lines, write_task

N = 20_000  # three chunks of 8,192: the kill lands after the first is written


def write_predictions(tmp_path: Path, n: int) -> None:
    with open(tmp_path / "preds.jsonl", "w", encoding="utf-8") as fh:
        for i in range(n):
            answer = str(2 * i + 1) if i % 5 else f"ungefähr {2 * i}"
            fh.write(json.dumps({"id": f"q{i}", "prediction": answer}, ensure_ascii=False) + "\n")


@pytest.mark.timeout(900)  # three runs of 20,000 samples, on a shared machine
def test_a_killed_offline_run_resumes_with_every_sample_once(tmp_path: Path) -> None:
    task = write_task(tmp_path, N)
    write_predictions(tmp_path, N)
    args = ("run", str(task), "--model", "predictions:preds.jsonl", "-q")
    env = {**os.environ, "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen(assay_cmd(*args, "-o", "killed"), cwd=tmp_path, env=env, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    samples = None
    while time.monotonic() < deadline and proc.poll() is None:
        found = list((tmp_path / "killed").glob("*/samples.jsonl"))
        if found and found[0].stat().st_size > 0:
            samples = found[0]
            break
        time.sleep(0.005)
    assert proc.poll() is None, "the run finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert samples is not None
    run_dir = samples.parent
    written = samples.read_bytes().count(b"\n")  # complete lines; a chunk cut mid-write leaves a torn tail
    assert 0 < written < N

    resumed = run_cli("run", "--resume", str(run_dir), "-q", cwd=tmp_path, timeout=600)
    assert resumed.returncode == 0, resumed.stderr

    lines = sample_lines(run_dir)
    assert len(lines) == N and len({line["sample_id"] for line in lines}) == N
    whole = run_cli(*args, "-o", "whole", cwd=tmp_path, timeout=600)
    assert whole.returncode == 0, whole.stderr
    ours = json.loads((run_dir / "results.json").read_text())["results"]
    theirs = json.loads((only_run_dir(tmp_path / "whole") / "results.json").read_text())["results"]
    assert ours == theirs and ours["add"]["exact_match,none"] == 0.8
