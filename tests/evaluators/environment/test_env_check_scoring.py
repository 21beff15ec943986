"""env_check's verdicts on recorded observations, worked by hand against SWE-bench's rule (grading.py: a listed
test succeeds on PASSED or XFAIL; FAILED, ERROR or absent is a failure; resolved only when every FAIL_TO_PASS and
every PASS_TO_PASS test succeeds)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from assay import evaluators
from assay.errors import ConfigError
from assay.evaluators.environment import swebench
from assay.verdict import Verdict

A, B = "tests/test_x.py::test_a", "tests/test_x.py::test_b"
P1, P2 = "tests/test_y.py::test_p[1-2]", "tests/test_y.py::test_p[a b-c]"


def _score(observation: Any, doc: dict[str, Any], **options: Any) -> Verdict:
    ev = evaluators.get("env_check", **options)
    context = {"doc": doc, "environment": {"observations": {ev.observation_key(): observation}}}
    return ev.evaluate("the agent's last message", None, context=context)


def _pytest(tests: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {"mode": "pytest", "tests": tests, "exit_code": 0, "timed_out": False, "output_tail": "", **extra}


def test_every_listed_test_passing_is_resolved() -> None:
    doc = {"FAIL_TO_PASS": [A], "PASS_TO_PASS": [B, P1, P2]}
    v = _score(_pytest({A: "passed", B: "passed", P1: "passed", P2: "xfailed", "tests/other.py::t": "failed"}), doc)
    assert v.passed and v.score == 1.0
    assert v.details["resolution"] == "RESOLVED_FULL"
    assert v.details["FAIL_TO_PASS"] == {"passed": 1, "total": 1, "failing": {}}
    assert v.details["PASS_TO_PASS"] == {"passed": 3, "total": 3, "failing": {}}


def test_one_fail_to_pass_test_failing_is_not_resolved() -> None:
    doc = {"FAIL_TO_PASS": [A, B], "PASS_TO_PASS": [P1]}
    v = _score(_pytest({A: "passed", B: "failed", P1: "passed"}), doc)
    assert not v.passed and v.score == 0.0 and not v.is_error
    assert v.details["resolution"] == "RESOLVED_PARTIAL"  # SWE-bench's PARTIAL: still not resolved
    assert v.details["fraction_passing"] == pytest.approx(2 / 3)
    assert v.details["FAIL_TO_PASS"]["failing"] == {B: "failed"}
    assert "1 of 2 FAIL_TO_PASS tests failed: tests/test_x.py::test_b (failed)" in (v.reason or "")
    assert v.feedback == "Make these tests pass: tests/test_x.py::test_b (failed)."


def test_a_missing_pass_to_pass_test_counts_as_failed() -> None:
    doc = {"FAIL_TO_PASS": [A], "PASS_TO_PASS": [B, P1]}
    v = _score(_pytest({A: "passed", B: "passed"}), doc)
    assert not v.passed and v.score == 0.0
    assert v.details["resolution"] == "RESOLVED_NO"
    assert v.details["PASS_TO_PASS"]["failing"] == {P1: "missing"}


@pytest.mark.parametrize("outcome", ["failed", "error", "skipped", "xpassed", "missing"])
def test_only_passed_and_xfailed_succeed(outcome: str) -> None:
    """skipped and xpassed: SWE-bench's pytest parser never maps them under their node id (``SKIPPED [1] file:line``
    and an unknown ``XPASS``), so its grading sees them missing, that is failed."""
    tests = {} if outcome == "missing" else {A: outcome}
    assert not _score(_pytest(tests), {"FAIL_TO_PASS": [A]}).passed
    assert _score(_pytest({A: "xfailed"}), {"FAIL_TO_PASS": [A]}).passed


def test_parametrised_ids_are_matched_exactly() -> None:
    doc = {"FAIL_TO_PASS": [P1, P2]}
    assert _score(_pytest({P1: "passed", P2: "passed"}), doc).passed
    v = _score(_pytest({P1: "passed", "tests/test_y.py::test_p[a b]": "passed"}), doc)
    assert not v.passed and v.details["FAIL_TO_PASS"]["failing"] == {P2: "missing"}


def test_lists_as_json_strings_and_lowercase_keys() -> None:
    doc = {"fail_to_pass": json.dumps([A]), "pass_to_pass": "[]"}
    assert _score(_pytest({A: "passed"}), doc).passed
    assert not _score(_pytest({A: "failed"}), {"FAIL_TO_PASS": json.dumps([A])}).passed


def test_the_rule_matches_swebench_by_hand() -> None:
    outcomes = {A: "passed", B: "error", P1: "passed"}
    report = swebench.grade(outcomes, [A, B], [P1, P2])
    assert report.fail_to_pass.success == (A,) and report.fail_to_pass.failure == ((B, "error"),)
    assert report.pass_to_pass.failure == ((P2, "missing"),)
    assert report.fail_to_pass.rate == 0.5 and report.pass_to_pass.rate == 0.5
    assert report.status == swebench.NO and not report.resolved
    assert swebench.grade(outcomes, [A, B], [P1]).status == swebench.PARTIAL
    assert swebench.grade(outcomes, [A], [P1]).status == swebench.FULL
    assert swebench.grade({}, [], [A]).fail_to_pass.rate == 1.0  # an empty list scores 1, as compute_fail_to_pass


def test_a_report_made_twice_is_a_failure_not_a_pass() -> None:
    obs = _pytest({A: "passed"}, forged="the test run's report appeared 2 times")
    v = _score(obs, {"FAIL_TO_PASS": [A]})
    assert not v.passed and not v.is_error and v.details["forged"] is True and "2 times" in (v.reason or "")


def test_no_outcomes_says_why() -> None:
    v = _score(_pytest({}, exit_code=1, pytest_exit_code=4), {"FAIL_TO_PASS": [A]})
    assert not v.passed and "no test outcomes were reported; exit code 4: usage error" in (v.reason or "")
    timed = _score(_pytest({}, timed_out=True, exit_code=None), {"FAIL_TO_PASS": [A]}, timeout_s=30)
    assert "ran past 30 s" in (timed.reason or "")


def test_exit_code_mode() -> None:
    obs = {"mode": "exit_code", "command": "make test", "exit_code": 0, "timed_out": False, "output_tail": "ok"}
    assert _score(obs, {}, command="make test").passed
    failed = _score({**obs, "exit_code": 2, "output_tail": "boom"}, {}, command="make test")
    assert not failed.passed and failed.reason == "`make test` exited with 2" and "boom" in (failed.feedback or "")
    timed = _score({**obs, "exit_code": None, "timed_out": True}, {}, command="make test", timeout_s=5)
    assert not timed.passed and timed.reason == "`make test` ran past 5 s"


def test_without_an_observation_the_verdict_is_an_error_not_a_zero() -> None:
    ev = evaluators.get("env_check")
    for context in (None, {"doc": {}}, {"environment": {"observations": {}}}):
        v = ev.evaluate("answer", None, context=context)
        assert v.is_error and math.isnan(v.score)
        assert (v.error or "").startswith("env_check needs the environment: run it in a task with an `environment:`")


def test_an_observation_that_could_not_be_made_is_an_error() -> None:
    v = _score({"error": "pytest is not importable in the environment: add `packages: [pytest]`"}, {})
    assert v.is_error and "packages: [pytest]" in (v.error or "")
    assert _score(_pytest({}), {"FAIL_TO_PASS": []}).is_error  # nothing listed: nothing to judge


def test_observation_keys_differ_with_options_and_options_are_checked() -> None:
    assert evaluators.get("env_check").observation_key() == "env_check"
    one, two = evaluators.get("env_check", command="a"), evaluators.get("env_check", command="b")
    assert one.observation_key() != two.observation_key() and one.observation_key().startswith("env_check:")
    with pytest.raises(ConfigError, match="pytest mode takes pytest_args"):
        evaluators.get("env_check", mode="pytest", command="make")
    with pytest.raises(ConfigError, match="needs a command"):
        evaluators.get("env_check", mode="exit_code")
    with pytest.raises(ConfigError, match="not a path inside the workspace"):
        evaluators.get("env_check", files={"../escape.py": ""})
