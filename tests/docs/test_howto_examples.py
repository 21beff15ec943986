"""Every how-to page's example runs as the page shows it (the pages include these files with --8<--), so an example
cannot rot: each runs in a fresh process from an empty working directory, offline, and prints what the page says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _run(args: list[str], cwd: Path, timeout: float = 110, **env: str) -> str:
    """Run ``python ARGS`` in ``cwd`` (nothing downloaded) and return its stdout; fail with its output if it fails."""
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "OMP_NUM_THREADS": "1", **env}
    done = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_a_task_in_python(tmp_path: Path) -> None:
    out = _run([str(EXAMPLES / "python_task" / "capitals.py")], tmp_path)
    assert "ke 'Kenya' -> ['Nairobi', 'Nairobi City']" in out
    assert "exact_match: 0.750 (95% CI 0.301-0.954, n=4)" in out
    assert len(list((tmp_path / "runs").glob("capitals-*/results.json"))) == 1


def test_reading_and_comparing_runs(tmp_path: Path) -> None:
    out = _run([str(EXAMPLES / "run_object" / "read_runs.py")], tmp_path)
    assert "demo-agent ['qa_tools'] 21 samples" in out
    assert "exact_match: 0.762" in out
    assert "failed cap-09: 'I could not find the capital of Peru.' expected 'Lima'" in out
    assert "qa_tools/exact_match,none        A 0.762  B 0.048" in out
    assert "significantly worse: ['qa_tools/exact_match,none'" in out


def test_a_custom_evaluator_in_python_and_yaml(tmp_path: Path) -> None:
    out = _run([str(EXAMPLES / "custom_evaluator" / "run_it.py")], tmp_path)
    assert "reason='the output has 6 words, more than 3'" in out
    assert "error='concise_answer judges text, got int'" in out
    assert "ConfigError: concise_answer: option 'max_words': Input should be greater than 0 (got 0)" in out
    assert "{'concise_answer': 0.75, 'concise6': 1.0}" in out
    assert "{'concise_answer': 0.81, 'exact_match': 0.762}" in out


def test_a_custom_evaluator_through_its_entry_point(tmp_path: Path) -> None:
    """``assay run`` finds the evaluator by the entry point an installed package declares (a distribution's
    metadata on the path, as `pip install` writes it), with nothing imported by hand."""
    site = tmp_path / "site"
    dist = site / "concise_evals-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: concise-evals\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[assay.evaluators]\nconcise_answer = concise:ConciseAnswer\n")
    path = os.pathsep.join([str(site), str(EXAMPLES / "custom_evaluator")])
    shown = _run(["-m", "assay", "evaluators", "show", "concise_answer"], tmp_path, PYTHONPATH=path)
    assert "the most words an output may have" in shown
    task = EXAMPLES / "custom_evaluator" / "task.yaml"
    out = _run(["-m", "assay", "run", str(task), "--output", "runs", "--format", "markdown"], tmp_path, PYTHONPATH=path)
    assert "|concise_answer|↑|0.8095|" in out


def test_multiple_choice_and_perplexity_on_a_tiny_model(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    out = _run([str(EXAMPLES / "loglikelihood" / "run_tiny.py")], tmp_path, timeout=300)
    lines = [line.split() for line in out.splitlines()]
    metrics = {(line[0], line[1]): line[3] for line in lines if len(line) == 5}
    assert metrics == {
        ("science_mc", "acc"): "wilson",
        ("science_mc", "acc_norm"): "wilson",
        ("pages_ppl", "word_perplexity"): "corpus_bootstrap",
        ("pages_ppl", "byte_perplexity"): "corpus_bootstrap",
        ("pages_ppl", "bits_per_byte"): "corpus_bootstrap",
    }
    assert (tmp_path / "build" / "tiny-lm" / "config.json").is_file()
