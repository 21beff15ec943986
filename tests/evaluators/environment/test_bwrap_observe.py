"""The environment evaluators observing a real bubblewrap environment (``packages: [pytest]``): a SWE-style repair
resolved or not, an agent's conftest undone, the launcher's files out of the workspace, files read back."""

from __future__ import annotations

from typing import Any

from assay import evaluators
from assay.environments.base import Environment
from assay.verdict import Verdict
from tests.environments.env_support import environment, needs_bwrap, spec

pytestmark = needs_bwrap

REPO = {
    "calc/__init__.py": "def mean(xs):\n    return sum(xs) / (len(xs) - 1)\n",
    "tests/test_old.py": "from calc import mean\n\ndef test_one():\n    assert mean([2, 2]) in (2, 4)\n",
}
ROW = {
    "FAIL_TO_PASS": '["tests/test_new.py::test_mean[1-2-3]"]',
    "PASS_TO_PASS": '["tests/test_old.py::test_one"]',
    "check_files": {
        "tests/test_new.py": (
            "import pytest\nfrom calc import mean\n\n@pytest.mark.parametrize('a,b,c', [(1, 2, 3)])\n"
            "def test_mean(a, b, c):\n    assert mean([a, b, c]) == 2\n"
        )
    },
}
FIX = "def mean(xs):\n    return sum(xs) / len(xs)\n"
ALL_PASS = (
    "import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
    "    out = yield\n    out.get_result().outcome = 'passed'\n"
)


async def _verdict(name: str, env: Environment, doc: dict[str, Any], **options: Any) -> tuple[Verdict, Any]:
    ev = evaluators.get(name, **options)
    observation = await ev.observe(env, doc)
    context = {"doc": doc, "environment": {"observations": {ev.observation_key(): observation}}}
    return ev.evaluate("done", None, context=context), observation


async def test_a_swe_style_fix_resolves_inside_bubblewrap() -> None:
    async with environment(spec(files=REPO, packages=("pytest",)), {}) as env:
        v, obs = await _verdict("env_check", env, ROW)
        assert not v.passed and obs["tests"] == {
            "tests/test_new.py::test_mean[1-2-3]": "failed",
            "tests/test_old.py::test_one": "passed",
        }, obs["output_tail"]
        env.write_file("calc/__init__.py", FIX)
        env.write_file("conftest.py", ALL_PASS)  # and a conftest it should not need: removed before the check
        v, obs = await _verdict("env_check", env, ROW)
        assert v.passed and v.score == 1.0, obs["output_tail"]
        assert obs["prepared"]["removed"] == ["conftest.py"]
        assert "assay_run_pytest.py" not in " ".join(env.list_files())


async def test_an_agents_conftest_does_not_resolve_inside_bubblewrap() -> None:
    async with environment(spec(files=REPO, packages=("pytest",)), {}) as env:
        env.write_file("conftest.py", ALL_PASS)
        env.write_file("tests/test_new.py", "def test_mean():\n    pass\n")
        v, obs = await _verdict("env_check", env, ROW)
        assert not v.passed and obs["tests"]["tests/test_new.py::test_mean[1-2-3]"] == "failed", obs["output_tail"]


async def test_without_pytest_the_verdict_is_an_error_saying_what_to_add() -> None:
    async with environment(spec(files=REPO), {}) as env:
        v, obs = await _verdict("env_check", env, ROW)
        if "error" not in obs:  # the sandbox's Python has a pytest of its own: nothing to show here
            return
        assert v.is_error and "add `packages: [pytest]`" in (v.error or "")


async def test_exit_code_and_files_inside_bubblewrap() -> None:
    async with environment(spec(files={"a.txt": "hello\n"}), {}) as env:
        v, _ = await _verdict("env_check", env, {}, command="grep -q hello a.txt")
        assert v.passed
        env.write_file("out/result.txt", "42\n")
        doc = {"expected_files": {"out/result.txt": "42", "a.txt": None}}
        v, obs = await _verdict("env_files", env, doc)
        assert v.score == 0.5 and obs["files"]["out/result.txt"]["text"] == "42\n"
