"""The SWE-style task set (tests/agents/swe_fixture.py) on a real Ray cluster: with ``--executor ray`` each sample's
environment is made where its trajectory runs, the standard tools act in it and ``env_check`` scores the hidden
tests there; every sample is written exactly once, with the verdicts, test outcomes and workspace diffs the local
executor gives, which are the ones worked out by hand."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from assay.testing.server import Conversation, ConversationReplies, OpenAITestServer
from tests.agents.swe_fixture import REPOS, fix_of, rows
from tests.e2e.e2e_support import assay_cmd, only_run_dir, sample_lines
from tests.environments.env_support import public_dir
from tests.ray.cluster import LocalCluster
from tests.sandbox.sandbox_support import needs_bwrap

pytest.importorskip("ray", reason="the Ray executor's tests need ray: pip install 'assay[ray]' (make test does)")

pytestmark = [needs_bwrap, pytest.mark.timeout(300)]

# by hand: the right fix resolves calc, stack and cart; slug's tests deleted and dates' fix breaking a PASS_TO_PASS
# test (year % 400 makes 2024 no leap year) resolve nothing
RESOLVED = {"tiny__calc-1": True, "tiny__slug-2": False, "tiny__stack-3": True, "tiny__dates-4": False,
            "tiny__cart-5": True}  # fmt: skip


TEST_CMD = "python3 -m pytest -q -p no:cacheprovider | tail -n 1 | sed -E 's/ in [0-9.]+s//'"  # no timing


def _bash(cmd: str) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"cmd": cmd}}


def _plan(instance: str) -> list[dict[str, Any]]:
    if instance == "tiny__slug-2":
        return [_bash("rm -rf tests && ls")]
    path, old, new = fix_of(instance)
    if instance == "tiny__dates-4":
        new = "    return year % 400 == 0\n"
    edit = {"command": "str_replace", "path": path, "old_str": old, "new_str": new}
    return [{"name": "text_editor", "arguments": edit}, _bash(TEST_CMD)]


def _step(conv: Conversation) -> Any:
    calls = _plan(conv.user.split(":")[0])
    done = len([m for m in conv.messages if m.get("role") == "tool"])
    return {"tool_calls": [calls[done]]} if done < len(calls) else "done"


def _task(root: Path) -> Path:
    root.mkdir()
    (root / "swe.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows()))
    task = {
        "name": "swe",
        "dataset": "swe.jsonl",
        "fields": {"id": "instance_id", "input": "problem_statement"},
        "template": "{{ instance_id }}: fix this issue in the repository in /workspace.\n{{ problem_statement }}",
        "tools": ["bash", "text_editor"],
        "environment": {"packages": ["pytest"], "limits": {"command_timeout_s": 30, "wall_s": 90}},
        "agent": {"max_turns": 6, "parallel_tool_calls": 1},
        "evaluators": ["env_check"],
    }
    path = root / "swe.yaml"
    path.write_text(yaml.safe_dump(task, sort_keys=False))
    return path


def _run(root: Path, server: OpenAITestServer, env: dict[str, str], *extra: str) -> Path:
    task = _task(root)
    cmd = assay_cmd("run", str(task), "--model", "openai:assay-test", "--base-url", server.base_url, "-o", "runs")
    cmd += ["-q", "--no-cache", "-c", "5", "--bootstrap-iters", "200", *extra]
    env = {**env, "OPENAI_API_KEY": "test-key", "ASSAY_CACHE_DIR": str(root / "cache")}
    out = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    return only_run_dir(root / "runs")


class Watch:
    """Polls temp folders for environment base folders (``assay-env-<pid>-<start>``) and the sample folders in them:
    which process made each sample's environment, seen while it was alive."""

    def __init__(self, *folders: Path) -> None:
        self.folders = folders
        self.seen: dict[Path, set[str]] = {}  # base folder -> sample ids seen in it
        self.session: dict[Path, int | None] = {}  # base folder -> its owner's session, read at first sight
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.wait(0.005):
            for folder in self.folders:
                for base in folder.glob("assay-env-*"):
                    if base not in self.session:
                        try:
                            self.session[base] = os.getsid(int(base.name.split("-")[2]))
                        except OSError:  # its owner is gone: a leftover of another process
                            self.session[base] = None
                    with contextlib.suppress(OSError):
                        samples = {p.name.rsplit("-", 1)[0] for p in base.iterdir() if p.name.startswith("tiny__")}
                        self.seen.setdefault(base, set()).update(samples)

    @contextlib.contextmanager
    def running(self) -> Iterator[Watch]:
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join()

    def owned_by(self, sessions: set[int]) -> dict[Path, set[str]]:
        """The bases (with samples) whose owner runs in one of ``sessions`` (a Ray node's processes)."""
        return {b: s for b, s in self.seen.items() if s and self.session.get(b) in sessions}


def _outcome(line: dict[str, Any]) -> dict[str, Any]:
    """What an executor must not change: the verdict, the test outcomes observed, the workspace's diff, the tools'
    results."""
    response = line["responses"][0]
    facts = response["metadata"]["environment"]
    (observed,) = facts["observations"].values()
    verdict = line["filters"]["none"]["verdicts"]["env_check"][0]
    tools = [(m["name"], m["content"]) for m in response["transcript"] if m.get("role") == "tool"]
    return {"verdict": (verdict["passed"], verdict["score"], verdict["error"]), "tests": observed["tests"],
            "diff": facts.get("diff"), "tools": tools}  # fmt: skip


def test_ray_runs_environment_samples_as_the_local_executor_does(tmp_path: Path, cluster: LocalCluster) -> None:
    ray_args = ("--executor", "ray", "--ray-address", cluster.address)
    with OpenAITestServer(ConversationReplies(_step)) as server, public_dir() as driver_tmp:
        with Watch(Path("/tmp"), driver_tmp).running() as watch:
            ray_dir = _run(tmp_path / "ray", server, {**cluster.env(), "TMPDIR": str(driver_tmp)}, *ray_args)
        local_dir = _run(tmp_path / "local", server, cluster.env())
    # the environments were made by the cluster's workers, none by the driver; each was removed after its sample
    nodes = {node.proc.pid for node in [cluster.head, *cluster.workers]}
    on_workers = watch.owned_by(nodes)
    assert set().union(*on_workers.values()) == set(RESOLVED), watch.seen
    assert not [b for b in watch.seen if b.parent == driver_tmp]
    assert all(not base.exists() or not any(base.iterdir()) for base in on_workers)
    assert json.loads((ray_dir / "run.json").read_text())["config"]["executor"] == "ray"
    ray_lines = sample_lines(ray_dir)
    assert sorted(line["sample_id"] for line in ray_lines) == sorted(RESOLVED)  # every sample exactly once
    ray_by_id = {line["sample_id"]: _outcome(line) for line in ray_lines}
    local_by_id = {line["sample_id"]: _outcome(line) for line in sample_lines(local_dir)}
    assert ray_by_id == local_by_id
    for instance, outcome in ray_by_id.items():
        passed, _, error = outcome["verdict"]
        assert error is None and passed is RESOLVED[instance], (instance, outcome)
        repo = next(r for r in REPOS if r["instance_id"] == instance)
        listed = repo["FAIL_TO_PASS"] + repo["PASS_TO_PASS"]
        assert all(outcome["tests"][t] == "passed" for t in listed) is RESOLVED[instance]  # SWE-bench's rule
        if instance != "tiny__slug-2":  # the edit the tool made is in the workspace's diff
            assert f"+++ b/{fix_of(instance)[0]}" in outcome["diff"]
    ray_results = json.loads((ray_dir / "results.json").read_text())["results"]
    assert ray_results == json.loads((local_dir / "results.json").read_text())["results"]
    assert ray_results["swe"]["env_check,none"] == pytest.approx(3 / 5)
