"""SIGKILL of a run whose samples each have an environment, then ``--resume``: the killed run leaves its environments
on disk (its base folder ``assay-env-<pid>-<start>``, the sample folders with their tmpfs mounts, their memory
cgroups); the resumed run removes them at its start, writes every sample exactly once with the verdicts worked out
by hand, and when it ends no environment folder, tmpfs mount or cgroup of either run is left."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

from agent_support import write_agent_task

from assay.testing.server import Conversation, ConversationReplies, OpenAITestServer
from tests.e2e.e2e_support import assay_cmd, only_run_dir, sample_lines
from tests.environments.env_support import needs_bwrap, public_dir
from tests.support import lines_written, wait_for

pytestmark = needs_bwrap

N = 36


def _writes_done(i: int) -> bool:
    return i % 4 != 3  # every fourth sample's agent forgets to write done.txt: both metrics fail it


def _rows() -> list[dict[str, Any]]:
    return [
        {
            "id": f"s{i}",
            "input": f"s{i}: put a.txt then b.txt into done.txt",
            "target": f"alpha {i}",
            "files": {"a.txt": f"alpha {i}\n", "b.txt": f"beta {i}\n", "notes/c.txt": "unused\n"},
            "expected_files": {"done.txt": f"alpha {i}\nbeta {i}\n"},
        }
        for i in range(N)
    ]


def _step(conv: Conversation) -> Any:
    i = int(conv.user.split(":")[0][1:])
    if not conv.tool_results:
        cmd = "cat a.txt b.txt > done.txt; cat done.txt" if _writes_done(i) else "cat a.txt b.txt"
        return {"tool_calls": [{"name": "bash", "arguments": {"cmd": cmd}}]}
    return conv.tool_results[0]["content"]


def _cgroup_parent() -> str | None:
    """Where sandboxes' memory cgroups go on this machine (None where it has none)."""
    from assay.sandbox.bwrap import SandboxUnavailable, find_host

    try:
        groups = find_host().memory_cgroups
    except SandboxUnavailable:
        return None
    return groups.parent if groups is not None else None


def _has_cgroups() -> bool:
    return _cgroup_parent() is not None


def _cgroups(pid: int) -> list[str]:
    """The memory cgroups a process made for its sandboxes (named assay-<pid>-<n>)."""
    parent = _cgroup_parent()
    if parent is None:
        return []
    return sorted(e.name for e in os.scandir(parent) if re.fullmatch(rf"assay-{pid}-\d+", e.name))


def _mounts_under(folder: Path) -> list[str]:
    return [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines() if str(folder) in line]


def _sample_dirs(base: Path) -> list[Path]:
    return [p for p in base.iterdir() if p.is_dir()] if base.is_dir() else []


def test_sigkill_mid_run_leaves_environments_that_the_resumed_run_removes(tmp_path: Path) -> None:
    task = write_agent_task(
        tmp_path,
        _rows(),
        tools=["bash"],
        environment={"limits": {"command_timeout_s": 20, "wall_s": 60}},
        agent={"max_turns": 3},
        evaluators=[{"name": "env_check", "command": "test -f done.txt"}, "env_files"],
    )
    cgroups_here = _has_cgroups()  # probed now: the first probe in a process removes stale cgroups (cgroup.py)
    with public_dir() as tmp, OpenAITestServer(ConversationReplies(_step), latency_s=0.05) as srv:
        # a private temp dir (reachable by the sandbox's user): the environment folders seen are this test's only
        env = {**os.environ, "TMPDIR": str(tmp), "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
        model = ["--model", "openai:assay-test", "--base-url", srv.base_url]
        cmd = assay_cmd("run", str(task), *model, "-o", "runs", "-q", "-c", "4", "--no-cache")
        killed = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        runs = tmp_path / "runs"

        def environments_alive() -> list[str]:
            return _mounts_under(tmp) if lines_written(runs) >= 8 else []

        wait_for(environments_alive, 60, "8 samples written, environments alive", interval=0.01, proc=killed)
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=10)
        # what the killed run left: its base folder, environments in it (each a tmpfs mount), their cgroups
        (base,) = tmp.glob(f"assay-env-{killed.pid}-*")
        left = _sample_dirs(base)
        assert left, "no environment was alive when the run was killed"
        mounted = _mounts_under(tmp)
        # each environment has its own tmpfs (one just being made when the kill came may not have it yet)
        assert mounted and all(any(m.startswith(f"{d}/") for d in left) for m in mounted), (left, mounted)
        cgroups_left = _cgroups(killed.pid)
        assert cgroups_left or not cgroups_here
        run_dir = only_run_dir(runs)
        before = [json.loads(line)["sample_id"] for line in (run_dir / "samples.jsonl").read_bytes().splitlines()
                  if line.endswith(b"}")]  # fmt: skip
        assert 8 <= len(before) < N

        resumed = subprocess.Popen(
            assay_cmd("run", "--resume", str(run_dir), "-q"),
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        _, err = resumed.communicate(timeout=120)
        assert resumed.returncode == 0, err
        # nothing of either run is left: folders, tmpfs mounts, memory cgroups
        assert list(tmp.iterdir()) == []
        assert _mounts_under(tmp) == []
        assert _cgroups(killed.pid) == [] and _cgroups(resumed.pid) == [], cgroups_left

    lines = sample_lines(run_dir)
    assert Counter(line["sample_id"] for line in lines) == Counter({f"s{i}": 1 for i in range(N)})
    for line in lines:
        i = int(line["sample_id"][1:])
        verdicts = line["filters"]["none"]["verdicts"]
        check, files = verdicts["env_check"][0], verdicts["env_files"][0]
        assert check["error"] is None and files["error"] is None, (check, files)
        assert check["passed"] is files["passed"] is _writes_done(i), (i, check, files)
        response = line["responses"][0]
        facts = response["metadata"]["environment"]
        assert "removed_at" in facts and facts["remove_s"] >= 0  # each sample's environment was removed
        assert ("+++ b/done.txt" in facts.get("diff", "")) is _writes_done(i)
        assert f"alpha {i}\nbeta {i}" in response["text"]  # the answer is what bash printed in that workspace
    results = json.loads((run_dir / "results.json").read_text())["results"]["agent"]
    share = sum(_writes_done(i) for i in range(N)) / N
    assert results["env_check,none"] == results["env_files,none"] == share
