"""A sandbox's layout: the work directory at another mount point (HOME and cwd there), read-only binds for the
whole sandbox or one program, per-program cwd and variables; code_exec's default (/sandbox) is unchanged."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from assay.sandbox import Limits, Sandbox
from assay.sandbox.layout import Layout
from tests.sandbox.sandbox_support import needs_bwrap

pytestmark = needs_bwrap


async def test_work_directory_elsewhere_and_binds_for_one_program() -> None:
    shared = Path(tempfile.mkdtemp(prefix="assay-layout-", dir="/tmp"))
    try:
        shared.chmod(0o755)
        (shared / "given.txt").write_text("given\n")
        layout = Layout(home="/workspace", binds=((str(shared), "/opt/shared"),), env=(("FROM_LAYOUT", "1"),))
        async with Sandbox(Limits(timeout_s=10), layout=layout) as box:
            box.write_file("w.txt", "w\n")
            done = await box.exec(
                ["bash", "-c", 'pwd; echo "$HOME $FROM_LAYOUT $X"; cat w.txt /opt/shared/given.txt; ls /sandbox'],
                env={"X": "x"},
            )
            assert done.stdout.decode().split("\n")[:4] == ["/workspace", "/workspace 1 x", "w", "given"], done
            assert b"No such file" in done.stderr  # no /sandbox here
            once = await box.exec(["cat", "/extra/given.txt"], binds=[(str(shared), "/extra")], cwd="/opt")
            later = await box.exec(["bash", "-c", "pwd; ls /extra; touch /opt/shared/x"], cwd="/opt")
            assert once.stdout == b"given\n" and later.stdout == b"/opt\n" and later.returncode != 0, later
            assert not (shared / "x").exists()
        async with Sandbox(Limits(timeout_s=10)) as box:
            default = await box.exec(["bash", "-c", 'pwd; echo "$HOME"'])
            assert default.stdout == b"/sandbox\n/sandbox\n"
    finally:
        shutil.rmtree(shared, ignore_errors=True)
