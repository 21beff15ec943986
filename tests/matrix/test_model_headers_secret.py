"""A model's ``headers:`` in a task's ``models:`` list are credentials: no file a matrix run writes holds a header
value, whether the model spec appears in ``run.json``, ``results.json``, ``matrix.json`` or anywhere else."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml

from assay.testing.server import OpenAITestServer
from tests.e2e.e2e_support import assay_cmd
from tests.matrix.matrix_support import write_task

SECRET = "hdr-value-5f2c9a7e"


def test_task_model_headers_are_never_written(tmp_path: Path, server: OpenAITestServer) -> None:
    task = write_task(tmp_path, variants=False)
    config = yaml.safe_load(task.read_text())
    config["models"] = {
        name: {
            "provider": "openai",
            "model": name,
            "base_url": server.base_url,
            "headers": {"X-Custom-Auth": f"{SECRET}-{name}", "X-Team": f"{SECRET}-team"},
        }
        for name in ("alpha", "beta")
    }
    task.write_text(yaml.safe_dump(config, sort_keys=False))
    env = {**os.environ, "OPENAI_API_KEY": "EMPTY"}
    proc = subprocess.run(assay_cmd("run", str(task), "-o", "runs", "-q"), cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert SECRET not in proc.stdout + proc.stderr
    written = [p for p in (tmp_path / "runs").rglob("*") if p.is_file()]
    assert any(p.name == "run.json" for p in written) and any(p.name == "results.json" for p in written)
    leaks = [str(p.relative_to(tmp_path)) for p in written if SECRET.encode() in p.read_bytes()]
    assert leaks == []
    assert server.requests  # the cells did call the models
