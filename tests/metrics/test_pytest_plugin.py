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
from tests.support import wait_for

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


AGENTS = """
import os, time
from pathlib import Path
from assay.testing import assert_eval, aassert_eval
CASES = [("What is 1 + 1?", "2"), ("What is 2 + 2?", "4")]

def exits(request):
    os._exit(3)

def interrupts(request):
    raise KeyboardInterrupt

def quits(request):
    raise SystemExit(4)

def right(request):
    return {"What is 1 + 1?": "2", "What is 2 + 2?": "4"}[request.messages[-1]["content"]]

def test_exits():
    assert_eval(CASES, exits, min_score={"exact_match": 0.5})

def test_interrupts():
    assert_eval(CASES, interrupts, min_score={"exact_match": 0.5})

def test_quits():
    assert_eval(CASES, quits, min_score={"exact_match": 0.5})

def test_after_them():
    assert_eval(CASES, right, min_score={"exact_match": 1.0})
"""


def _junit_cases(path: Path) -> dict[str, ET.Element]:
    return {case.attrib["name"]: case for case in ET.parse(path).iter("testcase")}


def test_an_agent_that_exits_or_interrupts_fails_its_own_test_and_the_session_goes_on(tmp_path: Path) -> None:
    (tmp_path / "test_agents.py").write_text(AGENTS)
    proc = _pytest(tmp_path, "-q", "--junitxml", "junit.xml", "-p", "no:randomly")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # tests failed; the session was not killed nor interrupted
    assert "3 failed, 1 passed" in proc.stdout, proc.stdout
    cases = _junit_cases(tmp_path / "junit.xml")
    assert set(cases) == {"test_exits", "test_interrupts", "test_quits", "test_after_them"}
    exited = cases["test_exits"].find("failure")
    assert exited is not None and "exited with code 3 (os._exit or a crash)" in exited.attrib["message"]
    interrupted = cases["test_interrupts"].find("failure")
    assert interrupted is not None and "raised KeyboardInterrupt" in interrupted.attrib["message"]
    quit_ = cases["test_quits"].find("failure")
    assert quit_ is not None and "raised SystemExit: 4" in quit_.attrib["message"]
    assert cases["test_after_them"].find("failure") is None
    assert "its run folder keeps the samples finished before: " in exited.attrib["message"]


def test_without_fork_an_agents_keyboard_interrupt_still_fails_only_its_test(tmp_path: Path) -> None:
    (tmp_path / "test_agents.py").write_text(AGENTS)
    proc = _pytest(tmp_path, "-q", "--assay-isolation", "none", "-k", "interrupts or quits or after")
    assert proc.returncode == 1 and "2 failed, 1 passed" in proc.stdout, proc.stdout + proc.stderr
    assert "the code under evaluation raised KeyboardInterrupt" in proc.stdout


def test_a_real_ctrl_c_still_stops_the_session(tmp_path: Path) -> None:
    import signal

    (tmp_path / "test_slow.py").write_text(
        "import time\nfrom pathlib import Path\nfrom assay.testing import assert_eval\n"
        "def slow(request):\n    Path('started').touch()\n    time.sleep(60)\n    return 'x'\n"
        "def test_slow():\n    assert_eval([('q', 'x')], slow, min_score={'exact_match': 1.0})\n"
        "def test_never_reached():\n    Path('reached').touch()\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=", "-q", "-p", "no:randomly"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # even where these tests run ignoring it
    )
    wait_for((tmp_path / "started").exists, 60, "the slow fixture to start", interval=0.05, proc=proc)
    proc.send_signal(signal.SIGINT)  # as a terminal's Ctrl-C reaches pytest
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2, out  # pytest's "interrupted"
    assert "KeyboardInterrupt" in out and not (tmp_path / "reached").exists()


def test_junit_failure_text_never_holds_the_model_specs_credentials(tmp_path: Path) -> None:
    (tmp_path / "test_secret.py").write_text(
        "from assay.testing import assert_eval\nfrom assay.testing.server import OpenAITestServer\n"
        "def test_model_down():\n"
        "    with OpenAITestServer(lambda r: {'status': 500, 'error': 'down'}) as srv:\n"
        "        spec = {'provider': 'openai', 'model': 'm', 'api_key_env': 'NO_KEY',\n"
        "                'base_url': f'http://u:SECRET@127.0.0.1:{srv.port}/v1?api_key=S2'}\n"
        "        assert_eval([('q', 'a')], spec, min_score={'exact_match': 0.5}, max_attempts=1)\n"
        "def test_below_threshold():\n"
        "    with OpenAITestServer('wrong') as srv:\n"
        "        spec = {'provider': 'openai', 'model': 'm',\n"
        "                'base_url': f'http://u:SECRET@127.0.0.1:{srv.port}/v1?api_key=S2'}\n"
        "        print('spec in use:', spec)\n"
        "        assert_eval([('q', 'a')], spec, min_score={'exact_match': 0.5})\n"
    )
    for isolation in ("fork", "none"):
        proc = _pytest(tmp_path, "-q", "--junitxml", "junit.xml", "--assay-isolation", isolation, "-rA", "-l")
        assert proc.returncode == 1 and "2 failed" in proc.stdout, proc.stdout + proc.stderr
        xml = (tmp_path / "junit.xml").read_text()
        assert "SECRET" not in xml and "S2" not in xml, xml
        assert "SECRET" not in proc.stdout and "S2" not in proc.stdout
        assert "u:***@127.0.0.1" in xml and "api_key=***" in xml  # redacted, not dropped
        cases = _junit_cases(tmp_path / "junit.xml")
        assert "samples failed" in cases["test_model_down"].find("failure").attrib["message"]
        assert "exact_match = 0.000 < 0.5" in cases["test_below_threshold"].find("failure").attrib["message"]


def _partial(request) -> str:
    question = request.messages[-1]["content"]
    return {"a": "red green blue", "b": "one two three", "c": "cat"}[question]


GATE_CASES = [("a", "red green blue"), ("b", "one two three"), ("c", "cat dog bird fish")]  # F1: 1, 1, 0.4


def test_gate_each_asks_every_case_to_clear_its_threshold(tmp_path: Path) -> None:
    run = assert_eval(GATE_CASES, _partial, evaluators=["token_f1"], min_score={"token_f1": 0.7}, output_dir=tmp_path)
    assert run.results["results"]["cases"]["token_f1,none"] == pytest.approx(0.8)  # the mean clears 0.7
    with pytest.raises(EvalAssertionError) as info:
        assert_eval(
            GATE_CASES, _partial, evaluators=["token_f1"], min_score={"token_f1": 0.7}, gate="each", output_dir=tmp_path
        )
    text = str(info.value)
    assert "cases: 1 of 3 sample(s) miss token_f1 >= 0.7 (gate each)  [mean token_f1 = 0.800; 0 errored]" in text
    assert "sample '2': token_f1 = 0.400" in text and "sample '0'" not in text and "run folder: " in text
    assert_eval(
        GATE_CASES, _partial, evaluators=["token_f1"], min_score={"token_f1": 0.4}, gate="each", output_dir=tmp_path
    )


def test_gate_each_on_a_lower_is_better_metric_and_errored_cases(tmp_path: Path) -> None:
    cases = [("What is 2 ** 3?", "8"), ("What is the capital of Peru?", "Lima")]
    from assay.demo.agent import answer

    with pytest.raises(EvalAssertionError, match=r"cases: 1 of 2 sample\(s\) miss ter <= 0\.5 \(gate each\)"):
        assert_eval(cases, answer, evaluators=["ter"], min_score={"ter": 0.5}, gate="each", output_dir=tmp_path)

    def flaky(request) -> str:
        if "Peru" in request.messages[-1]["content"]:
            raise RuntimeError("tool down")
        return "8"

    with pytest.raises(EvalAssertionError, match=r"1 sample\(s\) errored \(allowed: 0\)"):
        assert_eval(cases, flaky, min_score={"exact_match": 1.0}, gate="each", output_dir=tmp_path, max_error_rate=None)
    run = assert_eval(
        cases,
        flaky,
        min_score={"exact_match": 1.0},
        gate="each",
        max_errors=1,
        output_dir=tmp_path,
        max_error_rate=None,
    )  # the errored case is counted apart, never a miss
    assert run.path.exists()


def test_bad_gates_are_refused_before_anything_runs(tmp_path: Path) -> None:
    from assay.errors import ConfigError

    with pytest.raises(ConfigError, match=r"gate: 'mean' .* or 'each'"):
        assert_eval(GATE_CASES, _partial, min_score={"exact_match": 1}, gate="all", output_dir=tmp_path)
    with pytest.raises(ConfigError, match="goes with gate='mean'"):
        assert_eval(GATE_CASES, _partial, min_score={"exact_match": 1}, gate="each", use="ci_low", output_dir=tmp_path)
    assert not any(tmp_path.iterdir())
