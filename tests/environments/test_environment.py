"""A bubblewrap environment from creation to removal: workspace at /workspace, setup, check files for one program
only, packages importable, no network, the sample's limits, and nothing left behind."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

import pytest

from assay.environments import get_provider
from assay.environments.base import EnvironmentFailed, EnvironmentLimits
from assay.environments.bwrap_env import BwrapEnvironment
from tests.environments.env_support import FAST, environment, needs_bwrap, spec

pytestmark = needs_bwrap


async def test_programs_run_in_the_workspace_with_its_files() -> None:
    async with environment(spec(files={"a.txt": "A\n"}), {"files": {"b/c.txt": "C\n"}}) as env:
        done = await env.exec(["bash", "-c", 'pwd; echo "$HOME"; cat a.txt b/c.txt; id -un'])
        assert done.stdout.decode().split() == ["/workspace", "/workspace", "A", "C", "sandbox"]
        there = await env.exec(["pwd"], cwd="b")
        assert there.stdout == b"/workspace/b\n"
        fed = await env.exec(["bash", "-c", 'cat; echo "$X"'], input=b"in\n", env={"X": "y"})
        assert fed.stdout == b"in\ny\n"


async def test_setup_runs_before_and_its_failure_names_exit_code_and_output() -> None:
    async with environment(spec(setup="echo ready > state.txt; mkdir -p build")) as env:
        assert env.read_file("state.txt") == b"ready\n"
        assert env.initial_file("state.txt") is None  # made by setup, not by the task
    with pytest.raises(EnvironmentFailed, match=r"exited with 3:\n(.|\n)*line 1\n(.|\n)*compiler missing"):
        await BwrapEnvironment.create(spec(setup="echo line 1; echo compiler missing >&2; exit 3"), {}, "s")
    slow = spec(setup="sleep 5", limits=replace(FAST, command_timeout_s=0.5))
    started = time.monotonic()
    with pytest.raises(EnvironmentFailed, match="timed out"):
        await BwrapEnvironment.create(slow, {}, "s")
    assert time.monotonic() - started < 3


async def test_check_files_are_seen_only_by_the_program_that_asks_and_read_only() -> None:
    async with environment() as env:
        env.add_check_files({"test_hidden.py": b"def test_x():\n    assert True\n", "data/expected.txt": b"42\n"})
        agent = await env.exec(["bash", "-c", "ls /assay-check 2>&1; ls -a / | grep -c check"])
        assert b"No such file" in agent.stdout and agent.stdout.endswith(b"0\n"), agent
        check = await env.exec(
            ["bash", "-c", "cat /assay-check/data/expected.txt; echo x > /assay-check/evil 2>&1 || echo refused"],
            check_files=True,
        )
        assert check.stdout.startswith(b"42\n") and b"refused" in check.stdout, check
        assert env.list_files() == []  # never copied into the workspace


async def test_packages_are_importable_and_nothing_else_of_the_host_is() -> None:
    async with environment(spec(packages=("pytest",))) as env:
        env.write_file("test_ok.py", "def test_ok():\n    assert 1 + 1 == 2\n")
        ran = await env.exec(["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_ok.py"])
        assert ran.returncode == 0 and b"1 passed" in ran.stdout, ran
        other = await env.exec(["python3", "-c", "import numpy"])
        assert other.returncode != 0 and b"ModuleNotFoundError" in other.stderr
    with pytest.raises(EnvironmentFailed, match="not-a-real-dist"):
        await BwrapEnvironment.create(spec(packages=("not-a-real-dist",)), {}, "s")


async def test_network_is_off_unless_asked() -> None:
    async with environment() as env:
        devices = await env.exec(["cat", "/proc/net/dev"])
        names = {line.split(":")[0].strip() for line in devices.stdout.decode().splitlines()[2:]}
        assert names == {"lo"}
        connect = await env.exec(
            ["python3", "-c", "import socket; socket.create_connection(('1.1.1.1', 53), timeout=2)"]
        )
        assert connect.returncode != 0
    host = {line.split(":")[0].strip() for line in Path("/proc/net/dev").read_text().splitlines()[2:]}
    async with environment(spec(limits=replace(FAST, network=True))) as env:
        devices = await env.exec(["cat", "/proc/net/dev"])
        names = {line.split(":")[0].strip() for line in devices.stdout.decode().splitlines()[2:]}
        assert names == host


async def test_memory_processes_and_disk_are_limited_for_the_sample() -> None:
    limits = EnvironmentLimits(memory_mb=128, max_processes=8, disk_mb=8, command_timeout_s=10, wall_s=60)
    async with environment(spec(limits=limits)) as env:
        hog = await env.exec(["python3", "-c", "x = bytearray(400 << 20); print('allocated')"])
        assert hog.returncode != 0 and b"allocated" not in hog.stdout, hog  # one process: its own limit
        each = "x = bytearray(50 << 20); import time; time.sleep(0.5); print('kept')"
        together = await env.exec(["bash", "-c", f'for i in 1 2 3; do python3 -c "{each}" & done; wait'])
        assert together.stdout.count(b"kept") < 3 and env._box is not None and env._box.out_of_memory(), together
        forker = (
            "import os, time\nmade = 0\ntry:\n    for _ in range(20):\n        if os.fork() == 0:\n"
            "            time.sleep(2); os._exit(0)\n        made += 1\nexcept OSError as err:\n"
            "    print('refused after', made, err.errno)\n"
        )
        forks = await env.exec(["python3", "-c", forker])
        said = forks.stdout.decode().split()
        assert said[:2] == ["refused", "after"] and int(said[2]) < 8, forks
        disk = await env.exec(["bash", "-c", "for i in 1 2 3; do head -c 4M /dev/zero > f$i || exit 9; done"])
        assert disk.returncode == 9 and b"No space left" in disk.stderr, disk


async def test_wall_time_cuts_programs_then_every_call_fails_fast() -> None:
    async with environment(spec(limits=replace(FAST, wall_s=1.0))) as env:
        cut = await env.exec(["sleep", "5"])
        assert cut.timed_out and cut.seconds < 2
        started = time.monotonic()
        with pytest.raises(EnvironmentFailed, match="wall time"):
            await env.exec(["true"])
        with pytest.raises(EnvironmentFailed, match="wall time"):
            await env.shell()
        assert time.monotonic() - started < 0.5


async def test_close_removes_everything_and_is_idempotent() -> None:
    env = await get_provider().create(spec(files={"x": "1"}), {}, "closing")
    sh = await env.shell()
    await sh.run("sleep 60 &", timeout_s=5)
    assert isinstance(env, BwrapEnvironment)
    folder, box = env._dir, env._box
    assert folder is not None and box is not None and box._cgroup is not None
    cgroup = box._cgroup.path
    await env.close()
    await env.close()
    assert not folder.exists() and not os.path.exists(cgroup)
    assert str(folder) not in Path("/proc/self/mounts").read_text()
    with pytest.raises(EnvironmentFailed, match="closed"):
        await env.exec(["true"])


async def test_a_failed_creation_leaves_nothing() -> None:
    from assay.environments.cleanup import base_dir

    before = set(os.listdir(base_dir()))
    with pytest.raises(EnvironmentFailed, match="exited with 1"):
        await BwrapEnvironment.create(spec(files={"a": "b"}, setup="false"), {}, "fails")
    with pytest.raises(EnvironmentFailed, match="leaves"):
        await BwrapEnvironment.create(spec(files={"../a": "b"}), {}, "fails")
    assert set(os.listdir(base_dir())) == before


async def test_cancellation_during_setup_or_use_leaves_nothing() -> None:
    import asyncio

    from assay.environments.cleanup import base_dir

    before = set(os.listdir(base_dir()))
    making = asyncio.create_task(BwrapEnvironment.create(spec(setup="sleep 30"), {}, "cancelled"))
    await asyncio.sleep(0.3)
    making.cancel()
    with pytest.raises(asyncio.CancelledError):
        await making
    assert set(os.listdir(base_dir())) == before

    async def use() -> None:
        async with environment() as env:
            shell = await env.shell()
            await shell.run("sleep 30", timeout_s=20)

    using = asyncio.create_task(use())
    await asyncio.sleep(0.3)
    using.cancel()
    with pytest.raises(asyncio.CancelledError):
        await using
    assert set(os.listdir(base_dir())) == before
