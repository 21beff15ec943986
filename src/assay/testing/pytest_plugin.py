"""The pytest plugin (entry point ``pytest11``): where evaluation runs go, the run folder in each test's report,
and the ``assay_samples`` marker that makes each sample of a dataset its own test case (``assay_case``).

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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    """While a test runs, evaluations go to the session's runs folder and their run folders are recorded as the
    test's ``assay_run`` properties (JUnit XML shows them; pytest-xdist carries them to the controller)."""
    from assay.testing import evaltest

    def record(path: Path) -> None:
        item.user_properties.append(("assay_run", str(path)))

    tokens = (evaltest.RUNS_DIR.set(runs_dir(item.config)), evaltest.ON_RUN.set(record))
    try:
        return (yield)
    finally:
        evaltest.ON_RUN.reset(tokens[1])
        evaltest.RUNS_DIR.reset(tokens[0])


@pytest.fixture
def assay_runs_dir(request: pytest.FixtureRequest) -> Path:
    """The folder where this session's evaluation runs are kept."""
    return runs_dir(request.config)
