"""Helpers for whole runs: a real OpenAI-compatible server on 127.0.0.1 and the `assay` CLI as a process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml


def arithmetic_reply(request: dict[str, Any]) -> str:
    """Answers 'What is A + B?' correctly, except for multiples of 7 which it gets wrong (deterministic)."""
    text = request["messages"][-1]["content"]
    words = text.replace("?", "").split()
    a, b = int(words[-3]), int(words[-1])
    return str(a + b + (1 if a % 7 == 0 else 0))


def write_task(tmp_path: Path, n: int, *, name: str = "add", extra: dict[str, Any] | None = None) -> Path:
    """A task file over a JSONL dataset of n addition questions."""
    data = tmp_path / f"{name}.jsonl"
    with open(data, "w") as fh:
        for i in range(n):
            fh.write(
                json.dumps({"id": f"q{i}", "question": f"What is {i} + {i + 1}?", "answer": str(2 * i + 1)}) + "\n"
            )
    task: dict[str, Any] = {
        "name": name,
        "dataset": {"path": data.name},
        "fields": {"id": "id", "input": "question", "target": "answer"},
        "template": "{{ question }}",
        "evaluators": [{"name": "exact_match", "strip": True}],
    }
    task.update(extra or {})
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(task, sort_keys=False))
    return path


def assay_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "assay", *args]


def run_cli(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASSAY_CACHE_DIR": str(cwd / "cache"), "COLUMNS": "200"}
    return subprocess.run(assay_cmd(*args), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def sample_lines(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines() if line.strip()]


def only_run_dir(root: Path) -> Path:
    dirs = [p for p in root.iterdir() if p.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]
