"""Shared fixtures."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def forked_starts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the functions given to :meth:`assay.forking.Forked.start`, in order, with forking allowed
    (whatever threads earlier tests left, or CPUs this machine has): a test of a forked read sets
    ``assay.forking.may_fork`` back to False itself to read in turn."""
    import assay.forking
    from assay.forking import Forked

    started: list[str] = []
    start = Forked.start

    def spy(fn: Any, *args: Any) -> Any:
        started.append(fn.__name__)
        return start(fn, *args)

    monkeypatch.setattr(Forked, "start", spy)
    monkeypatch.setattr(assay.forking, "may_fork", lambda: True)
    return started
