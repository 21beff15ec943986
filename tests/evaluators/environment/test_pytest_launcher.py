"""The pytest launcher run for real (this interpreter, no sandbox) on a tiny repository: outcomes by node id, and
files in the workspace that try to stand in for pytest, its plugins or its report do not change them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from assay.evaluators.environment import pytest_launcher

LAUNCHER = Path(pytest_launcher.__file__)
NONCE = "0123456789abcdef0123456789abcdef"

TESTS = """
import pytest
from pkg import add

def test_add():
    assert add(1, 1) == 2

def test_ok():
    assert True

@pytest.mark.parametrize("x,y", [(1, 2), ("a b", "c")])
def test_param(x, y):
    assert x != y

@pytest.mark.skip
def test_skipped():
    pass

@pytest.mark.xfail
def test_xfailed():
    assert False

@pytest.mark.xfail
def test_xpassed():
    pass

@pytest.fixture
def broken():
    raise RuntimeError("fixture")

def test_errors(broken):
    pass
"""

EXPECTED = {
    "tests/test_x.py::test_add": "failed",
    "tests/test_x.py::test_ok": "passed",
    "tests/test_x.py::test_param[1-2]": "passed",
    "tests/test_x.py::test_param[a b-c]": "passed",
    "tests/test_x.py::test_skipped": "skipped",
    "tests/test_x.py::test_xfailed": "xfailed",
    "tests/test_x.py::test_xpassed": "xpassed",
    "tests/test_x.py::test_errors": "error",
}


def _repo(root: Path, extra: dict[str, str] | None = None) -> Path:
    files = {"pkg/__init__.py": "def add(a, b):\n    return a - b\n", "tests/test_x.py": TESTS, **(extra or {})}
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(textwrap.dedent(text))
    return root


def _run(workspace: Path, *args: str, nonce: str = NONCE) -> tuple[list[dict[str, Any]], subprocess.CompletedProcess]:
    argv = [sys.executable, "-I", str(LAUNCHER), "--workspace", str(workspace), "--", *args]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(workspace)}
    done = subprocess.run(argv, cwd=workspace, input=nonce + "\n", capture_output=True, text=True, env=env, timeout=120)
    blocks = re.findall(rf"{nonce} BEGIN\n(.*?)\n{nonce} END", done.stdout, re.DOTALL)
    return [json.loads(b) for b in blocks], done


def test_each_outcome_is_reported_by_node_id(tmp_path: Path) -> None:
    reports, done = _run(_repo(tmp_path), "tests/test_x.py")
    assert len(reports) == 1, done.stdout + done.stderr
    assert reports[0]["tests"] == EXPECTED and reports[0]["exit_code"] == 1
    assert not (tmp_path / ".pytest_cache").exists()  # -p no:cacheprovider


def test_a_collection_error_is_reported_for_its_file(tmp_path: Path) -> None:
    reports, _ = _run(_repo(tmp_path, {"tests/test_x.py": "import nowhere_to_be_found\n"}), "tests/test_x.py")
    assert reports[0]["tests"] == {"tests/test_x.py": "error"}


def test_workspace_files_cannot_stand_in_for_pytest(tmp_path: Path) -> None:
    """A pytest.py and _pytest/ at the root and in the user site (HOME is the workspace), a sitecustomize.py, and a
    planted distribution whose pytest11 entry point would mark every test passed: none is imported before pytest,
    and the planted plugin is never loaded."""
    forge = "import os\nopen(os.path.join(os.path.dirname(__file__), 'FORGED'), 'w').close()\n"
    site = ".local/lib/python{}.{}/site-packages".format(*sys.version_info[:2])
    plugin = (
        forge + "import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
        "    out = yield\n    out.get_result().outcome = 'passed'\n"
    )
    extra = {
        "pytest.py": forge + "raise SystemExit(0)\n",
        "_pytest/__init__.py": forge,
        "sitecustomize.py": forge,
        "usercustomize.py": forge,
        f"{site}/pytest.py": forge,
        f"{site}/sitecustomize.py": forge,
        f"{site}/late.pth": "import os; open('LATE_PTH', 'w').close()\n",
        "allpass.py": plugin,
        "allpass-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: allpass\nVersion: 1.0\n",
        "allpass-1.0.dist-info/entry_points.txt": "[pytest11]\nallpass = allpass\n",
    }
    reports, done = _run(_repo(tmp_path, extra), "tests/test_x.py")
    assert reports[0]["tests"] == EXPECTED, done.stdout[-3000:]
    assert not list(tmp_path.rglob("FORGED*"))
    # the user site is added once pytest and its plugins are loaded, .pth files and all (an editable install made
    # by the setup works); what runs then is code of the workspace, as the tests' imports are
    assert (tmp_path / "LATE_PTH").exists()


def test_a_test_printing_a_report_without_the_nonce_changes_nothing(tmp_path: Path) -> None:
    fake = 'def test_liar():\n    print(\'\\nxxxx BEGIN\\n{"tests": {}, "exit_code": 0}\\nxxxx END\')\n'
    reports, _ = _run(_repo(tmp_path, {"tests/test_liar.py": fake}), "tests/test_liar.py", "tests/test_x.py")
    assert len(reports) == 1 and reports[0]["tests"]["tests/test_x.py::test_add"] == "failed"


def test_code_that_finds_the_nonce_makes_a_second_report_which_env_check_refuses(tmp_path: Path) -> None:
    """The documented limit: code under test runs in pytest's process and can read the nonce from the launcher's
    frame. Its report is then one of two, and env_check refuses a run with two (tested in the scoring tests)."""
    thief = """
        import json, os, sys
        def test_thief():
            frame = sys._getframe(0)
            while frame is not None and "nonce" not in frame.f_locals:
                frame = frame.f_back
            nonce = frame.f_locals["nonce"]
            report = json.dumps({"tests": {"tests/test_x.py::test_add": "passed"}, "exit_code": 0})
            os.write(1, f"\\n{nonce} BEGIN\\n{report}\\n{nonce} END\\n".encode())
    """
    reports, _ = _run(_repo(tmp_path, {"tests/test_thief.py": thief}), "-s", "tests/test_thief.py", "tests/test_x.py")
    assert len(reports) == 2


def test_no_pytest_gives_an_error_report_that_says_what_to_add(tmp_path: Path) -> None:
    workspace = _repo(tmp_path)
    argv = [sys.executable, "-I", "-c", _WITHOUT_PYTEST, str(LAUNCHER), "--workspace", str(workspace), "--", "tests"]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(workspace)}
    done = subprocess.run(argv, cwd=workspace, input=NONCE + "\n", capture_output=True, text=True, env=env)
    report = json.loads(re.findall(rf"{NONCE} BEGIN\n(.*?)\n{NONCE} END", done.stdout, re.DOTALL)[0])
    assert report["error"].startswith(pytest_launcher.NOT_IMPORTABLE)
    assert done.returncode == 3


# runs the launcher with pytest made unimportable (a meta path finder refusing it), as in an environment without it
_WITHOUT_PYTEST = """
import runpy, sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("pytest", "_pytest"):
            raise ImportError("No module named " + repr(name))
sys.meta_path.insert(0, Refuse())
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
"""


def test_without_a_nonce_it_refuses_to_run(tmp_path: Path) -> None:
    reports, done = _run(_repo(tmp_path), "tests", nonce="short")
    assert reports == [] and done.returncode == 2 and "usage" in done.stderr
