"""Which Python the sandbox runs (issue 39): assay's own when the sandbox's user can run it, else any other
CPython 3.8+ it can run (a root user's pyenv Python under /root is none), recorded in the isolation details; or an
error that names what to install."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from assay.sandbox import Limits, Sandbox, bwrap
from tests.sandbox.sandbox_support import needs_bwrap


def _fake(folder: Path, name: str, says: str) -> str:
    path = folder / name
    path.write_text(f"#!/bin/sh\necho '{says}'\n")
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def as_this_user(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ask the fake interpreters as this user (as root they would be asked as uid 65534, who cannot read them)."""
    monkeypatch.setattr(bwrap, "_as_sandbox_user", lambda: {})


def test_the_candidates_are_this_python_then_any_python3_newest_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("python3.99", "python3.7", "python3.12-config", "python3", "pythonista"):
        _fake(tmp_path, name, "cpython 3.99 /usr")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    found = bwrap._pythons(None)
    assert found[0] == os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    mine = [p for p in found if p.startswith(str(tmp_path))]
    assert [Path(p).name for p in mine] == ["python3.99", "python3.7", "python3"]
    assert bwrap._pythons("/opt/py/bin/python3") == ["/opt/py/bin/python3"]  # a named one alone


def test_only_a_cpython_3_8_or_newer_outside_the_sandboxs_own_mounts_is_taken(
    tmp_path: Path, as_this_user: None
) -> None:
    assert bwrap._ask_python(_fake(tmp_path, "pypy", "pypy 3.10 /opt/pypy")) == "pypy 3.10, not CPython"
    assert bwrap._ask_python(_fake(tmp_path, "old", "cpython 3.7 /opt/py37")) == "CPython 3.7, older than 3.8"
    said = bwrap._ask_python(_fake(tmp_path, "tmp", "cpython 3.12 /tmp/py312"))
    assert isinstance(said, str) and "is under /tmp, which the sandbox replaces with its own" in said
    if not str(tmp_path).startswith("/tmp/"):
        assert bwrap._ask_python(_fake(tmp_path, "ok", "cpython 3.9 /opt/py39")) == ("3.9", "/opt/py39")


def test_without_a_usable_python_the_error_names_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, as_this_user: None
) -> None:
    old = _fake(tmp_path, "python3.7", "cpython 3.7 /opt/py37")
    monkeypatch.setattr(bwrap, "_pythons", lambda wanted: [old, "/nonexistent/python3"])
    with pytest.raises(bwrap.SandboxUnavailable) as caught:
        bwrap._choose_python(None)
    said = str(caught.value)
    assert said.startswith("code sandbox: no CPython 3.8 or newer that ")
    assert f"{old}: CPython 3.7, older than 3.8" in said and "/nonexistent/python3: FileNotFoundError" in said
    assert "`apt-get install python3` (Debian, Ubuntu) or `dnf install python3` (Fedora)" in said
    assert "ASSAY_SANDBOX_PYTHON" in said


@needs_bwrap
def test_the_python_the_sandbox_runs_is_the_one_recorded() -> None:
    async def go() -> tuple[bwrap.Host, bytes]:
        async with Sandbox(Limits(timeout_s=20)) as box:
            code = "import sys; print(sys.implementation.name, '%d.%d' % sys.version_info[:2])"
            done = await box.exec([box.python, "-I", "-c", code])
            return box.host, done.stdout

    host, out = asyncio.run(go())
    assert out.decode().split() == ["cpython", host.python_version]
    said = host.isolation()["python"]
    assert said.startswith(f"{host.python} (CPython {host.python_version})")
    mine = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert (f"assay and the tests' process run {mine}" in said) == (host.python_version != mine)
