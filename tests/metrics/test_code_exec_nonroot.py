"""The hostile-program and sandbox tests again, run by an unprivileged user (uid 65534), when this run is root.

As root the sandbox drops to uid 65534 itself; a non-root user's sandbox runs as that user, in its own user
namespace. Run as non-root, the other test files already cover that case directly, so this one skips.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

HERE = Path(__file__).parent
REPO = HERE.parent.parent
FILES = [HERE / "test_code_exec_hostile.py", HERE.parent / "sandbox" / "test_sandbox.py"]
NOBODY = 65534


def _readable_by_others(path: Path) -> bool:
    return path.stat().st_mode & 0o004 != 0 and all(p.stat().st_mode & 0o005 == 0o005 for p in path.parents)


def _nobody_python() -> tuple[str, dict[str, str]] | str:
    """A Python uid 65534 can run with assay's dependencies (this one's site-packages), or why there is none."""
    paths = [str(REPO / "src"), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    tried = []
    for python in dict.fromkeys([os.path.realpath(sys._base_executable), f"/usr/bin/python{version}"]):
        try:
            done = subprocess.run(
                [python, "-c", "import assay, pytest, pydantic"],
                env=env,
                capture_output=True,
                text=True,
                user=NOBODY,
                group=NOBODY,
                extra_groups=[],
                cwd="/",
            )
        except OSError as err:
            tried.append(f"{python}: {err.strerror}")
            continue
        if done.returncode == 0:
            return python, env
        tried.append(f"{python}: {(done.stderr.strip().splitlines() or ['failed'])[-1]}")
    return "; ".join(tried)


@pytest.mark.skipif(os.geteuid() != 0, reason="not root: the other files already run as an unprivileged user")
def test_hostile_programs_and_sandbox_as_an_unprivileged_user() -> None:
    if not shutil.which("bwrap"):
        pytest.skip("bubblewrap is not installed (make sandbox)")
    if not all(_readable_by_others(f) for f in FILES):
        pytest.skip(f"uid {NOBODY} cannot read the checkout at {REPO}")
    found = _nobody_python()
    if isinstance(found, str):
        pytest.skip(f"no Python that uid {NOBODY} can run with assay's dependencies ({found})")
    python, env = found
    done = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *[str(f) for f in FILES]],
        env=env,
        capture_output=True,
        text=True,
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        cwd="/tmp",
        timeout=600,
    )
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:]
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in summary and "failed" not in summary, summary
