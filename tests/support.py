"""Helpers shared by test folders: waiting for an observable condition (never for a fixed time), and the ``assay``
command line run in this process (no interpreter to start per call)."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def wait_for(
    predicate: Callable[[], T],
    timeout: float,
    what: str,
    *,
    interval: float = 0.02,
    proc: subprocess.Popen | None = None,
) -> T:
    """Poll ``predicate`` until it returns something true, and return that; after ``timeout`` seconds fail naming
    ``what`` was waited for. With ``proc``, fail at once if that process has ended meanwhile."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the process ended (exit {proc.returncode}) while waiting for {what}")
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}, in vain")
        time.sleep(interval)


def lines_written(root: Path, pattern: str = "*/samples.jsonl") -> int:
    """The whole lines of the first file matching ``pattern`` under ``root`` (0 while there is none): how far a
    run has got."""
    found = sorted(root.glob(pattern)) if root.exists() else []
    return found[0].read_bytes().count(b"\n") if found else 0


async def await_for(predicate: Callable[[], T], timeout: float, what: str, *, interval: float = 0.01) -> T:
    """:func:`wait_for` inside an event loop: the loop runs while it waits."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}, in vain")
        await asyncio.sleep(interval)


def assay_in_process(
    *args: str, cwd: Path, env: Mapping[str, str | None] | None = None
) -> subprocess.CompletedProcess[str]:
    """``assay ARGS`` run in this process from ``cwd``, with ``env`` added to the environment meanwhile: exit code,
    stdout and stderr as a subprocess would give them (an uncaught exception's traceback is on stderr)."""
    from click.testing import CliRunner

    from assay.cli import main

    with contextlib.chdir(cwd):
        result = CliRunner().invoke(main, list(args), env=env)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))
    return subprocess.CompletedProcess(["assay", *args], result.exit_code, result.stdout, stderr)


def run_cli_in_process(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``tests.e2e.e2e_support.run_cli`` in this process: the cache under ``cwd``, 200 columns."""
    return assay_in_process(*args, cwd=cwd, env={"ASSAY_CACHE_DIR": str(cwd / "cache"), "COLUMNS": "200"})
