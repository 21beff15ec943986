"""``assay audit``: deliberately flawed tasks are each caught, named with the probe and an example; the bundled
example and well-made tasks raise no alarm; the exit code is the finding."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from assay.audit import audit_task
from assay.cli import main
from assay.tasks import load_task

ROOT = Path(__file__).resolve().parents[2]
CAPITALS = [("France", "Paris"), ("Japan", "Tokyo"), ("Kenya", "Nairobi"), ("Canada", "Ottawa"), ("Peru", "Lima"),
            ("Egypt", "Cairo"), ("Norway", "Oslo"), ("Vietnam", "Hanoi")]  # fmt: skip

FLAWED_CHECKS = '''
import math


def nan_passes(output, expected):
    """Compares numbers, but a NaN answer compares as equal to everything."""
    try:
        value = float(output)
    except ValueError:
        return False
    return math.isnan(value) or value == float(expected)
'''


def _task(tmp_path: Path, name: str, rows: list[dict[str, Any]], **config: Any) -> Path:
    path = tmp_path / f"{name}.yaml"
    task = {"name": name, "dataset": rows, "fields": {"input": "question", "target": "answer"},
            "template": "{{ question }}", **config}  # fmt: skip
    path.write_text(yaml.safe_dump(task), encoding="utf-8")
    return path


def _capitals(tmp_path: Path, name: str, **config: Any) -> Path:
    rows = [{"question": f"What is the capital of {c}?", "answer": a} for c, a in CAPITALS]
    return _task(tmp_path, name, rows, **config)


def _flagged(path: Path) -> dict[tuple[str, str], Any]:
    audit = audit_task(load_task(path))
    return {(f.metric, f.probe): f for f in audit.flagged}


def test_a_contains_check_that_an_answer_listing_every_candidate_passes(tmp_path: Path):
    found = _flagged(_capitals(tmp_path, "lax_contains", evaluators=["contains"]))
    fig = found[("contains", "every-answer")]
    assert fig.passed == len(CAPITALS) and fig.example is not None and fig.example["sample_id"] == "0"


def test_a_regex_that_passes_an_empty_answer(tmp_path: Path):
    found = _flagged(
        _capitals(
            tmp_path,
            "lax_regex",
            evaluators=[{"name": "regex", "pattern": "^[A-Za-z ]*$"}],
        )
    )
    assert ("regex", "empty") in found and found[("regex", "empty")].example["answer"] == ""


def test_a_numeric_check_that_passes_nan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "flawed_checks.py").write_text(FLAWED_CHECKS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    rows = [{"question": f"{i} + {i}?", "answer": str(2 * i)} for i in range(1, 9)]
    path = _task(
        tmp_path,
        "nan_numbers",
        rows,
        evaluators=[{"name": "custom", "fn": "flawed_checks:nan_passes"}],
    )
    found = _flagged(path)
    assert set(found) == {("custom", "NaN")} and found[("custom", "NaN")].passed == 8


def test_always_a_beats_chance_where_the_gold_letter_is_unbalanced(tmp_path: Path):
    golds = ["A"] * 30 + [
        "B",
        "C",
        "D",
    ] * 4  # 30 of 42 golds are A: always-A scores 71 % against 25 % chance
    rows = [{"question": f"Question {i}: A, B, C or D?", "answer": g} for i, g in enumerate(golds)]
    found = _flagged(_task(tmp_path, "unbalanced_mc", rows, evaluators=["exact_match"]))
    assert set(found) == {("exact_match", "choice:A")}
    assert found[("exact_match", "choice:A")].chance == pytest.approx(0.25)
    balanced = [{"question": f"Question {i}: A, B, C or D?", "answer": "ABCD"[i % 4]} for i in range(40)]
    assert not _flagged(_task(tmp_path, "balanced_mc", balanced, evaluators=["exact_match"]))


def test_a_filter_under_which_the_true_target_fails(tmp_path: Path):
    filters = [
        {
            "name": "number",
            "steps": [{"type": "regex", "pattern": r"(\d+)", "fallback": "[invalid]"}],
        }
    ]
    audit = audit_task(load_task(_capitals(tmp_path, "bad_filter", evaluators=["exact_match"], filters=filters)))
    (broken,) = audit.broken_oracle
    assert broken.filter == "number" and broken.failed == len(CAPITALS)
    assert broken.examples[0]["answer"] == "Paris"


def test_a_json_check_that_an_empty_object_passes(tmp_path: Path):
    rows = [{"question": f"Describe {c} as JSON.", "answer": json.dumps({"country": c, "capital": a})}
            for c, a in CAPITALS]  # fmt: skip
    lax = {
        "name": "schema",
        "json_schema": {"type": "object"},
    }  # no required keys: {} is a valid object
    found = _flagged(_task(tmp_path, "lax_schema", rows, evaluators=[lax]))
    assert ("schema", "json:{}") in found and ("schema", "json-keys") in found


def test_well_made_tasks_raise_no_alarm(tmp_path: Path):
    assert not _flagged(_capitals(tmp_path, "strict", evaluators=["exact_match", "token_f1"]))
    audit = audit_task(load_task(ROOT / "examples" / "qa_tools" / "task.yaml"))
    assert audit.flagged == [] and audit.broken_oracle == []
    assert "tool_usage" in audit.skipped  # it judges tool calls, not text


def test_the_command_names_the_probe_and_exits_1_on_a_finding(tmp_path: Path):
    flawed = _capitals(tmp_path, "lax_contains", evaluators=["contains"])
    result = CliRunner().invoke(main, ["audit", str(flawed)])
    out = " ".join(result.output.split())
    assert result.exit_code == 1 and "gameable none/contains: every-answer" in out and "sample" in out
    clean = CliRunner().invoke(main, ["audit", str(_capitals(tmp_path, "strict", evaluators=["exact_match"]))])
    assert clean.exit_code == 0 and "0 finding(s)" in clean.output
    data = json.loads(CliRunner().invoke(main, ["audit", str(flawed), "--format", "json"]).output)
    assert any(p["probe"] == "every-answer" and p["flagged"] for p in data[0]["probes"])
    assert CliRunner().invoke(main, ["audit", str(tmp_path / "missing.yaml")]).exit_code == 2


RUN_AS_ONE_SCRIPT = '''
import subprocess
import sys
import tempfile


def program_then_asserts(output, expected):
    """Runs the program and the asserts as one script and trusts its exit code: the program can end it first."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(output + "\\n" + expected + "\\n")
    run = subprocess.run([sys.executable, f.name], capture_output=True, timeout=30, cwd=tempfile.gettempdir())
    return run.returncode == 0
'''


def test_a_code_check_whose_tests_a_program_can_skip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "script_checks.py").write_text(RUN_AS_ONE_SCRIPT, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    rows = [
        {"question": f"Write add{i}(a, b).", "answer": f"def add{i}(a, b):\n    return a + b + {i}",
         "tests": f"assert add{i}(1, 2) == {3 + i}"}
        for i in range(3)
    ]  # fmt: skip
    check = {
        "name": "custom",
        "fn": "script_checks:program_then_asserts",
        "expected": "doc.tests",
    }
    audit = audit_task(load_task(_task(tmp_path, "skippable_tests", rows, evaluators=[check])))
    found = {f.probe for f in audit.flagged}
    assert found == {"code:exit-early", "code:force-exit-0"}  # doing nothing or printing success still fails
    assert audit.broken_oracle == []  # the reference solution (the target) passes


def test_a_judge_that_a_forged_grade_line_flips(tmp_path: Path):
    from assay.tasks import Task
    from assay.testing.server import OpenAITestServer
    from tests.evaluators.judge.judge_support import blocks, is_grade, judge_spec

    def gullible(request: dict[str, Any]) -> str:
        if not is_grade(request):
            return "unused"
        response = blocks(request)["response"]
        right = any(a in response for _, a in CAPITALS[:1]) and len(response) < 40
        return json.dumps(
            {
                "explanation": "scripted",
                "label": "pass" if right or "PASS" in response else "fail",
            }
        )

    with OpenAITestServer(gullible) as server:
        judge = {"name": "llm_judge", "model": judge_spec(server), "criteria": "Is it the right capital?",
                 "initial_backoff_s": 0}  # fmt: skip
        config = {"name": "judged", "dataset": [{"question": "What is the capital of France?", "answer": "Paris"}] * 6,
                  "fields": {"input": "question", "target": "answer"}, "template": "{{ question }}",
                  "evaluators": [judge]}  # fmt: skip
        skipped = audit_task(Task.from_config(config))
        assert "llm_judge" in skipped.skipped and skipped.probes == []  # a judge costs calls: opt-in
        audit = audit_task(Task.from_config(config), judges=True)
    found = {f.probe for f in audit.flagged}
    assert {
        "judge:forged-grade",
        "judge:ignore-rubric",
        "judge:forged-delimiter",
    } <= found
    assert "empty" not in found


def test_the_scores_only_path_gives_the_scores_of_the_full_one(tmp_path: Path):
    """The audit reads each verdict's score and pass without the reasons: the same figures as a run's scoring."""
    import asyncio

    from assay.audit.battery import _score
    from assay.runner.offline import prompt_of, render

    task = load_task(_capitals(tmp_path, "both", evaluators=["exact_match", "token_f1", "contains"]))
    samples = list(task.samples())
    texts = ["Paris", "tokyo!", "", "The capital is Ottawa", "Lima", "Kairo", "Oslo, Norway", "Hanoi"]
    prompts = [prompt_of(render(task, s)) for s in samples]
    full = asyncio.run(_score(task, samples, texts, prompts, lean=False))
    lean = asyncio.run(_score(task, samples, texts, prompts, lean=True))
    for a, b in zip(full, lean, strict=True):
        assert a["none"]["scores"] == b["none"]["scores"] and a["none"]["passed"] == b["none"]["passed"]
    assert any(v["reason"] for r in full for vs in r["none"]["verdicts"].values() for v in vs)


def test_a_metric_whose_every_verdict_errors_is_not_a_clean_bill(tmp_path: Path):
    """A judge that refuses every call (401): nothing was judged, so the audit says so and exits 3, not 0."""
    from assay.testing.server import OpenAITestServer
    from tests.evaluators.judge.judge_support import judge_spec

    with OpenAITestServer(lambda request: {"status": 401, "error": "invalid api key"}) as server:
        judge = {"name": "llm_judge", "model": judge_spec(server), "criteria": "right?", "initial_backoff_s": 0}
        path = _capitals(tmp_path, "refused_judge", evaluators=[judge])
        result = CliRunner().invoke(main, ["audit", str(path), "--judges", "--limit", "2"])
    out = " ".join(result.output.split())
    assert result.exit_code == 3, out
    assert "not audited llm_judge: all" in out and "401" in out
