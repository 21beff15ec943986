"""The run folder's lock: one writer at a time, a clear error naming the holder, no stale lock after a kill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from assay.runner.lock import LOCK, RunLockedError, run_lock

HOLD = """
import sys, time
from pathlib import Path
from assay.runner.lock import run_lock
with run_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(60)
"""


def _holder(run_dir: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(run_dir)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_second_writer_gets_an_error_naming_the_holder(tmp_path: Path) -> None:
    proc = _holder(tmp_path)
    try:
        with pytest.raises(RunLockedError, match=rf"process {proc.pid} is writing it"), run_lock(tmp_path):
            pass
    finally:
        proc.kill()
        proc.wait()


def test_lock_of_a_killed_process_does_not_block(tmp_path: Path) -> None:
    proc = _holder(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert (tmp_path / LOCK).read_text().strip() == str(proc.pid)  # the stale PID is still in the file
    with run_lock(tmp_path):
        assert (tmp_path / LOCK).read_text().strip() == str(os.getpid())


def test_lock_is_released_when_the_writer_is_done(tmp_path: Path) -> None:
    with run_lock(tmp_path):
        pass
    proc = _holder(tmp_path)  # another process can take it at once
    proc.kill()
    proc.wait()
