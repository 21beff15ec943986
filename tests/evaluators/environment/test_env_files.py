"""env_files on workspace files, worked by hand: exact (with and without strip), contains, regex, a missing file,
one that must not exist, partial credit and the diff in the feedback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay import evaluators
from assay.errors import ConfigError
from assay.evaluators.environment.env_files import MAX_TEXT
from assay.verdict import Verdict
from tests.environments.hostenv import HostEnvironment

FILES = {
    "app.py": "def f():\n    return 1  \n\n",
    "README.md": "# Demo\nUsage: run it\n",
    "junk.tmp": "x",
}


async def _files(env: HostEnvironment, doc: dict[str, Any], **options: Any) -> tuple[Verdict, Any]:
    ev = evaluators.get("env_files", **options)
    observation = await ev.observe(env, doc)
    context = {"doc": doc, "environment": {"observations": {ev.observation_key(): observation}}}
    return ev.evaluate(None, None, context=context), observation


@pytest.fixture
def env(tmp_path: Path) -> HostEnvironment:
    return HostEnvironment(tmp_path, FILES)


async def test_exact_with_and_without_strip(env: HostEnvironment) -> None:
    doc = {"expected_files": {"app.py": "def f():\n    return 1\n"}}
    v, obs = await _files(env, doc)
    assert v.passed and v.score == 1.0 and obs["files"]["app.py"]["text"] == FILES["app.py"]
    v, _ = await _files(env, doc, strip=False)
    assert not v.passed and v.score == 0.0 and v.reason == "1 of 1 files differ: app.py"
    assert "-    return 1\n+    return 1  " in (v.feedback or "") and "--- expected/app.py" in (v.feedback or "")


async def test_partial_credit_missing_and_must_not_exist(env: HostEnvironment) -> None:
    doc = {
        "expected_files": {
            "app.py": "def f():\n    return 2\n",  # differs
            "README.md": "# Demo\nUsage: run it",  # matches (strip)
            "junk.tmp": None,  # must not exist, but does
            "gone.txt": None,  # must not exist, and does not
            "new.txt": "hello",  # missing
        }
    }
    v, obs = await _files(env, doc)
    assert v.score == pytest.approx(2 / 5) and not v.passed
    assert v.details == {"matched": 2, "total": 5, "differing": ["app.py", "junk.tmp", "new.txt"]}
    assert obs["files"]["gone.txt"] == {"exists": False} and obs["files"]["new.txt"] == {"exists": False}
    feedback = v.feedback or ""
    assert "junk.tmp: exists but must not" in feedback and "new.txt: missing" in feedback
    assert "-    return 2\n+    return 1" in feedback


async def test_contains_and_regex(env: HostEnvironment) -> None:
    assert (await _files(env, {"expected_files": {"README.md": "Usage: run"}}, mode="contains"))[0].passed
    assert not (await _files(env, {"expected_files": {"README.md": "Usage: walk"}}, mode="contains"))[0].passed
    assert (await _files(env, {"expected_files": {"app.py": r"^\s+return \d+\s*$"}}, mode="regex"))[0].passed
    v, _ = await _files(env, {"expected_files": {"app.py": "return [2-9]"}}, mode="regex")
    assert not v.passed and "no match for /return [2-9]/" in (v.feedback or "")
    with pytest.raises(ConfigError, match="not a regular expression"):
        evaluators.get("env_files", mode="regex", files={"a": "("})


async def test_task_files_and_the_row_together(env: HostEnvironment) -> None:
    v, _ = await _files(env, {"expected_files": {"junk.tmp": "x"}}, files={"junk.tmp": None, "README.md": "# Demo"})
    assert not v.passed and v.details["differing"] == ["README.md"]  # the row's junk.tmp wins; README is longer


async def test_a_large_file_is_kept_by_digest(env: HostEnvironment) -> None:
    big = "a" * (MAX_TEXT + 1)
    env.write_file("big.txt", big)
    v, obs = await _files(env, {"expected_files": {"big.txt": big}}, strip=False)
    assert v.passed and obs["files"]["big.txt"]["text"] is None and obs["files"]["big.txt"]["size"] == MAX_TEXT + 1
    v, _ = await _files(env, {"expected_files": {"big.txt": big}})
    assert not v.passed and "cannot be compared as text" in (v.feedback or "")


async def test_nothing_expected_or_no_observation_is_an_error(env: HostEnvironment) -> None:
    v, obs = await _files(env, {})
    assert v.is_error and "nothing to compare" in (v.error or "") and "error" in obs
    v = evaluators.get("env_files").evaluate("x", None, context={"doc": {"expected_files": {"a": "b"}}})
    assert v.is_error and (v.error or "").startswith("env_files needs the environment")
