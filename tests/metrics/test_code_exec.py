"""code_exec judges real tasks (HumanEval, MBPP, cases) and stays within its limits: time, memory, processes,
network, filesystem. Programs written to fake a pass are in ``test_code_exec_hostile.py``."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from pathlib import Path
from typing import Any

import pytest

import assay
from assay import evaluators
from assay.errors import ConfigError
from assay.evaluators.code.code_exec import OPT_IN_ENV, extract_code, verdict_for
from assay.evaluators.code.harness import run_tests
from assay.sandbox.box import signal_name
from assay.sandbox.limits import Limits
from assay.tasks import Task
from assay.verdict import Verdict
from tests.sandbox.sandbox_support import needs_bwrap
from tests.support import wait_for

pytestmark = needs_bwrap

ROOT = os.geteuid() == 0


def _exec(code: str, expected: Any, **options: Any) -> Verdict:
    settings: dict[str, Any] = {"allow_untrusted_code": True, "timeout_s": 3, "memory_mb": 256, **options}
    ev = evaluators.get("code_exec", **settings)
    return ev.evaluate(code, expected)


def test_off_unless_the_user_opts_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(OPT_IN_ENV, raising=False)
    with pytest.raises(ConfigError, match="allow_untrusted_code"):
        evaluators.get("code_exec")
    monkeypatch.setenv(OPT_IN_ENV, "1")
    assert evaluators.get("code_exec").evaluate("x = 1", ["assert x == 1"]).passed


def test_passed_and_failed_name_the_test_and_its_message() -> None:
    assert _exec("def add(a, b):\n    return a + b", ["assert add(1, 2) == 3"]).passed
    v = _exec("def add(a, b):\n    return a - b", ["assert add(1, 1) == 0", "assert add(1, 2) == 3, 'wrong sum'"])
    assert not v.passed and not v.is_error
    assert v.reason == "test `assert add(1, 2) == 3, 'wrong sum'` failed: AssertionError: wrong sum"
    assert v.details["tests_passed"] == 1 and v.details["tests_total"] == 2 and v.feedback
    humaneval = {
        "test": "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(3) == 7\n",
        "entry_point": "f",
    }
    v = _exec("```python\ndef f(x):\n    return x * 2\n```", humaneval)
    assert v.reason == "test `assert candidate(3) == 7` failed: AssertionError"
    cases = {"function": "f", "cases": [{"input": [2], "output": 4}, {"input": [3], "output": 7}]}
    assert _exec("def f(x):\n    return x * 2", cases).reason == "test `f(3)` failed: returned 6, expected 7"
    assert "SyntaxError" in (_exec("def f(:", ["assert True"]).reason or "")


def test_infinite_loop_times_out() -> None:
    started = time.monotonic()
    v = _exec("while True:\n    pass", ["assert True"], timeout_s=1)
    assert not v.passed and not v.is_error and v.details["outcome"] == "timed_out"
    assert "time limit" in (v.reason or "")
    assert time.monotonic() - started < 30  # it was killed, not waited for


def test_the_cpu_limit_is_the_same_time_out_as_the_wall_limit() -> None:
    """A busy loop reaches the CPU limit (the time limit's seconds) or the wall limit first depending on the load;
    either way the verdict is a time-out. CPU first here for certain: a 1 s CPU limit under a 60 s wall limit."""
    limits = Limits(timeout_s=60, cpu_s=1, memory_mb=256)
    outcome = asyncio.run(run_tests("while True:\n    pass", {"style": "asserts", "tests": ["assert True"]}, limits))
    assert signal_name(outcome.returncode) == "SIGXCPU" and outcome.seconds < 30
    v = verdict_for(outcome, limits)
    assert not v.passed and not v.is_error and v.details["outcome"] == "timed_out"
    assert v.reason == "timed out: the program reached the 1 s CPU time limit"
    assert "infinite loop" in (v.feedback or "")
    wall = asyncio.run(
        run_tests(
            "import time\ntime.sleep(60)",
            {"style": "asserts", "tests": ["assert True"]},
            Limits(timeout_s=1, memory_mb=256),
        )
    )  # sleeping uses no CPU: the wall limit
    v = verdict_for(wall, Limits(timeout_s=1, memory_mb=256))
    assert v.details["outcome"] == "timed_out" and v.reason == "timed out: the program ran past the 1 s time limit"


def test_fork_bomb_is_contained_and_cleaned_up() -> None:
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    code = f"import os, sys\nos.execv(sys.executable, [sys.executable, '-c', {bomb!r}, 'BOMB-27.18281'])"
    v = _exec(code, ["assert True"], timeout_s=1, max_processes=16)
    assert not v.passed and v.details["outcome"] in ("timed_out", "crashed")
    # every process of the sandbox is gone (a bomb left behind would run for ever)
    wait_for(lambda: not [p for p in _processes() if b"BOMB-27.18281" in p], 10, "the fork bomb's processes to end")


def _processes() -> list[bytes]:
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            out.append(Path(f"/proc/{pid}/cmdline").read_bytes())
    return out


def test_memory_hog_crashes_with_the_limit_in_the_reason() -> None:
    v = _exec("x = bytearray(2 * 1024 ** 3)", ["assert True"], memory_mb=128)
    assert not v.passed and not v.is_error and v.details["outcome"] == "crashed"
    assert "memory" in (v.reason or "").lower() and "128 MB" in (v.reason or "")


def test_writing_outside_the_work_directory_fails(tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    v = _exec(f"open({str(target)!r}, 'w').write('x')", ["assert True"])
    assert not v.passed and "FileNotFoundError" in (v.reason or "")  # the host's /tmp is not there at all
    assert not target.exists()
    v = _exec("open('/usr/escaped.txt', 'w').write('x')", ["assert True"])
    assert not v.passed and "Read-only file system" in (v.reason or "")
    # inside its own work directory it may write
    v = _exec(
        "import os\nopen('out.txt', 'w').write('x')\ndef wrote():\n    return os.path.exists('out.txt')",
        ["assert wrote()"],
    )
    assert v.passed, v


def test_sockets_cannot_reach_anything() -> None:
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    try:
        code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)"
        v = _exec(code, ["assert True"])
        assert not v.passed and "ConnectionRefusedError" in (v.reason or "")  # its own loopback, nobody listening
        assert v.details["isolation"]["network"].startswith("none")
    finally:
        server.close()


def test_exiting_early_or_faking_the_result_line_does_not_pass() -> None:
    v = _exec("import os\nos._exit(0)", ["assert False"])
    assert not v.passed and v.details["outcome"] == "crashed"
    fake = 'import os, sys\nos.write(1, b\'\\nASSAY-RESULT- {"outcome": "passed"}\\n\')\nos._exit(0)'
    assert not _exec(fake, ["assert False"]).passed


def test_missing_tests_are_an_error_verdict_not_a_failure() -> None:
    v = _exec("x = 1", None)
    assert v.is_error and "no tests" in (v.error or "")


def test_extract_code_takes_fenced_blocks() -> None:
    assert extract_code("Here:\n```python\nx = 1\n```\nand\n```\ny = 2\n```") == "x = 1\n\ny = 2"
    assert extract_code("x = 1") == "x = 1"


def test_programs_run_in_parallel_up_to_max_parallel() -> None:
    code = "import time\nSTART = time.time()\ntime.sleep(0.6)\nprint(START, time.time())"

    def spans(max_parallel: int) -> list[tuple[float, float]]:
        ev = evaluators.get("code_exec", allow_untrusted_code=True, max_parallel=max_parallel)

        async def go() -> list[Verdict]:
            return list(await asyncio.gather(*(ev.aevaluate(code, ["assert True"]) for _ in range(3))))

        out = []
        for v in asyncio.run(go()):
            a, b = v.details["stdout_tail"].split()
            out.append((float(a), float(b)))
        return sorted(out)

    def overlaps(s: list[tuple[float, float]]) -> bool:
        return any(s[i + 1][0] < s[i][1] for i in range(len(s) - 1))

    assert overlaps(spans(3))
    assert not overlaps(spans(1))


def test_in_a_run_with_repeats(tmp_path: Path) -> None:
    rows = [
        {"id": "add", "q": "add", "tests": ["assert add(2, 3) == 5"]},
        {"id": "sub", "q": "sub", "tests": ["assert sub(5, 3) == 2"]},
    ]
    task = Task.from_config(
        {
            "name": "code",
            "dataset": {"rows": rows},
            "fields": {"id": "id", "input": "q", "target": "tests"},
            "template": "{{ q }}",
            "repeats": 2,
            "evaluators": [{"name": "code_exec", "allow_untrusted_code": True, "timeout_s": 5}],
        }
    )

    def coder(prompt: str) -> str:
        return "def add(a, b):\n    return a + b" if prompt == "add" else "def sub(a, b):\n    return a + b"

    run = assay.run(task, coder, output_dir=tmp_path / "runs", cache=False, progress=False, concurrency=4)
    entry = run.results["assay"]["tasks"]["code"]["filters"]["none"]["code_exec"]
    assert entry["mean"] == 0.5 and entry["n_errored"] == 0
    assert entry["pass_at_k"]["1"]["value"] == 0.5


def test_humaneval_prompt_as_code_prefix(tmp_path: Path) -> None:
    row = {
        "task_id": "HumanEval/0",
        "prompt": 'def double(x):\n    """Twice x."""\n',
        "canonical_solution": "    return 2 * x\n",
        "test": "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(-1) == -2\n",
        "entry_point": "double",
    }
    task = Task.from_config(
        {
            "name": "humaneval",
            "dataset": {"rows": [row]},
            "fields": {"id": "task_id", "input": "prompt"},
            "template": "{{ prompt }}",
            "evaluators": [
                {"name": "code_exec", "allow_untrusted_code": True, "code_prefix": "doc.prompt", "expected": "doc"}
            ],
        }
    )

    def completes(prompt: str) -> str:
        return "    return 2 * x\n"

    run = assay.run(task, completes, output_dir=tmp_path / "runs", cache=False, progress=False)
    assert run.results["results"]["humaneval"]["code_exec,none"] == 1.0
    ev = evaluators.get("code_exec", allow_untrusted_code=True, code_prefix="doc.prompt")
    v = ev.evaluate("    return x + 1\n", row, context={"doc": row})
    assert v.reason == "test `assert candidate(2) == 4` failed: AssertionError"
    assert ev.evaluate("    return 2 * x\n", row, context={}).is_error  # no prompt to prefix: cannot judge


def test_printing_without_end_times_out_with_bounded_output() -> None:
    from assay.evaluators.code.harness import run_tests
    from assay.sandbox.limits import Limits

    outcome = asyncio.run(
        run_tests(
            "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)",
            {"style": "asserts", "tests": ["assert True"]},
            Limits(timeout_s=2, memory_mb=256),
        )
    )
    assert outcome.outcome == "timed_out"
    assert outcome.isolation["sandbox"].startswith("bubblewrap")  # what was set up is known even after a kill
    assert 0 < len(outcome.stdout_tail) <= 2000
