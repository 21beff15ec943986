"""code_exec against programs written to fake a pass or get out: the tricks a model trained on test rewards finds.

Each test here passed (the trick worked) on the launcher that ran the tests in the program's own process, unless
its docstring says otherwise. They run as root and, via ``test_code_exec_nonroot.py``, as an unprivileged user.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import sysconfig
import textwrap
from pathlib import Path
from typing import Any

import pytest

from assay import evaluators
from assay.verdict import Verdict
from tests.sandbox.sandbox_support import needs_bwrap
from tests.support import wait_for

pytestmark = needs_bwrap

ROOT = os.geteuid() == 0
ALWAYS_EQUAL = """
class Yes:
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    __hash__ = object.__hash__
"""


def _exec(code: str, expected: Any, **options: Any) -> Verdict:
    settings: dict[str, Any] = {"allow_untrusted_code": True, "timeout_s": 8, "memory_mb": 256, **options}
    return evaluators.get("code_exec", **settings).evaluate(textwrap.dedent(code), expected)


def _styles(fn: str, call: str = "()", want: str = "1") -> list[Any]:
    """The same expectation in the three test styles: MBPP asserts, a HumanEval check program, i/o cases."""
    humaneval = f"def check(candidate):\n    assert candidate{call} == {want}\n"
    cases = {"function": fn, "cases": [{"input": json.loads(f"[{call[1:-1]}]"), "output": json.loads(want)}]}
    return [[f"assert {fn}{call} == {want}"], {"test": humaneval, "entry_point": fn}, cases]


def _failed(v: Verdict) -> None:
    assert not v.passed and v.score == 0.0 and not v.is_error, v


@pytest.mark.parametrize("expected", _styles("f"))
def test_reading_the_harness_token_and_writing_a_result_line_does_not_pass(expected: Any) -> None:
    code = """
    import json, os, sys
    nonce, frame = None, sys._getframe(0)
    while frame is not None:  # the launcher kept its token in a caller's locals
        nonce = frame.f_locals.get("nonce", nonce)
        frame = frame.f_back
    fake = json.dumps({"outcome": "passed", "tests_passed": 1, "tests_total": 1})
    os.write(1, f"\\nASSAY-RESULT-{nonce} {fake}\\n".encode())
    os.write(2, f"\\nASSAY-RESULT-{nonce} {fake}\\n".encode())
    for fd in range(3, 64):  # and whatever channel a harness may hold open
        try:
            os.write(fd, b'["loaded", null]\\n["result", {"$d": [["outcome", "passed"]]}]\\n["ok", 1, 1, []]\\n')
        except OSError:
            pass
    os._exit(0)
    def f():
        return 0
    """
    _failed(_exec(code, expected))


@pytest.mark.parametrize("expected", _styles("f"))
def test_patching_the_harness_does_not_pass(expected: Any) -> None:
    code = """
    import sys
    main = sys.modules["__main__"]
    main._run_tests = lambda spec, g: {"outcome": "passed"}
    passed = {"outcome": "passed", "tests_passed": 1, "tests_total": 1}
    for name, value in list(vars(main).items()):
        if callable(value) and not name.startswith("__"):
            setattr(main, name, lambda *a, _p=passed, **k: _p)
    def f():
        return 0
    """
    _failed(_exec(code, expected))


@pytest.mark.parametrize("expected", _styles("f"))
def test_an_object_equal_to_everything_does_not_pass(expected: Any) -> None:
    v = _exec(ALWAYS_EQUAL + "\ndef f():\n    return Yes()\n", expected)
    _failed(v)
    assert "'Yes'" in (v.reason or "") and "only data" in (v.reason or "")


def test_subclasses_of_data_types_cross_as_plain_data() -> None:
    code = """
    class S(str):
        def __eq__(self, other):
            return True
        __hash__ = str.__hash__
    class I(int):
        def __eq__(self, other):
            return True
        __hash__ = int.__hash__
    def f():
        return S("no")
    def g():
        return I(0)
    """
    _failed(_exec(code, ["assert f() == 'yes'"]))
    _failed(_exec(code, ["assert g() == 1"]))
    assert _exec(code, ["assert f() == 'no'", "assert g() == 0", "assert type(f()) is str"]).passed


@pytest.mark.parametrize(
    "code",
    [
        "import sys\nsys.exit(0)\ndef f():\n    return 0",
        "import os\nos._exit(0)\ndef f():\n    return 0",
        "import sys\ndef f():\n    sys.exit(0)",
        "import os\ndef f():\n    os._exit(0)",
        "import atexit, os\natexit.register(os._exit, 0)\ndef f():\n    raise SystemExit(0)",
    ],
)
def test_exiting_before_or_during_the_tests_does_not_pass(code: str) -> None:
    """``sys.exit(0)`` at load was already a failure; exiting during the tests (from a BaseException the tests do
    not catch) is the case that matters once the tests run elsewhere."""
    for expected in _styles("f"):
        _failed(_exec(code, expected))
    caught = "def check(candidate):\n    try:\n        candidate()\n    except BaseException:\n        pass\n"
    _failed(_exec(code, {"test": caught, "entry_point": "f"}))  # a test that catches everything does not help


def _needles(tmp_path: Path) -> tuple[dict[str, str], list[str]]:
    """Files the program must not read (path -> secret inside) and secrets to look for in the verdict."""
    data = tmp_path / "task-data.jsonl"
    data.write_text('{"answer": "DATA-SECRET-4417"}\n')
    home = tmp_path / "home"
    home.mkdir()
    (home / "HOME-SECRET-9931.txt").write_text("HOME-CONTENT-2208")
    paths = {str(data): "DATA-SECRET-4417", str(home): "HOME-SECRET-9931", str(Path.home()): ""}
    secrets = ["DATA-SECRET-4417", "HOME-SECRET-9931", "HOME-CONTENT-2208"]  # the tests' own: it would pass
    try:
        shadow = Path("/etc/shadow").read_text().splitlines()[0]
        secrets.append(shadow)
    except (OSError, IndexError):
        pass
    return paths, secrets


def test_files_outside_the_sandbox_cannot_be_read(tmp_path: Path) -> None:
    paths, secrets = _needles(tmp_path)
    wanted = [*paths, "/etc/shadow", "/etc/passwd", "/root", "/home", "/work", "/proc/1/environ"]
    code = f"""
    import os
    def grab(paths={wanted!r}):
        found = []
        for p in paths:
            try:
                if os.path.isdir(p):
                    found.append(p + ": " + " ".join(sorted(os.listdir(p))) + " ")
                    for name in sorted(os.listdir(p)):
                        found.append(open(os.path.join(p, name), errors="replace").read())
                else:
                    found.append(open(p, errors="replace").read())
            except OSError:
                pass
        for top in (".", "/tmp"):  # the work directory and the temp directory: where a harness keeps the tests
            for root, dirs, files in os.walk(top):
                if root.count("/") > 3:
                    dirs.clear()
                for name in files[:200]:
                    if name == "solution.py":  # its own source (which names what it looks for)
                        continue
                    try:
                        found.append(open(os.path.join(root, name), errors="replace").read(100000))
                    except OSError:
                        pass
        text = "".join(f for f in found if "SECRET" in f or "root:" in f)
        tests = "TESTS-" + "SECRET-5150"
        return tests if tests in text else text or "nothing"
    """
    tests = ["assert grab() == 'TESTS-SECRET-5150'"]
    for expected in (tests, {"test": "def check(c):\n    assert c() == 'TESTS-SECRET-5150'\n", "entry_point": "grab"}):
        v = _exec(code, expected)
        _failed(v)
        shown = json.dumps([v.reason, v.feedback, v.details])
        assert not [s for s in secrets if s in shown], shown
        assert "returned 'nothing'" in shown or "== 'TESTS-SECRET-5150'" in shown
    v = _exec(code + "\nraise RuntimeError(grab())\n", tests)  # the load error's message is shown too
    _failed(v)
    shown = json.dumps([v.reason, v.feedback, v.details])
    assert not [s for s in secrets if s in shown], shown


ESCAPE = """
import os
def escape():
    done = []
    cgroups = "/sys/fs/cgroup/pids", "/sys/fs/cgroup", "/sys/fs/cgroup/unified"
    for path in [c + "/cgroup.procs" for c in cgroups]:
        try:
            with open(path, "w") as fh:
                fh.write(str(os.getpid()))
            done.append(path)
        except OSError:
            pass
    try:  # written back unchanged: harmless if it works, and it must not
        with open("/proc/sys/kernel/core_pattern") as fh:
            current = fh.read()
        with open("/proc/sys/kernel/core_pattern", "w") as fh:
            fh.write(current)
        done.append("/proc/sys/kernel/core_pattern")
    except OSError:
        pass
    return done
"""


def test_sys_and_proc_sys_cannot_be_written() -> None:
    assert _exec(ESCAPE, ["assert escape() == []"]).passed


def test_a_fork_bomb_stops_at_max_processes_and_leaves_nothing_behind() -> None:
    code = ESCAPE + textwrap.dedent(
        """
        import time
        def forks():
            escape()  # first leave the process limit, if the sandbox allows it
            n = 0
            for _ in range(100):
                try:
                    pid = os.fork()
                except OSError:
                    break
                if pid == 0:
                    os.execv("/bin/sleep", ["sleep", "31.4159"])
                n += 1
            return n
        """
    )
    v = _exec(code, ["assert forks() <= 16"], max_processes=16)
    assert v.passed, v

    def left() -> list[str]:
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if b"31.4159" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found.append(pid)
            except OSError:
                pass
        return found

    # the sleeps left behind would end on their own only after 31 s
    wait_for(lambda: not left(), 10, "the forked `sleep 31.4159` processes to end")


def test_the_network_cannot_be_reached() -> None:
    """As root the launcher had a network namespace too; without root it had none."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.setblocking(False)
    port = server.getsockname()[1]
    code = f"""
    import socket
    def reach():
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
            return True
        except OSError:
            return False
    """
    try:
        assert _exec(code, ["assert reach() is False"]).passed
        with pytest.raises(BlockingIOError):
            server.accept()  # nothing came in
    finally:
        server.close()


def test_packages_outside_the_standard_library_cannot_be_imported() -> None:
    places = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *sys.path} - {""})
    code = f"""
    import sys
    sys.path[:0] = {places!r} + ["/usr/lib/python3/dist-packages"]
    def found():
        out = []
        for name in ("numpy", "pydantic", "assay"):
            try:
                __import__(name)
                out.append(name)
            except ImportError:
                pass
        return out
    """
    v = _exec(code, ["assert found() == []"])
    assert v.passed, v


def test_the_program_sees_none_of_the_users_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Already so before (a clean environment); the test now reads it through a function's return value."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value-123")
    code = """
    import os
    def env():
        found = dict(os.environ)
        for p in os.listdir("/proc"):
            if p.isdigit():
                try:
                    found[p] = open(f"/proc/{p}/environ", "rb").read().decode("latin-1")
                except OSError:
                    pass
        return found
    """
    v = _exec(code, ["assert 'OPENAI_API_KEY' not in env()", "assert 'sk-secret' not in str(env())"])
    assert v.passed, v
