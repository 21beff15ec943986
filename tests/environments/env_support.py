"""What the environment tests share: real bubblewrap, an environment made and always closed, a folder the
sandbox's user can reach (pytest's tmp_path is private to root)."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from assay.environments.base import EnvironmentLimits, EnvironmentSpec
from assay.environments.bwrap_env import BwrapEnvironment

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="bubblewrap (bwrap) is not installed: `make sandbox` or apt-get install bubblewrap",
)

FAST = EnvironmentLimits(command_timeout_s=10, wall_s=60)


def spec(**kw: Any) -> EnvironmentSpec:
    """A spec with test-sized limits unless given."""
    kw.setdefault("limits", FAST)
    return EnvironmentSpec(**kw)


@contextlib.asynccontextmanager
async def environment(
    given: EnvironmentSpec | None = None, row: Mapping[str, Any] | None = None
) -> AsyncIterator[BwrapEnvironment]:
    """An environment for one test, closed whatever happens."""
    env = await BwrapEnvironment.create(given or spec(), row or {}, "test")
    try:
        yield env
    finally:
        await env.close()


@contextlib.contextmanager
def public_dir() -> Iterator[Path]:
    """A folder under /tmp that the sandbox's user (uid 65534) can reach, removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="assay-envtest-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
