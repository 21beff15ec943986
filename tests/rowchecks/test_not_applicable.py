"""A metric a row gives nothing to check is *not applicable* there: counted apart, never an error, never in the
metric's denominator, shown as n/a; the per-sample (server) and batch (predictions) paths agree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from assay.testing.server import OpenAITestServer
from tests.e2e.e2e_support import only_run_dir, sample_lines
from tests.support import run_cli_in_process

N = 10


def reply(request: dict[str, Any]) -> str:
    """Answers q0..q9 with their number; wrong for q1 (odd rows lack a target, so that is never checked) and q4."""
    i = int(request["messages"][-1]["content"].split()[-1])
    return "wrong" if i == 4 else str(i)


def write(tmp_path: Path) -> Path:
    with open(tmp_path / "rows.jsonl", "w") as fh:
        for i in range(N):
            row: dict[str, Any] = {"id": f"q{i}", "question": f"Say {i}"}
            if i % 2 == 0:  # half the rows lack a target
                row["target"] = str(i)
            fh.write(json.dumps(row) + "\n")
    with open(tmp_path / "preds.jsonl", "w") as fh:
        for i in range(N):
            fh.write(json.dumps({"id": f"q{i}", "prediction": "wrong" if i == 4 else str(i)}) + "\n")
    task = {
        "name": "half",
        "dataset": {"path": "rows.jsonl"},
        "template": "{{ question }}",
        "evaluators": [{"name": "exact_match", "strip": True}, {"name": "contains", "substrings": ["wrong"]}],
    }
    path = tmp_path / "half.yaml"
    path.write_text(yaml.safe_dump(task, sort_keys=False))
    return path


def figures(run_dir: Path, metric: str) -> dict[str, Any]:
    results = json.loads((run_dir / "results.json").read_text())
    return results["assay"]["tasks"]["half"]["filters"]["none"][metric]


def check(run_dir: Path, stdout: str) -> None:
    em = figures(run_dir, "exact_match")
    # over the five rows with a target (q0 q2 q4 q6 q8), q4 wrong: 4/5, not 4/10 nor five errors
    assert em["mean"] == 0.8
    assert (em["n_scored"], em["n_errored"], em["n_not_applicable"], em["n_total"]) == (5, 0, 5, N)
    assert em["n_errored_verdicts"] == 0
    # contains has fixed substrings: it needs no target and judges every row
    co = figures(run_dir, "contains")
    assert (co["n_scored"], co.get("n_not_applicable", 0), co["mean"]) == (N, 0, 0.1)
    records = {r["sample_id"]: r for r in sample_lines(run_dir)}
    odd = records["q1"]["filters"]["none"]
    assert odd["verdicts"]["exact_match"] == [] and odd["scores"]["exact_match"] is None
    assert "5/5 (5 n/a)" in stdout


def test_rows_without_a_target_are_not_applicable_on_the_per_sample_path(tmp_path: Path) -> None:
    task = write(tmp_path)
    with OpenAITestServer(reply) as server:
        proc = run_cli_in_process(
            "run", str(task), "--model", "openai:assay-test", "--base-url", server.base_url, "-o", "out", cwd=tmp_path
        )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    check(only_run_dir(tmp_path / "out"), proc.stdout)


def test_rows_without_a_target_are_not_applicable_on_the_batch_path(tmp_path: Path) -> None:
    task = write(tmp_path)
    proc = run_cli_in_process("run", str(task), "--model", "predictions:preds.jsonl", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    check(only_run_dir(tmp_path / "out"), proc.stdout)


def test_a_missing_expected_field_is_not_applicable_not_an_error(tmp_path: Path) -> None:
    task = write(tmp_path)
    config = yaml.safe_load(task.read_text())
    config["evaluators"] = [{"name": "exact_match", "strip": True, "expected": "doc.target"}]
    task.write_text(yaml.safe_dump(config, sort_keys=False))
    proc = run_cli_in_process("run", str(task), "--model", "predictions:preds.jsonl", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    em = figures(only_run_dir(tmp_path / "out"), "exact_match")
    assert (em["mean"], em["n_scored"], em["n_errored"], em["n_not_applicable"]) == (0.8, 5, 0, 5)
