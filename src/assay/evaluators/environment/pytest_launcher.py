"""env_check's pytest launcher: run inside a sample's environment as ``python3 -I /assay-check/assay_run_pytest.py
--workspace /workspace -- PYTEST_ARGS`` with a per-check nonce on stdin, it reports each test's outcome
(node id -> passed, failed, error, skipped, xfailed, xpassed) as one JSON block between nonce-marked lines.

Shipped as a data file and run as a script by any CPython 3.8+ (standard library and pytest only). What it keeps
the workspace from deciding: pytest and its plugins are imported before any workspace folder is on ``sys.path``
(``-I`` drops the user site under HOME=/workspace, PYTHONPATH and the current folder; PYTHONPATH entries outside the
workspace are added back), so a ``pytest.py``, ``_pytest/`` or a planted ``*.dist-info`` entry point in the
workspace cannot stand in for them; compiled files are read from and written to a fresh folder
(``sys.pycache_prefix``), so a planted ``__pycache__`` cannot replace a hidden test; the report goes to a copy of
stdout taken at start, between lines holding the nonce (read from stdin, never in argv or the environment), so a
test or the code under test printing a report, or closing stdout, does not make one.

What it cannot stop, and nothing running the code under test in pytest's process can (SWE-bench's harness, which
reads pytest's log, neither): code imported by the tests runs in this process and may rewrite pytest's reports,
find the nonce in memory, or end the process. A report made twice is refused (see ``env_check``), and a process
ended before reporting reports nothing, so every listed test counts as failed; the rest is the task's to guard
(``protect`` the tests themselves).
"""

from __future__ import annotations

import contextlib
import json
import os
import site
import sys
import tempfile

REPORT_FD = os.dup(1)  # the report's own copy of stdout, taken before any other code ran
NOT_IMPORTABLE = "pytest is not importable in the environment: add `packages: [pytest]` to the task's environment"
WORST = ("failed", "error")


def _emit(nonce: str, report: dict) -> None:
    """Write the one report block to the private copy of stdout."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()  # what pytest printed goes before the report
    block = f"\n{nonce} BEGIN\n{json.dumps(report, sort_keys=True)}\n{nonce} END\n".encode()
    while block:
        block = block[os.write(REPORT_FD, block) :]


def _inside(path: str, workspace: str) -> bool:
    """Whether a sys.path entry is the workspace or below it ('' is the current folder)."""
    real = os.path.realpath(path or os.getcwd())
    return real == workspace or real.startswith(workspace + os.sep)


def _outcome(report: object) -> str | None:
    """A test report's outcome in pytest's words (what ``-rA`` prints), or None for a phase that decides nothing."""
    when, outcome = getattr(report, "when", None), getattr(report, "outcome", None)
    xfail = hasattr(report, "wasxfail")
    if outcome == "failed":
        return "failed" if when == "call" else "error"
    if outcome == "skipped":
        return "xfailed" if xfail else "skipped"
    if when == "call":
        return "xpassed" if xfail else "passed"
    return None


class Outcomes:
    """A pytest plugin keeping every test's outcome, and putting the workspace on sys.path once plugins loaded."""

    def __init__(self, late_paths: list) -> None:
        self.tests: dict = {}
        self.late_paths = late_paths

    def pytest_load_initial_conftests(self) -> None:
        # entry-point plugins are loaded by now: the workspace may come onto sys.path for conftests and tests
        for path in self.late_paths:
            if not os.path.isdir(path) or path in sys.path:
                continue
            if path.endswith("site-packages"):
                site.addsitedir(path)  # its .pth files too (an editable install made by the setup)
            else:
                sys.path.append(path)

    def pytest_collectreport(self, report: object) -> None:
        if getattr(report, "outcome", None) == "failed":
            self.tests[getattr(report, "nodeid", "") or "<collection>"] = "error"

    def pytest_runtest_logreport(self, report: object) -> None:
        outcome = _outcome(report)
        nodeid = getattr(report, "nodeid", "")
        if outcome is not None and self.tests.get(nodeid) not in WORST:
            self.tests[nodeid] = outcome


def main(argv: list) -> int:
    nonce = sys.stdin.readline().strip()
    if len(nonce) < 16 or "--workspace" not in argv or "--" not in argv:
        sys.stderr.write("usage: echo NONCE | python3 -I run_pytest.py --workspace DIR -- PYTEST_ARGS\n")
        return 2
    workspace = os.path.realpath(argv[argv.index("--workspace") + 1])
    pytest_args = argv[argv.index("--") + 1 :]
    late = [p for p in sys.path if _inside(p, workspace)]
    sys.path[:] = [p for p in sys.path if not _inside(p, workspace)]
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if entry:
            (late if _inside(entry, workspace) else sys.path).append(entry)
    late = [workspace, *late, site.getusersitepackages()]
    sys.pycache_prefix = tempfile.mkdtemp(prefix="assay-pycache-")
    sys.dont_write_bytecode = False
    try:
        import pytest
    except Exception as exc:  # ImportError, or a broken install
        _emit(nonce, {"error": f"{NOT_IMPORTABLE} ({type(exc).__name__}: {exc})"})
        return 3
    plugin = Outcomes(late)
    args = ["-p", "no:cacheprovider", "-rA", f"--rootdir={workspace}", *pytest_args]
    try:
        code = int(pytest.main(args, plugins=[plugin]))
    except BaseException as exc:  # SystemExit or worse from the code under test: outcomes so far, and why it ended
        _emit(nonce, {"tests": plugin.tests, "exit_code": None, "ended": f"{type(exc).__name__}: {exc}"})
        return 1
    _emit(nonce, {"tests": plugin.tests, "exit_code": code})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
