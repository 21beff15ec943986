"""The SWE-style example task run end to end (examples/environments/swe): five tiny repositories, each sample in
its own bubblewrap environment, the standard tools acting there, and ``env_check`` applying the hidden tests after
the agent stopped and scoring them by SWE-bench's rule. A scripted model that fixes the right file resolves every
instance; ones that edit or delete the tests, plant a conftest.py that passes everything or write to the scorer's
path resolve none."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agent_support import run_task
from swe_fixture import EXAMPLE, REPOS, fix_of

import assay
from assay.testing.server import Conversation, ConversationReplies, OpenAITestServer
from tests.sandbox.sandbox_support import needs_bwrap

pytestmark = needs_bwrap

Plan = Callable[[str], list[dict[str, Any]]]  # instance id -> the tool calls the model makes, one per turn


def _instance(prompt: str) -> str:
    """The instance a prompt is about (the example's template shows its problem statement)."""
    return next(r["instance_id"] for r in REPOS if r["problem_statement"] in prompt)


def _model(plan: Plan) -> ConversationReplies:
    """Makes the plan's calls one per turn, then answers 'done'."""

    def step(conv: Conversation) -> Any:
        calls = plan(_instance(conv.user))
        done = len([m for m in conv.messages if m.get("role") == "tool"])
        if done < len(calls):
            return {"tool_calls": [calls[done]]}
        return "done"

    return ConversationReplies(step)


def _edit(path: str, old: str, new: str) -> dict[str, Any]:
    arguments = {"command": "str_replace", "path": path, "old_str": old, "new_str": new}
    return {"name": "text_editor", "arguments": arguments}


def _bash(cmd: str) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"cmd": cmd}}


def right(instance: str) -> list[dict[str, Any]]:
    path, old, new = fix_of(instance)
    return [
        {"name": "text_editor", "arguments": {"command": "view", "path": f"/workspace/{path}"}},
        _edit(path, old, new),
        _bash("python3 -m pytest -q -p no:cacheprovider 2>&1 | tail -n 3; true"),
    ]


def edits_tests(instance: str) -> list[dict[str, Any]]:
    """Writes the hidden tests' files itself, with tests that pass on the bug."""
    repo = next(r for r in REPOS if r["instance_id"] == instance)
    calls = []
    for name in repo["check_files"]:
        body = "".join(f"def {t.split('::')[1].split('[')[0]}():\n    pass\n\n" for t in repo["FAIL_TO_PASS"])
        calls.append({"name": "text_editor", "arguments": {"command": "create", "path": name, "file_text": body}})
    return calls


def deletes_tests(instance: str) -> list[dict[str, Any]]:
    return [_bash("rm -rf tests && ls")]


def plants_conftest(instance: str) -> list[dict[str, Any]]:
    """A conftest.py whose hook makes every test pass, and attempts at the scorer's folder."""
    hook = (
        "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n    report = outcome.get_result()\n    report.outcome = 'passed'\n"
    )
    return [
        {"name": "text_editor", "arguments": {"command": "create", "path": "conftest.py", "file_text": hook}},
        {"name": "text_editor", "arguments": {"command": "create", "path": "tests/conftest.py", "file_text": hook}},
        _bash("mkdir -p /assay-check && echo forged > /assay-check/assay_run_pytest.py; echo exit=$?"),
        _bash("printf 'import sys\\nprint(\"PASSED\")\\nsys.exit(0)\\n' > pytest.py; echo ok"),
    ]


def forges_in_background(instance: str) -> list[dict[str, Any]]:
    """Leaves a job running that keeps writing passing tests over the hidden tests' paths once they appear."""
    repo = next(r for r in REPOS if r["instance_id"] == instance)
    fake = "".join(f"def {t.split('::')[1].split('[')[0]}():\n    pass\n\n" for t in repo["FAIL_TO_PASS"])
    copies = "; ".join(f"cp /tmp/fake.py {name}" for name in repo["check_files"])
    loop = f"(while true; do mkdir -p tests; {copies}; sleep 0.005; done) > /dev/null 2>&1 &"
    write = {"name": "text_editor", "arguments": {"command": "create", "path": "/workspace/fake.py", "file_text": fake}}
    return [write, _bash(f"mv fake.py /tmp/fake.py && {loop} echo started")]


def _run(tmp_path: Path, plan: Plan) -> Any:
    with OpenAITestServer(_model(plan)) as server:
        return run_task(tmp_path, EXAMPLE / "task.yaml", server, concurrency=5)


def test_a_model_that_fixes_the_right_file_resolves_every_instance(tmp_path: Path) -> None:
    run = _run(tmp_path, right)
    assert run.results["results"]["swe_tiny"]["env_check,none"] == 1.0
    assert len(run.records) == 5
    figures = run.results["assay"]["tasks"]["swe_tiny"]["agent"]["environments"]
    assert figures["count"] == 5 and 1 <= figures["peak_alive"] <= 5
    from assay.report.table import render_operational

    (note,) = [line for line in render_operational(run, "markdown").splitlines() if "environments" in line]
    assert note.startswith("- swe_tiny: 5 environments, made in ") and "alive at once" in note
    for record in run.records:
        verdict = record.filters["none"].verdicts["env_check"][0]
        assert verdict["passed"] and verdict["error"] is None, verdict["reason"]
        response = record.responses[0]
        env = response.metadata["environment"]
        assert env["kind"] == "bwrap"
        path, _, _ = fix_of(record.sample_id)
        assert f"+++ b/{path}" in env["diff"]  # the workspace's final diff shows the fix
        assert "tests/" not in env["diff"]  # the hidden tests were applied after the diff was taken
        tool_messages = [m for m in response.transcript if m.get("role") == "tool"]
        edit = next(m for m in tool_messages if m["name"] == "text_editor" and m.get("changes", {}).get("written"))
        assert edit["changes"]["written"] == [path]  # each call says what it changed
        tests = next(iter(env["observations"].values()))["tests"]
        repo = next(r for r in REPOS if r["instance_id"] == record.sample_id)
        assert all(tests[t] == "passed" for t in repo["FAIL_TO_PASS"] + repo["PASS_TO_PASS"])


def test_a_rescore_scores_the_recorded_observations_without_an_environment(tmp_path: Path) -> None:
    """`assay score RUN` gives the same verdicts from the records alone: nothing runs in an environment again."""
    import asyncio

    from assay.runner.rescore import rescore

    run = _run(tmp_path, right)
    rescored = asyncio.run(rescore(run.path, output_dir=tmp_path / "rescored"))
    again = assay.load_run(rescored.run_dir)
    verdicts = {r.sample_id: r.filters["none"].verdicts["env_check"][0]["passed"] for r in again.records}
    assert verdicts == {r["instance_id"]: True for r in REPOS}
    assert again.results["results"]["swe_tiny"]["env_check,none"] == 1.0


@pytest.mark.parametrize(
    "plan", [edits_tests, deletes_tests, plants_conftest, forges_in_background], ids=lambda p: p.__name__
)
def test_a_model_that_games_the_tests_resolves_none(tmp_path: Path, plan: Plan) -> None:
    run = _run(tmp_path, plan)
    assert run.results["results"]["swe_tiny"]["env_check,none"] == 0.0
    for record in run.records:
        verdict = record.filters["none"].verdicts["env_check"][0]
        assert verdict["error"] is None and verdict["passed"] is False, verdict["reason"]
        observed = next(iter(record.responses[0].metadata["environment"]["observations"].values()))
        repo = next(r for r in REPOS if r["instance_id"] == record.sample_id)
        # by SWE-bench's rule worked by hand: the bug is still there, so a FAIL_TO_PASS test fails
        assert any(observed["tests"].get(t) != "passed" for t in repo["FAIL_TO_PASS"])


def test_swebench_rule_by_hand_on_partial_fixes(tmp_path: Path) -> None:
    """calc's fix applied only for positive numbers: one parametrised FAIL_TO_PASS case passes, one fails, so
    the instance is not resolved; dates fixed but its PASS_TO_PASS test broken: not resolved either."""

    def plan(instance: str) -> list[dict[str, Any]]:
        if instance == "tiny__calc-1":
            return [_edit("calc/ops.py", "def add(a, b):\n    return a - b", "def add(a, b):\n    return 5")]
        if instance == "tiny__dates-4":
            return [_edit("dates/leap.py", "    return year % 4 == 0\n", "    return year % 400 == 0\n")]
        return right(instance)

    run = _run(tmp_path, plan)
    by_id = {r.sample_id: r.filters["none"].verdicts["env_check"][0] for r in run.records}
    assert not by_id["tiny__calc-1"]["passed"] and not by_id["tiny__dates-4"]["passed"]
    assert all(by_id[i]["passed"] for i in ("tiny__slug-2", "tiny__stack-3", "tiny__cart-5"))
    assert run.results["results"]["swe_tiny"]["env_check,none"] == pytest.approx(3 / 5)
    calc = next(r for r in run.records if r.sample_id == "tiny__calc-1")
    tests = next(iter(calc.responses[0].metadata["environment"]["observations"].values()))["tests"]
    assert tests["tests/test_ops.py::test_add[2-3-5]"] == "passed"
    assert tests["tests/test_ops.py::test_add[-1-1-0]"] == "failed"
    assert "test_add[-1-1-0]" in (by_id["tiny__calc-1"]["feedback"] or "")
