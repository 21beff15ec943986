"""``assay audit RUN``: a finished run's answers that won without solving are found, linked to their samples;
a clean run has none."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from assay.audit.runscan import scan_run
from assay.cli import main
from tests.results.runfactory import manifest, record, task, verdict, write_run


def _run(tmp_path: Path, rows: list[tuple[str, str, bool]], name: str = "run") -> Path:
    """One task; each row (target, answer, passed)."""
    recs = [
        record("qa", i, {"exact_match": [verdict(1.0 if ok else 0.0)]}, texts=(answer,), target=target)
        for i, (target, answer, ok) in enumerate(rows)
    ]
    return write_run(tmp_path / name, manifest([task("qa", n=len(rows))]), recs)


def test_degenerate_passes_and_one_answer_passing_different_targets(tmp_path: Path):
    rows = [("Paris", "Paris", True), ("Tokyo", "", True), ("Lima", "NaN", True), ("0", "0", True),
            ("Oslo", "#### 0", True), ("Rome", "yes", True), ("Cairo", "yes", True), ("Hanoi", "yes", True),
            ("Kyiv", "Lima", False)]  # fmt: skip
    findings = scan_run(_run(tmp_path, rows))
    by_kind = {(f.kind, f.what): f for f in findings}
    degenerate = [f for f in findings if f.kind == "degenerate"]
    assert {f.what for f in degenerate} == {
        "passed on the answer ''",
        "passed on the answer 'NaN'",
        "passed on the answer '#### 0'",
    }  # "0" where the target is 0 is a right answer
    same = by_kind[("same answer, different targets", "the answer 'yes' passed samples with 3 different targets")]
    assert same.count == 3 and same.links[0].startswith("report.html#sample=qa/qa-")


def test_agents_that_claim_tools_they_never_called_or_touch_the_tests(tmp_path: Path):
    claims = record("qa", 0, {"exact_match": [verdict(1.0)]}, texts=("I ran the tests and they pass.",))
    claims.responses[0].transcript = [{"role": "user", "content": "fix it"},
                                      {"role": "assistant", "content": "I ran the tests and they pass."}]  # fmt: skip
    touches = record("qa", 1, {"exact_match": [verdict(1.0)]}, texts=("done",))
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "rm tests/test_x.py"}'}}
    touches.responses[0].transcript = [{"role": "assistant", "content": "", "tool_calls": [call]},
                                       {"role": "tool", "content": "ok", "tool_call_id": "c1"}]  # fmt: skip
    path = write_run(tmp_path / "agents", manifest([task("qa", n=2)]), [claims, touches])
    kinds = {f.kind: f for f in scan_run(path)}
    assert kinds["tools claimed, none called"].samples == ["qa-0"]
    assert kinds["scorer touched"].samples == ["qa-1"]


def test_the_command_scans_a_run_and_exits_1_on_a_finding(tmp_path: Path):
    flawed = _run(tmp_path, [("Tokyo", "", True), ("Paris", "Paris", True)], name="flawed")
    clean = _run(tmp_path, [("Tokyo", "Tokyo", True), ("Paris", "Lyon", False)], name="clean")
    result = CliRunner().invoke(main, ["audit", str(flawed)])
    assert result.exit_code == 1 and "degenerate qa: passed on the answer ''" in result.output
    assert "report.html#sample=qa/qa-0" in result.output
    ok = CliRunner().invoke(main, ["audit", str(clean), "--format", "json"])
    assert ok.exit_code == 0 and json.loads(ok.output) == [{"run": str(clean), "findings": []}]
