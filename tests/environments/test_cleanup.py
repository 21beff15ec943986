"""Leftovers of a killed run: a process that made an environment is SIGKILLed; its sandboxes die with it, and
cleanup_leftovers removes its folder, the tmpfs mounted in it and its memory cgroup; a live owner's are kept."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from assay.environments import cleanup_leftovers
from assay.environments.cleanup import base_dir
from tests.environments.env_support import needs_bwrap

pytestmark = needs_bwrap

MAKER = """
import asyncio, json, sys
from assay.environments.base import EnvironmentSpec
from assay.environments.bwrap_env import BwrapEnvironment

async def main():
    env = await BwrapEnvironment.create(EnvironmentSpec(files={"a.txt": "a"}), {}, "killed")
    shell = await env.shell()
    await shell.run("sleep 300 &", timeout_s=10)
    box = env._box
    print(json.dumps({"dir": str(env._dir), "base": str(env._dir.parent),
                      "cgroup": box._cgroup.path if box._cgroup else None}), flush=True)
    await asyncio.sleep(300)

asyncio.run(main())
"""


def test_cleanup_after_sigkill_removes_folder_mounts_and_cgroup(tmp_path: Path) -> None:
    mine = base_dir()  # this process's: alive, never removed
    proc = subprocess.Popen([sys.executable, "-c", MAKER], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        made = json.loads(proc.stdout.readline())  # type: ignore[union-attr]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert os.path.isdir(made["dir"]) and made["dir"] in Path("/proc/self/mounts").read_text()
    removed = cleanup_leftovers()
    assert made["base"] in removed and mine.is_dir()
    assert not os.path.exists(made["base"]) and made["dir"] not in Path("/proc/self/mounts").read_text()
    if made["cgroup"] is not None:
        assert not os.path.exists(made["cgroup"])
    assert cleanup_leftovers() == [] or made["base"] not in cleanup_leftovers()
