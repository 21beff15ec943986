"""A second --model used to replace the first silently: both models must run, each in its own run folder."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from assay.testing.server import OpenAITestServer
from tests.e2e.e2e_support import run_cli
from tests.matrix.matrix_support import models, write_task


def test_two_models_both_run(tmp_path: Path, server: OpenAITestServer) -> None:
    task = write_task(tmp_path, variants=False)
    proc = run_cli("run", str(task), *models(server.base_url), "-o", "runs", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    asked = Counter(body["model"] for body in server.requests)
    assert asked == {"alpha": 10, "beta": 10}  # neither model is dropped
    (matrix_dir,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    index = json.loads((matrix_dir / "matrix.json").read_text())
    assert [(c["name"], c["model"], c["variant"]) for c in index["cells"]] == [
        ("alpha", "alpha", None),
        ("beta", "beta", None),
    ]
    for cell in index["cells"]:
        manifest = json.loads((matrix_dir / cell["run_dir"] / "run.json").read_text())
        assert manifest["name"] == cell["name"] and manifest["status"] == "finished"
        assert manifest["model"]["model"] == cell["model"]
