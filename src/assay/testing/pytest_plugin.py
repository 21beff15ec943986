"""The pytest plugin (entry point ``pytest11``): where evaluation runs go, the run folder in each test's report,
the ``assay_samples`` marker that makes each sample of a dataset its own test case (``assay_case``), each
evaluation isolated from the session (``--assay-isolation``: an agent that calls ``os._exit`` or raises
``KeyboardInterrupt`` fails its own test), and the reports of tests that evaluated something redacted
(:func:`assay.secrets.redact_text`) before the terminal or ``--junitxml`` writes them.

Loaded in every pytest session of an environment with assay installed, so it imports nothing heavy until used.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

MARKER = "assay_samples"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("assay", "assay evaluations")
    group.addoption(
        "--assay-runs",
        dest="assay_runs",
        default=None,
        help="folder for the run folders of assert_eval (default: the ini option assay_runs, else runs/pytest)",
    )
    parser.addini("assay_runs", "folder for the run folders of assert_eval", default="runs/pytest")
    group.addoption(
        "--assay-isolation",
        dest="assay_isolation",
        choices=("fork", "none"),
        default=None,
        help="how assert_eval isolates an evaluation from the session: fork (a child process per assert_eval, the "
        "default where the platform forks) or none (this process; only exceptions are caught)",
    )
    parser.addini("assay_isolation", "fork or none (see --assay-isolation)", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(task, limit=None): run the test once per sample of the task (a file, config or Task); "
        "the test takes the `assay_case` argument",
    )


def runs_dir(config: pytest.Config) -> Path:
    """Where this session's evaluation runs go (relative paths are under the rootdir)."""
    value = config.getoption("assay_runs") or config.getini("assay_runs")
    path = Path(str(value))
    return path if path.is_absolute() else config.rootpath / path


def isolation(config: pytest.Config) -> str:
    """How this session isolates evaluations: the option, the ini value, else fork where the platform has it."""
    from assay.testing.isolation import MODES, default_mode

    value = config.getoption("assay_isolation") or str(config.getini("assay_isolation") or "").strip()
    if value and value not in MODES:
        raise pytest.UsageError(f"assay_isolation: 'fork' or 'none', got {value!r}")
    return value or default_mode()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker(MARKER)
    if marker is None:
        return
    if "assay_case" not in metafunc.fixturenames:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: @{MARKER} needs the test to take `assay_case`")
    from assay.tasks import Task, load_task
    from assay.testing.evaltest import SampleCase, case_id

    source = marker.args[0] if marker.args else marker.kwargs.get("task")
    if source is None:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: @{MARKER}(task) needs a task")
    if isinstance(source, str) and not Path(source).is_absolute():
        here = Path(str(metafunc.definition.fspath)).parent / source
        source = here if here.exists() else source
    task = source if isinstance(source, Task) else load_task(source)
    samples = task.samples(limit=marker.kwargs.get("limit"))
    cases = [SampleCase(task, s) for s in samples]
    metafunc.parametrize("assay_case", cases, ids=[case_id(c) for c in cases])


EVALUATED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    """While a test runs, evaluations go to the session's runs folder, isolated from the session, and their run
    folders are recorded as the test's ``assay_run`` properties (JUnit XML shows them; pytest-xdist carries them to
    the controller)."""
    from assay.testing import evaltest

    def record(path: Path) -> None:
        item.user_properties.append(("assay_run", redact_text(str(path))))

    def evaluated() -> None:
        item.stash[EVALUATED] = True

    runs = evaltest.RUNS_DIR.set(runs_dir(item.config))
    on_run = evaltest.ON_RUN.set(record)
    on_eval = evaltest.ON_EVAL.set(evaluated)
    isolating = evaltest.ISOLATION.set(isolation(item.config))
    try:
        return (yield)
    finally:
        evaltest.ISOLATION.reset(isolating)
        evaltest.ON_EVAL.reset(on_eval)
        evaltest.ON_RUN.reset(on_run)
        evaltest.RUNS_DIR.reset(runs)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """A test that evaluated something (or is a sample case) has its report redacted before anything writes it:
    the failure's text, the arguments and locals of its frames, and its captured output."""
    report = yield
    if item.stash.get(EVALUATED, False) or "assay_case" in getattr(item, "fixturenames", ()):
        _redact_report(report)
    return report


def redact_text(text: str) -> str:
    from assay.secrets import redact_text as redact

    return redact(text)


def _redact_report(report: pytest.TestReport) -> None:
    if report.longrepr is not None:
        if isinstance(report.longrepr, str):
            report.longrepr = redact_text(report.longrepr)
        elif isinstance(report.longrepr, tuple):
            path, line, message = report.longrepr
            report.longrepr = (path, line, redact_text(message))
        else:
            _redact_object(report.longrepr, set())
    report.sections = [(title, redact_text(content)) for title, content in report.sections]
    report.user_properties = [
        (name, redact_text(value) if isinstance(value, str) else value) for name, value in report.user_properties
    ]


def _redact_object(obj: Any, seen: set[int]) -> None:
    """Every string held by pytest's failure representation (its entries' lines, the frames' arguments and
    locals, the crash message), redacted in place: the report keeps its shape and its colours."""
    if id(obj) in seen:
        return
    seen.add(id(obj))
    fields = getattr(obj, "__dict__", None)
    if not isinstance(fields, dict):
        return
    for name, value in list(fields.items()):
        new = _redacted_value(value, seen)
        if new is not value:
            object.__setattr__(obj, name, new)


def _redacted_value(value: Any, seen: set[int]) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, list):
        value[:] = [_redacted_value(v, seen) for v in value]
        return value
    if isinstance(value, tuple):
        return tuple(_redacted_value(v, seen) for v in value)
    if isinstance(value, dict):
        for k, v in list(value.items()):
            value[k] = _redacted_value(v, seen)
        return value
    if hasattr(value, "__dict__") and not isinstance(value, type):
        _redact_object(value, seen)
    return value


@pytest.fixture
def assay_runs_dir(request: pytest.FixtureRequest) -> Path:
    """The folder where this session's evaluation runs are kept."""
    return runs_dir(request.config)
