"""The pytest plugin in real pytest sessions (subprocesses): readable failures, run folders, JUnit, -k, -x,
pytest-asyncio and pytest-xdist, and the offline example against the bundled agent."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from assay.testing import EvalAssertionError, assert_eval

REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "examples" / "qa_tools" / "task.yaml"
EXAMPLE = REPO / "examples" / "pytest_demo"


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "test_eval.py"
    path.write_text(
        "import pytest\nfrom assay.demo.agent import answer\nfrom assay.testing import assert_eval, aassert_eval\n"
        f"TASK = {str(TASK)!r}\n" + body
    )
    return path


def test_a_failing_evaluation_explains_itself_and_keeps_its_run_folder(tmp_path: Path) -> None:
    _write(tmp_path, "def test_strict():\n    assert_eval(TASK, answer, min_score={'exact_match': 0.9})\n")
    proc = _pytest(tmp_path, "--junitxml", "junit.xml", "--assay-runs", "kept")
    assert proc.returncode == 1, proc.stdout
    out = proc.stdout
    assert "qa_tools: exact_match = 0.762 < 0.9" in out
    assert "95% CI [" in out and "95% CI [0.549, 0.894] (wilson); n=21 scored, 0 errored" in out
    assert "sample 'cap-09'" in out and "reason: output 'I could not find the capital of Peru.'" in out
    assert "feedback: Answer with exactly 'Lima'" in out
    run_line = next(line for line in out.splitlines() if "run folder: " in line)
    run_dir = Path(run_line.split("run folder: ", 1)[1].strip())
    assert run_dir.parent == tmp_path / "kept" and (run_dir / "results.json").exists()
    props = [p.attrib for p in ET.parse(tmp_path / "junit.xml").iter("property")]
    assert props == [{"name": "assay_run", "value": str(run_dir)}]


def test_assert_eval_in_process_returns_the_run_or_raises(tmp_path: Path) -> None:
    from assay.demo.agent import answer

    run = assert_eval(TASK, answer, min_score={"exact_match": 0.7}, output_dir=tmp_path)
    assert run.path.parent == tmp_path
    with pytest.raises(EvalAssertionError) as info:
        assert_eval(TASK, answer, min_score={"exact_match": 0.7}, use="ci_low", output_dir=tmp_path)
    assert "exact_match (CI lower bound) = 0.549 < 0.7" in str(info.value) and info.value.run_dir is not None
    with pytest.raises(EvalAssertionError, match="did not measure"):
        assert_eval(TASK, answer, min_score={"bleu": 0.1}, output_dir=tmp_path)
    # a lower-is-better metric takes min_score as a maximum
    cases = [("What is 2 ** 3?", "8"), ("What is the capital of Peru?", "Lima")]
    with pytest.raises(EvalAssertionError, match=r"(?s)cases: ter = 4\.000 > 0\.2 .*8 edits for 1 reference words"):
        assert_eval(cases, answer, evaluators=["ter"], min_score={"ter": 0.2}, output_dir=tmp_path)


def test_samples_marker_with_k_and_x(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "@pytest.mark.assay_samples(TASK)\n"
        "def test_each(assay_case):\n    assay_case.check(answer(assay_case.request()))\n",
    )
    proc = _pytest(tmp_path, "-q", "-k", "cap-01 or cap-09")
    assert proc.returncode == 1 and "1 failed, 1 passed, 19 deselected" in proc.stdout, proc.stdout
    assert "sample 'cap-09' of task 'qa_tools' failed" in proc.stdout
    assert "output I could not find the capital of Peru. (tool calls: lookup_capital)  expected Lima" in proc.stdout
    proc = _pytest(tmp_path, "-q", "-x")
    assert "1 failed, 8 passed" in proc.stdout, proc.stdout  # stopped at the first failing sample (cap-09)


def test_pytest_asyncio_tests(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "@pytest.mark.asyncio\nasync def test_async():\n"
        "    await aassert_eval(TASK, answer, min_score={'exact_match': 0.7})\n"
        "@pytest.mark.asyncio\nasync def test_sync_inside_a_loop():\n"
        "    assert_eval(TASK, answer, min_score={'exact_match': 0.7})\n",
    )
    proc = _pytest(tmp_path, "-q")
    assert proc.returncode == 0 and "2 passed" in proc.stdout, proc.stdout + proc.stderr


def test_the_offline_example_under_xdist_with_junit(tmp_path: Path) -> None:
    proc = _pytest(EXAMPLE, "-q", "-n", "2", "--junitxml", str(tmp_path / "junit.xml"), "--assay-runs", str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "17 passed, 6 xfailed" in proc.stdout
    cases = list(ET.parse(tmp_path / "junit.xml").iter("testcase"))
    assert len(cases) == 23
    runs = [p.attrib["value"] for c in cases for p in c.iter("property") if p.attrib["name"] == "assay_run"]
    assert len(runs) == 2 and all(Path(r).parent == tmp_path and Path(r, "results.json").exists() for r in runs)
