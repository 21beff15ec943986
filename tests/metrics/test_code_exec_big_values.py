"""Whatever the program returns or raises, a test it fails is a failure with a short reason, never an error verdict
(which the headline leaves out), and nothing of the run is left on disk."""

from __future__ import annotations

import json
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

from assay import evaluators
from assay.verdict import Verdict
from tests.sandbox.sandbox_support import needs_bwrap

pytestmark = needs_bwrap

REASON_LIMIT = 2000  # characters a failing verdict's reason may have, whatever the program sent


def _exec(code: str, expected: Any, **options: Any) -> Verdict:
    settings: dict[str, Any] = {"allow_untrusted_code": True, "timeout_s": 10, "memory_mb": 256, **options}
    return evaluators.get("code_exec", **settings).evaluate(textwrap.dedent(code), expected)


def _failed_shortly(v: Verdict) -> None:
    assert not v.passed and v.score == 0.0 and not v.is_error, v.error or v
    assert len(v.reason or "") <= REASON_LIMIT and len(v.feedback or "") <= 2 * REASON_LIMIT
    assert len(str(v.details.get("message", ""))) <= REASON_LIMIT


def _leftovers() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).iterdir() if p.name.startswith("assay-")}


HUGE_INT = "def f(x):\n    return 1 << 20000\n"
HUGE_STR = "def f(x):\n    return 'x' * 6_000_000\n"


@pytest.mark.parametrize("code", [HUGE_INT, HUGE_STR], ids=["int", "str"])
@pytest.mark.parametrize(
    "expected",
    [
        ["assert f(1) == 2"],
        ["assert f(1) == 2, f(1)"],
        ["assert f(1) == 2, (f(1), f(1))"],
        {"function": "f", "cases": [{"input": [1], "output": 2}]},
        {"test": "def check(candidate):\n    assert candidate(1) == 2, candidate(1)\n", "entry_point": "f"},
        {"test": "def check(candidate):\n    raise ValueError(candidate(1))\n", "entry_point": "f"},
    ],
    ids=["assert", "assert-message", "assert-tuple", "cases", "check", "check-raises"],
)
def test_a_wrong_answer_of_any_size_is_a_failure_with_a_short_reason(code: str, expected: Any) -> None:
    before = _leftovers()
    _failed_shortly(_exec(code, expected))
    assert _leftovers() <= before  # no temp folder left behind (the 6 MB event left one each time)


def test_a_huge_int_is_described_not_printed() -> None:
    v = _exec(HUGE_INT, {"function": "f", "cases": [{"input": [1], "output": 2}]})
    _failed_shortly(v)
    assert "20001 bits" in (v.reason or ""), v.reason


def test_an_exception_with_a_huge_message_is_a_failure() -> None:
    code = "def f(x):\n    raise ValueError(1 << 20000)\n"
    _failed_shortly(_exec(code, ["assert f(1) == 2"]))
    _failed_shortly(_exec("def f(x):\n    raise ValueError('y' * 6_000_000)\n", ["assert f(1) == 2"]))


def test_many_long_test_names_neither_stall_nor_error() -> None:
    """Each case is reported as it starts; 6 MB of them once filled the reader's budget and stalled the tests."""
    cases = [{"input": ["a" * 20_000 + str(i)], "output": 20_000 + len(str(i))} for i in range(300)]
    v = _exec("def f(s):\n    return len(s)\n", {"function": "f", "cases": cases})
    assert v.passed, v
    v = _exec("def f(s):\n    return 0\n", {"function": "f", "cases": cases})
    _failed_shortly(v)


def test_a_lying_start_report_with_a_huge_int_is_a_failure() -> None:
    """The program may write its own messages on the channel; what it sends is data, and any data is handled."""
    code = """
    import os, sys
    fd = int(sys.argv[1])
    big = '{"$i": "' + 'f' * 6000 + '"}'
    os.write(fd, ('["loaded", {"$t": [' + ", ".join([big] * 4) + ']}]\\n').encode())
    os._exit(0)
    """
    _failed_shortly(_exec(code, ["assert f(1) == 2"]))
    code = """
    import os, sys
    fd = int(sys.argv[1])
    os.write(fd, b'["loaded", ["' + b'y' * 5_000_000 + b'", "ValueError", "m", null]]\\n')
    os._exit(0)
    """
    _failed_shortly(_exec(code, ["assert f(1) == 2"]))


def test_nine_right_and_one_wrong_score_nine_tenths(tmp_path: Path) -> None:
    """The run-level consequence: the huge wrong answer counts in the headline instead of being left out."""
    from tests.e2e.e2e_support import only_run_dir, run_cli, sample_lines

    with open(tmp_path / "rows.jsonl", "w") as fh:
        for i in range(10):
            fh.write(
                json.dumps({"id": f"q{i}", "question": "f", "tests": [f"assert f({i}) == {i + 1}, f({i})"]}) + "\n"
            )
    task = {
        "name": "big",
        "dataset": {"path": "rows.jsonl"},
        "fields": {"id": "id", "input": "question", "target": "tests"},
        "template": "{{ question }}",
        "evaluators": [{"name": "code_exec", "allow_untrusted_code": True, "memory_mb": 256}],
    }
    (tmp_path / "big.yaml").write_text(json.dumps(task))
    with open(tmp_path / "preds.jsonl", "w") as fh:
        for i in range(10):
            body = "x + 1" if i < 9 else "1 << 20000"
            fh.write(json.dumps({"id": f"q{i}", "prediction": f"def f(x):\n    return {body}\n"}) + "\n")
    done = run_cli("run", "big.yaml", "--model", "predictions:preds.jsonl", "-o", "runs", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    samples = sample_lines(only_run_dir(tmp_path / "runs"))
    verdicts = [v for s in samples for v in s["filters"]["none"]["verdicts"]["code_exec"]]
    assert [v["passed"] for v in verdicts] == [True] * 9 + [False] and not [v for v in verdicts if v["error"]]
    assert "0.9000" in done.stdout + done.stderr or "0.9" in done.stdout


def test_reports_past_the_readers_budget_neither_stall_nor_error() -> None:
    """3000 asserts of 2000 characters each: 6 MB of "this test runs now" events, past what the harness keeps."""
    tests = [f"assert f({i}) == {i + 1}  # " + "x" * 2000 for i in range(3000)]
    v = _exec("def f(x):\n    return x + 1\n", tests)
    assert v.passed, v
