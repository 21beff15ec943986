"""The host-side file methods stay in the workspace: links the agent plants inside are never followed (a link to
/etc/passwd is not read, a link to a folder is not written through), FIFOs do not hang a read, and files written
belong to the sandbox's user so programs inside can edit them."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from assay.environments.base import EnvironmentFailed
from assay.sandbox.bwrap import HOST_UID
from tests.environments.env_support import environment, needs_bwrap, spec

pytestmark = needs_bwrap


async def test_links_planted_inside_are_not_followed_by_read_or_write(tmp_path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    async with environment(spec(files={"ok.txt": "fine\n"})) as env:
        ws = env._workdir()
        os.symlink("/etc/passwd", os.path.join(ws, "passwd"))  # as the agent would: ln -s /etc/passwd passwd
        os.symlink(str(outside), os.path.join(ws, "out"))
        made = await env.exec(["bash", "-c", "ln -s /etc etc && ln -s ../../.. up && mkfifo fifo"])
        assert made.returncode == 0, made
        for path in ("passwd", "etc/passwd", "out/x", "up/etc/hostname", "/workspace/etc/passwd"):
            with pytest.raises(ValueError, match="symbolic link"):
                env.read_file(path)
        for path in ("passwd", "etc/evil", "out/evil.txt", "up/evil"):
            with pytest.raises(ValueError, match="symbolic link"):
                env.write_file(path, "evil")
        with pytest.raises(ValueError, match="not a regular file"):
            env.read_file("fifo")
        for path in ("../x", "/etc/passwd", "/workspace/../etc/passwd", ""):
            with pytest.raises(ValueError):
                env.read_file(path)
        with pytest.raises(FileNotFoundError):
            env.read_file("missing.txt")
        assert env.read_file("/workspace/ok.txt") == b"fine\n"
        assert env.list_files() == ["ok.txt"]  # links and the FIFO are not files of the workspace
    assert list(outside.iterdir()) == []
    assert "evil" not in Path("/etc/passwd").read_text()


async def test_written_files_belong_to_the_sandbox_user_and_initial_files_are_kept() -> None:
    async with environment(spec(files={"src/app.py": "x = 1\n"})) as env:
        env.write_file("src/app.py", "x = 2\n")
        env.write_file("new/deep/file.txt", b"new")
        if os.geteuid() == 0:
            for rel in ("src/app.py", "new", "new/deep", "new/deep/file.txt"):
                assert os.stat(os.path.join(env._workdir(), rel)).st_uid == HOST_UID
        edited = await env.exec(["bash", "-c", "echo inside >> new/deep/file.txt && cat new/deep/file.txt src/app.py"])
        assert edited.stdout == b"newinside\nx = 2\n", edited
        assert env.initial_file("src/app.py") == b"x = 1\n" and env.initial_file("new/deep/file.txt") is None
        assert env.list_files() == ["new/deep/file.txt", "src/app.py"]
        assert set(env.snapshot()) == {"new/deep/file.txt", "src/app.py"}
        mode = os.stat(os.path.join(env._workdir(), "src/app.py")).st_mode
        assert stat.S_IMODE(mode) == 0o644
    with pytest.raises(EnvironmentFailed, match="closed"):
        env.read_file("src/app.py")
