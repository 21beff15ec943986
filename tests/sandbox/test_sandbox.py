"""The sandbox on its own (what the agent tools will reuse): bash and Python run in it, files persist between
calls, processes do not, and what it can see and do is the OS read-only plus its own work directory."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from assay.sandbox import ExecResult, Limits, Sandbox
from assay.sandbox.bwrap import HOST_UID, find_host
from tests.sandbox.sandbox_support import needs_bwrap
from tests.support import await_for

pytestmark = needs_bwrap

ROOT = os.geteuid() == 0
T = TypeVar("T")


def _in_box(body: Callable[[Sandbox], Awaitable[T]], limits: Limits | None = None) -> T:
    async def go() -> T:
        async with Sandbox(limits or Limits(timeout_s=10)) as box:
            return await body(box)

    return asyncio.run(go())


def _sh(box: Sandbox, script: str, **kw: float) -> Awaitable[ExecResult]:
    return box.exec(["bash", "-c", script], **kw)  # type: ignore[arg-type]


def test_bash_and_python_run_and_files_persist_between_calls() -> None:
    async def body(box: Sandbox) -> tuple[ExecResult, ExecResult, ExecResult, Path]:
        box.write_file("data.csv", "a,b\n1,2\n")
        first = await _sh(box, "wc -l < data.csv; echo made > made.txt; pwd; id -un; ls -l data.csv | cut -d' ' -f3")
        second = await box.exec([box.python, "-c", "print(open('made.txt').read().strip())"])
        piped = await box.exec(["cat"], input=b"from stdin")
        return first, second, piped, box.workdir

    first, second, piped, workdir = _in_box(body)
    assert first.returncode == 0, first
    assert first.stdout.decode().split() == ["2", "/sandbox", "sandbox", "sandbox"]
    assert second.stdout == b"made\n" and piped.stdout == b"from stdin"
    assert not workdir.exists()  # removed when the sandbox closed


def test_processes_do_not_outlive_their_call_and_time_limits_kill() -> None:
    async def body(box: Sandbox) -> tuple[ExecResult, ExecResult, ExecResult]:
        background = await _sh(box, "(sleep 30 &) ; echo started")
        ps = await _sh(box, "ls /proc | grep -c '^[0-9]'")  # only this call's own processes
        slow = await _sh(box, "sleep 30", timeout=1)
        return background, ps, slow

    background, ps, slow = _in_box(body)
    assert background.stdout == b"started\n" and background.seconds < 10
    assert int(ps.stdout) <= 4  # bwrap's init, bash, ls, grep
    assert slow.timed_out and slow.seconds < 10


def test_what_the_sandbox_cannot_see_or_do(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("HOST-SECRET")
    checks = {
        "shadow": "cat /etc/shadow",
        "host file": f"cat {secret}",
        "home": "ls /root /home",
        "sys": "ls /sys",
        "core_pattern": "cat /proc/sys/kernel/core_pattern > /proc/sys/kernel/core_pattern",
        "write /usr": "touch /usr/x",
        "write /": "touch /x",
        "write /dev": "touch /dev/x",
        "new user namespace": "unshare -U true",
        "network": "exec 3<>/dev/tcp/127.0.0.1/22",
        "setuid": "su -c true",
    }

    async def body(box: Sandbox) -> dict[str, ExecResult]:
        return {name: await _sh(box, script) for name, script in checks.items()}

    results = _in_box(body)
    allowed = {name: r for name, r in results.items() if r.returncode == 0}
    assert allowed == {}
    assert all(b"HOST-SECRET" not in r.stdout + r.stderr for r in results.values())


FORKS = """
import os, time
n = 0
for _ in range(20):
    try:
        if os.fork() == 0:
            time.sleep(3)
            os._exit(0)
        n += 1
    except OSError:
        break
print(n)
"""


def test_limits_hold_inside() -> None:
    limits = Limits(timeout_s=10, memory_mb=128, max_processes=8, file_mb=1, tmp_mb=2, disk_mb=2)

    async def body(box: Sandbox) -> dict[str, ExecResult]:
        return {
            "memory": await box.exec([box.python, "-c", "b = bytearray(512 * 2**20)"]),
            "processes": await box.exec([box.python, "-c", FORKS]),
            "file size": await _sh(box, "head -c 2000000 /dev/zero > big; stat -c %s big"),
            "tmp": await _sh(box, "for i in 1 2 3; do head -c 900000 /dev/zero > /tmp/f$i || exit 1; done"),
        }

    r = _in_box(body, limits)
    assert r["memory"].returncode != 0 and b"MemoryError" in r["memory"].stderr
    assert int(r["processes"].stdout) < 8
    assert r["file size"].stdout.strip() == b"1048576"
    assert r["tmp"].returncode != 0


@pytest.mark.skipif(not ROOT, reason="as root the sandbox runs as uid 65534; as another user it runs as that user")
def test_as_root_it_runs_as_nobody_on_the_host() -> None:
    async def body(box: Sandbox) -> tuple[int, ExecResult]:
        def uids() -> list[int]:
            found = []
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    if Path(f"/proc/{pid}/cmdline").read_bytes() == b"sleep\x0020\x00":
                        found.append(os.stat(f"/proc/{pid}").st_uid)
                except OSError:
                    pass
            return found

        proc = await box.spawn(["sleep", "20"])
        running = await await_for(uids, 10, "the sandbox's `sleep 20` to run")
        proc.kill()
        return running[0], await _sh(box, "stat -c %u /sandbox; id -u")

    host_uid, inside = _in_box(body)
    assert host_uid == HOST_UID
    assert inside.stdout.split() == [b"1000", b"1000"]
    assert find_host().isolation()["user"].startswith("uid 65534")
