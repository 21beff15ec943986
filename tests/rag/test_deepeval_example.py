"""DeepEval's FaithfulnessMetric example runs as an assay task (YAML + JSONL, the `assay run` CLI) with its figure."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from tests.e2e.e2e_support import only_run_dir, run_cli, sample_lines
from tests.evaluators.judge.judge_support import blocks
from tests.rag.rag_support import ScriptedJudge, purpose

FIXTURE = Path(__file__).parent / "fixtures" / "deepeval_faithfulness"
OUTPUT = "We offer a 30-day full refund at no extra cost."
CONTEXT = "All customers are eligible for a 30 day full refund at no extra cost."
CLAIM = "A 30-day full refund is offered at no extra cost."


def test_deepeval_faithfulness_example_scores_one(tmp_path: Path, serve) -> None:
    server = serve(ScriptedJudge(extracted={OUTPUT: [CLAIM]}, verdicts={CLAIM: "yes"}))
    shutil.copy(FIXTURE / "test_cases.jsonl", tmp_path)
    task = yaml.safe_load((FIXTURE / "task.yaml").read_text())
    task["evaluators"][0]["model"]["base_url"] = server.base_url  # the one change: a local judge instead of gpt-4.1
    (tmp_path / "task.yaml").write_text(yaml.safe_dump(task))
    proc = run_cli("run", "task.yaml", "-o", "runs", "--format", "markdown", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_dir = only_run_dir(tmp_path / "runs")
    results = json.loads((run_dir / "results.json").read_text())
    assert results["results"]["deepeval_faithfulness"]["faithfulness,none"] == 1.0
    (line,) = sample_lines(run_dir)
    verdict = line["filters"]["none"]["verdicts"]["faithfulness"][0]
    assert verdict["passed"] is True and verdict["score"] == 1.0
    assert verdict["details"]["claims"] == [
        {"claim": CLAIM, "verdict": "yes", "supported": True, "reason": f"because {CLAIM[:20]}"}
    ]
    verify = next(r for r in server.requests if purpose(r) == "verify_claims")
    assert blocks(verify)["context 1"] == CONTEXT and blocks(verify)["question"] == "What if these shoes don't fit?"
