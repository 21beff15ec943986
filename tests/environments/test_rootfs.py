"""A root filesystem directory as the environment's /: a minimal tree built here (bash and the libraries it
loads, and a marker file); programs and the shell run from it and see none of the host's files."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.environments.env_support import environment, needs_bwrap, public_dir, spec

pytestmark = [needs_bwrap, pytest.mark.skipif(shutil.which("ldd") is None, reason="needs ldd")]


def _copy(path: str, root: Path) -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(Path(path).resolve(), target)


@pytest.fixture
def rootfs() -> Iterator[Path]:
    with public_dir() as root:
        bash = shutil.which("bash", path="/usr/bin:/bin")
        assert bash is not None
        _copy(bash, root)
        for line in subprocess.run(["ldd", bash], capture_output=True, text=True, check=True).stdout.splitlines():
            path = (line.split("=>")[-1]).split("(")[0].strip()
            if path.startswith("/"):
                _copy(path, root)
        if not (root / "bin").exists():
            (root / "bin").symlink_to("usr/bin")
        (root / "marker.txt").write_text("inside the task's rootfs\n")
        (root / "opt").mkdir()
        (root / "opt" / "tool.txt").write_text("the rootfs's /opt\n")
        yield root


async def test_programs_see_the_rootfs_and_not_the_host(rootfs: Path) -> None:
    secret = Path("/tmp") / f"{rootfs.name}-host-secret"
    secret.write_text("host only")
    try:
        script = (
            'read -r m < /marker.txt; echo "$m"; read -r o < /opt/tool.txt; echo "$o"; '
            f"for p in /etc/hostname /usr/bin/python3 /work {secret} /usr/bin/id; do "
            '[ -e "$p" ] && echo "SEES $p"; done; echo "cwd=$PWD"; echo x > made.txt && echo wrote'
        )
        async with environment(spec(rootfs=str(rootfs), files={"in.txt": "ws\n"}, packages=("iniconfig",))) as env:
            done = await env.exec(["bash", "-c", script])
            assert done.returncode == 0, done
            out = done.stdout.decode()
            assert out == "inside the task's rootfs\nthe rootfs's /opt\ncwd=/workspace\nwrote\n", out
            assert env.read_file("made.txt") == b"x\n"
            shell = await env.shell()
            listed = await shell.run("echo /*; read -r w < in.txt; echo $w", timeout_s=5)
            assert "/marker.txt" in listed.output and "/usr" in listed.output and listed.output.endswith("ws\n")
            assert "/etc" not in listed.output and "/home" not in listed.output
            missing = await env.exec(["python3", "-c", "print(1)"])
            assert missing.returncode != 0  # the host's Python is not there
    finally:
        secret.unlink()
