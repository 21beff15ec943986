"""A task whose ``environment: {rootfs: DIR}`` names a root filesystem built here from a minimal tree (bash, ls,
cat, the libraries they load and a marker file): the agent's ``bash`` tool runs from that tree, in the workspace at
/workspace, sees the marker and none of the host's files, and the ``env_check`` command after the loop runs in the
same tree."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_support import run_task, write_agent_task

from assay.testing.server import Conversation, ConversationReplies, OpenAITestServer
from tests.environments.env_support import needs_bwrap, public_dir

pytestmark = [needs_bwrap, pytest.mark.skipif(shutil.which("ldd") is None, reason="needs ldd")]

MARKER = "inside the task's own root filesystem"
PROGRAMS = ("bash", "ls", "cat")  # env_check prepares the workspace from the host: no find or rm needed inside


def _copy(path: str, root: Path) -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(Path(path).resolve(), target)


@contextlib.contextmanager
def _rootfs(programs: tuple[str, ...]) -> Iterator[Path]:
    """/usr/bin/<programs>, every library `ldd` lists for them (the dynamic loader included), /bin -> usr/bin and
    /etc/rootfs-marker: nothing else."""
    with public_dir() as root:
        for name in programs:
            program = shutil.which(name, path="/usr/bin:/bin")
            assert program is not None, name
            _copy(f"/usr/bin/{name}", root)
            listed = subprocess.run(["ldd", program], capture_output=True, text=True, check=True).stdout
            for line in listed.splitlines():
                path = line.split("=>")[-1].split("(")[0].strip()
                if path.startswith("/"):
                    _copy(path, root)
        (root / "bin").symlink_to("usr/bin")
        (root / "etc").mkdir(exist_ok=True)
        (root / "etc" / "rootfs-marker").write_text(MARKER + "\n")
        yield root


@pytest.fixture
def rootfs() -> Iterator[Path]:
    with _rootfs(PROGRAMS) as root:
        yield root


@pytest.fixture
def host_file() -> Iterator[Path]:
    """A file on the host that the sandbox's user could read, were it visible."""
    with public_dir() as folder:
        path = folder / "host-secret.txt"
        path.write_text("host only\n")
        path.chmod(0o644)
        yield path


def _script(host_file: Path, rootfs: Path) -> str:
    return (
        "cat /etc/rootfs-marker; echo '--- /'; ls /; echo '--- /usr/bin'; ls /usr/bin; echo '--- pwd'; pwd; "
        f"cat in.txt; echo '--- host'; cat /etc/hostname 2>&1; cat {host_file} 2>&1; "
        f"cat {rootfs}/etc/rootfs-marker 2>&1; ls /usr/bin/python3 /work /home 2>&1; true"
    )


def test_tools_and_checks_run_inside_the_rootfs_and_see_no_host_file(
    tmp_path: Path, rootfs: Path, host_file: Path
) -> None:
    script = _script(host_file, rootfs)

    def step(conv: Conversation) -> Any:
        if not conv.tool_results:
            return {"tool_calls": [{"name": "bash", "arguments": {"cmd": script}}]}
        return conv.tool_results[0]["content"]  # the answer is what bash printed

    rows = [{"id": f"r{i}", "input": f"look around {i}", "target": MARKER, "files": {"in.txt": f"ws {i}\n"}}
            for i in range(2)]  # fmt: skip
    inside = "test -f /etc/rootfs-marker && test ! -e /etc/hostname && test ! -e /usr/bin/python3 && "
    inside += 'test "$PWD" = /workspace && test -f /workspace/in.txt'
    task = write_agent_task(
        tmp_path,
        rows,
        tools=["bash"],
        environment={"rootfs": str(rootfs), "limits": {"command_timeout_s": 20, "wall_s": 60}},
        agent={"max_turns": 3},
        evaluators=["contains", {"name": "env_check", "command": inside}],
    )
    with OpenAITestServer(ConversationReplies(step)) as server:
        run = run_task(tmp_path, task, server, concurrency=2)
    assert len(run.records) == 2
    for record in run.records:
        i = record.sample_id[1:]
        response = record.responses[0]
        assert response is not None
        tool = next(m for m in response.transcript if m.get("role") == "tool")
        out = str(tool["content"])
        assert not tool.get("is_error"), out
        head, rest = out.split("--- /\n", 1)
        assert head == MARKER + "\n"  # the rootfs's marker was read
        top, rest = rest.split("--- /usr/bin\n", 1)
        # / is the rootfs's own entries and the sandbox's mounts: no host OS folder (work, home, root, var, opt...)
        assert set(top.split()) <= {"bin", "etc", "lib", "lib64", "usr", "dev", "proc", "tmp", "workspace"}, top
        assert {"bin", "etc", "usr", "workspace"} <= set(top.split()), top
        usr_bin, rest = rest.split("--- pwd\n", 1)
        assert sorted(usr_bin.split()) == sorted(PROGRAMS)  # not the host's /usr/bin
        where, host = rest.split("--- host\n", 1)
        assert where == f"/workspace\nws {i}\n"  # the workspace, with the row's file, at /workspace
        assert "host only" not in host and "ws " not in host
        for path in ("/etc/hostname", str(host_file), f"{rootfs}/etc/rootfs-marker", "/usr/bin/python3", "/work",
                     "/home"):  # fmt: skip
            lines = [line for line in host.splitlines() if path in line]
            assert lines and all(line.endswith("No such file or directory") for line in lines), (path, host)
        assert MARKER not in host
        verdicts = record.filters["none"].verdicts
        assert verdicts["contains"][0]["passed"] is True
        check = verdicts["env_check"][0]
        assert check["passed"] is True and check["error"] is None, check
        observed = next(iter(response.metadata["environment"]["observations"].values()))
        assert observed["exit_code"] == 0 and observed["command"] == inside
    assert run.results["results"]["agent"]["env_check,none"] == 1.0


def test_env_check_in_a_rootfs_with_only_bash(tmp_path: Path) -> None:
    with _rootfs(("bash",)) as root:
        rows = [{"id": "r0", "input": "nothing to do", "target": "done", "files": {"in.txt": "ws\n"}}]
        task = write_agent_task(
            tmp_path,
            rows,
            tools=["bash"],
            environment={"rootfs": str(root), "limits": {"command_timeout_s": 20, "wall_s": 60}},
            evaluators=[{"name": "env_check", "command": "test -f /etc/rootfs-marker"}],
        )
        with OpenAITestServer(ConversationReplies(lambda conv: "done")) as server:
            run = run_task(tmp_path, task, server, max_error_rate=None)
    check = run.records[0].filters["none"].verdicts["env_check"][0]
    assert check["error"] is None and check["passed"] is True, check
