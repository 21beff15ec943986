"""env_check observing a workspace after the loop (through a local test double of an Environment): protected files
restored, hidden tests written over the agent's, pytest's outcomes scored as SWE-bench scores them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from assay import evaluators
from assay.evaluators.environment.protect import DEFAULT_PROTECT, prepare_workspace
from assay.verdict import Verdict
from tests.environments.hostenv import HostEnvironment

REPO = {
    "calc/__init__.py": "def mean(xs):\n    return sum(xs) / (len(xs) - 1)\n",
    "tests/test_old.py": "from calc import mean\n\ndef test_one():\n    assert mean([2, 2]) in (2, 4)\n",
    "pyproject.toml": '[project]\nname = "calc"\n',
    "tests/conftest.py": "",
}
HIDDEN = "from calc import mean\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n"
ROW = {
    "FAIL_TO_PASS": '["tests/test_new.py::test_mean"]',
    "PASS_TO_PASS": ["tests/test_old.py::test_one"],
    "check_files": {"tests/test_new.py": HIDDEN},
}
FIX = "def mean(xs):\n    return sum(xs) / len(xs)\n"
ALL_PASS = (
    "import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
    "    out = yield\n    report = out.get_result()\n    report.outcome = 'passed'\n    report.longrepr = None\n"
)


async def _check(env: HostEnvironment, doc: dict[str, Any], **options: Any) -> tuple[Verdict, Any]:
    ev = evaluators.get("env_check", **options)
    observation = await ev.observe(env, doc)
    context = {"doc": doc, "environment": {"observations": {ev.observation_key(): observation}}}
    return ev.evaluate("done", None, context=context), observation


async def test_a_right_fix_resolves_and_no_fix_does_not(tmp_path: Path) -> None:
    env = HostEnvironment(tmp_path / "a", REPO)
    v, obs = await _check(env, ROW)
    assert not v.passed and obs["tests"]["tests/test_new.py::test_mean"] == "failed"
    assert obs["tests"]["tests/test_old.py::test_one"] == "passed" and obs["prepared"]["written"] == [
        "tests/test_new.py"
    ]
    env.write_file("calc/__init__.py", FIX)
    v, obs = await _check(env, ROW)
    assert v.passed and v.score == 1.0, (v, obs["output_tail"])


async def test_an_agents_conftest_ini_and_own_hidden_test_are_undone(tmp_path: Path) -> None:
    env = HostEnvironment(tmp_path / "b", REPO)
    env.write_file("conftest.py", ALL_PASS)
    env.write_file("tests/conftest.py", ALL_PASS)
    env.write_file("pytest.ini", "[pytest]\naddopts = -p no:python\n")
    env.write_file("pyproject.toml", '[tool.pytest.ini_options]\naddopts = "--deselect tests/test_new.py"\n')
    env.write_file("tests/test_new.py", "def test_mean():\n    pass\n")  # its own easy version of the hidden test
    v, obs = await _check(env, ROW)
    assert not v.passed and obs["tests"]["tests/test_new.py::test_mean"] == "failed"
    assert obs["prepared"]["removed"] == ["conftest.py", "pytest.ini"]
    assert obs["prepared"]["restored"] == ["pyproject.toml", "tests/conftest.py"]
    assert env.read_file("tests/conftest.py") == b"" and not os.path.exists(f"{env.workspace}/conftest.py")


async def test_links_planted_at_protected_or_hidden_paths_are_removed(tmp_path: Path) -> None:
    env = HostEnvironment(tmp_path / "c", {**REPO, "notes/keep.txt": "x"})
    env.write_file("helpers/allpass.py", ALL_PASS)
    os.symlink("helpers/allpass.py", f"{env.workspace}/conftest.py")
    os.symlink("../helpers/allpass.py", f"{env.workspace}/tests/test_new.py")
    v, obs = await _check(env, ROW)
    assert not v.passed and obs["tests"]["tests/test_new.py::test_mean"] == "failed"
    assert not os.path.islink(f"{env.workspace}/tests/test_new.py")
    assert env.read_file("helpers/allpass.py").decode() == ALL_PASS  # the link went, not what it pointed to


async def test_prepare_restores_deleted_files_and_clears_a_linked_folder(tmp_path: Path) -> None:
    env = HostEnvironment(tmp_path / "d", {**REPO, "pytest.ini": "[pytest]\n", "src/pkg/conftest.py": "X = 1\n"})
    os.remove(f"{env.workspace}/pytest.ini")
    os.remove(f"{env.workspace}/src/pkg/conftest.py")
    os.rename(f"{env.workspace}/tests", f"{env.workspace}/elsewhere")
    os.symlink("elsewhere", f"{env.workspace}/tests")
    env.write_file("lib/_pytest/__init__.py", "")
    done = await prepare_workspace(env, DEFAULT_PROTECT, {"src/pkg/test_hidden.py": "", "tests/t.py": ""}, timeout_s=30)
    assert done["restored"] == ["pytest.ini", "src/pkg/conftest.py", "tests/conftest.py"]
    assert done["removed"] == ["elsewhere/conftest.py", "lib/_pytest/__init__.py"]
    assert env.read_file("pytest.ini") == b"[pytest]\n" and env.read_file("src/pkg/conftest.py") == b"X = 1\n"
    assert not os.path.islink(f"{env.workspace}/tests") and env.read_file("tests/t.py") == b""
    assert not os.path.exists(f"{env.workspace}/elsewhere/t.py")


async def test_exit_code_mode_runs_the_command_in_the_workspace(tmp_path: Path) -> None:
    env = HostEnvironment(tmp_path / "e", {"a.txt": "hello\n"})
    v, obs = await _check(env, {}, command="grep -q hello a.txt && test -f check.sh", files={"check.sh": "exit 0\n"})
    assert v.passed and obs["mode"] == "exit_code" and obs["exit_code"] == 0
    v, obs = await _check(env, {}, command="grep -q bye a.txt")
    assert not v.passed and v.reason == "`grep -q bye a.txt` exited with 1"
    v, obs = await _check(env, {}, command="sleep 5", timeout_s=0.5)
    assert not v.passed and obs["timed_out"] and "ran past 0.5 s" in (v.reason or "")


async def test_nothing_to_run_is_an_error_observation(tmp_path: Path) -> None:
    env = HostEnvironment(tmp_path / "f", {"a.txt": ""})
    v, obs = await _check(env, {"question": "no lists"})
    assert v.is_error and "nothing to run" in (v.error or "") and "error" in obs


async def test_what_was_undone_is_in_the_verdict_and_protect_can_be_emptied(tmp_path: Path) -> None:
    env = HostEnvironment(tmp_path / "g", {"pyproject.toml": "[project]\nname = 'a'\n"})
    env.write_file("pyproject.toml", "[project]\nname = 'b'\n")
    command = "grep -q \"'b'\" pyproject.toml"
    v, _ = await _check(env, {}, command=command)
    assert not v.passed and v.details["undone"] == ["pyproject.toml"]
    env.write_file("pyproject.toml", "[project]\nname = 'b'\n")
    v, _ = await _check(env, {}, command=command, protect=[])
    assert v.passed and "undone" not in v.details
