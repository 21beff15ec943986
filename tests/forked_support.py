"""Tests of a pass split with a forked helper (:class:`assay.forking.Forked`): force or forbid the split and see
whether a helper really ran."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest


def split_with_helper(monkeypatch: pytest.MonkeyPatch, module: ModuleType, parallel: bool) -> list[object]:
    """Make ``module`` (which imports ``Forked`` and ``may_fork`` and has ``PARALLEL_MIN_BYTES``) split any file
    when ``parallel``, none otherwise; the list returned gets each helper started (None: it could not start)."""
    monkeypatch.setattr(module, "PARALLEL_MIN_BYTES", 0 if parallel else 1 << 40)
    monkeypatch.setattr(module, "may_fork", lambda: True)
    started: list[object] = []
    real = module.Forked.start

    def spy(*args: Any) -> object:
        helper = real(*args)
        started.append(helper)
        return helper

    monkeypatch.setattr(module.Forked, "start", spy)
    return started
