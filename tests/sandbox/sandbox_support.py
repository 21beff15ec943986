"""What the code_exec and sandbox tests share: they need bubblewrap, installed by ``make sandbox``."""

from __future__ import annotations

import shutil

import pytest

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="bubblewrap (bwrap) is not installed: `make sandbox` or apt-get install bubblewrap",
)
