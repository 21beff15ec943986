"""Totals for a whole sample: the memory of all its processes (and memory-backed files) together, and the size and
number of all its files together, beside the per-process and per-file limits.

They hold where assay may make a memory cgroup and mount a tmpfs (as root on a machine or VM; not as another user,
nor in a container without CAP_SYS_ADMIN): the sandbox says in its isolation details which hold, and these tests
skip what it says does not hold here.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

from assay import evaluators
from assay.sandbox import ExecResult, Limits, Sandbox
from assay.sandbox.bwrap import find_host
from assay.verdict import Verdict
from tests.sandbox.sandbox_support import needs_bwrap

pytestmark = needs_bwrap


def _need(kind: str) -> None:
    """Skip unless the sandbox says the ``kind`` ("memory" or "disk") total holds on this machine."""
    said = find_host().isolation()[kind]
    if "no total" in said:
        pytest.skip(f"no {kind} total here: {said}")


def _exec(code: str, expected: Any, **options: Any) -> Verdict:
    settings: dict[str, Any] = {"allow_untrusted_code": True, "timeout_s": 20, **options}
    return evaluators.get("code_exec", **settings).evaluate(textwrap.dedent(code), expected)


def _failed(v: Verdict) -> None:
    assert not v.passed and v.score == 0.0 and not v.is_error, v


def _leftovers() -> tuple[set[str], set[str]]:
    """Sandbox directories in the temp directory, and sandbox mounts anywhere."""
    dirs = {p.name for p in Path(tempfile.gettempdir()).iterdir() if p.name.startswith("assay-sandbox-")}
    mounts = {line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines() if "assay-" in line}
    return dirs, mounts


CHILDREN = """
import os
def children(n=3, mb=150):
    pids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            block = bytearray(mb << 20)
            for i in range(0, len(block), 4096):  # touched: resident, not just reserved
                block[i] = 1
            os._exit(0)
        pids.append(pid)
    return sum(1 for p in pids if os.waitpid(p, 0)[1] == 0)
"""


def test_processes_together_stay_within_the_total_memory() -> None:
    """Three processes of 150 MB each fit the 256 MB per process, not a 256 MB total."""
    _need("memory")
    v = _exec(CHILDREN, ["assert children() == 3"], memory_mb=256, memory_total_mb=256)
    _failed(v)
    assert "256 MB" in (v.reason or ""), v.reason
    assert _exec(CHILDREN, ["assert children(n=2, mb=60) == 2"], memory_mb=256, memory_total_mb=256).passed


def test_one_process_past_the_total_is_a_crash_saying_so() -> None:
    _need("memory")
    code = "def big():\n    b = bytearray(400 << 20)\n    b[::4096] = b'x' * len(b[::4096])\n    return len(b)\n"
    v = _exec(code, ["assert big() == 400 << 20"], memory_mb=1024, memory_total_mb=256)
    _failed(v)
    assert v.details["outcome"] == "crashed" and "out of memory" in (v.reason or ""), v


def test_files_together_stay_within_the_disk_limit() -> None:
    """Twenty files of 10 MB each: each below the 16 MB per file, together past 64 MB."""
    _need("disk")
    code = """
    import os
    def fill(where=".", n=20):
        written = 0
        for i in range(n):
            with open(os.path.join(where, f"f{i}"), "wb") as fh:
                fh.write(b"x" * (10 << 20))
            written += 10 << 20
        return written
    def split():
        return fill("/tmp", 4) + fill(".", 4)  # 80 MB between /tmp and the work directory
    """
    before = _leftovers()
    _failed(_exec(code, ["assert fill() == 200 << 20"], disk_mb=64))
    _failed(_exec(code, ["assert split() == 80 << 20"], disk_mb=64))
    assert _exec(code, ["assert fill(n=3) == 30 << 20"], disk_mb=64).passed
    assert _leftovers() == before  # each sample's tmpfs is unmounted and removed


def _in_box(script: str, limits: Limits) -> tuple[ExecResult, ExecResult, dict[str, str]]:
    async def go() -> tuple[ExecResult, ExecResult, dict[str, str]]:
        async with Sandbox(limits) as box:
            first = await box.exec(["bash", "-c", script])
            again = await box.exec(["bash", "-c", "ls | wc -l; ls /tmp | wc -l"])
            return first, again, box.host.isolation(limits)

    return asyncio.run(go())


def test_a_sandbox_kept_for_many_calls_keeps_its_totals_across_them() -> None:
    """An agent's sandbox: files persist between calls, and so does what they use of the limit."""
    _need("disk")
    limits = Limits(timeout_s=20, disk_mb=8, max_files=200)
    script = "for i in $(seq 300); do touch f$i 2>/dev/null || break; done; touch /tmp/t; ls | wc -l"
    first, again, isolation = _in_box(script, limits)
    assert int(first.stdout) < 200, first
    assert again.stdout.split()[0] == first.stdout.strip()  # the files stayed; /tmp is in the same tmpfs
    assert "8 MB and 200 files" in isolation["disk"]


def test_nothing_is_left_behind(tmp_path: Path) -> None:
    _need("disk")
    own = f"assay-{os.getpid()}-"
    host = find_host()
    groups = host.memory_cgroups.parent if host.memory_cgroups is not None else None
    before = _leftovers()
    for _ in range(3):
        assert _exec("def f():\n    open('x', 'w').write('y')\n    return 1\n", ["assert f() == 1"]).passed
    assert _leftovers() == before
    if groups is not None:
        assert [n for n in os.listdir(groups) if n.startswith(own)] == []


def test_what_a_killed_run_left_is_removed_by_the_next() -> None:
    """A sandbox's tmpfs and cgroup carry the pid of the process that made them; one whose process is gone goes."""
    _need("disk")
    import subprocess

    from assay.sandbox import diskfs
    from assay.sandbox.cgroup import find_memory_cgroups

    gone = subprocess.Popen(["true"])
    gone.wait()
    base = find_host().workdir_base()
    left = tempfile.mkdtemp(prefix=f"assay-sandbox-{gone.pid}-", dir=base)
    diskfs.mount_tmpfs(left, 1, 64, None)
    groups = find_memory_cgroups()
    stale = os.path.join(groups.parent, f"assay-{gone.pid}-0") if groups is not None else None
    if stale is not None:
        os.mkdir(stale)
    diskfs.sweep(base)
    if groups is not None:
        groups.sweep()
    assert not os.path.exists(left)
    assert stale is None or not os.path.exists(stale)
