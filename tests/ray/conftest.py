"""Fixtures for the Ray executor's tests: a real cluster (head + worker node) on 127.0.0.1, shared by the module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.ray.cluster import LocalCluster


@pytest.fixture(scope="package")
def cluster() -> Iterator[LocalCluster]:
    """A head node and one worker node, 2 CPUs each, as separate processes; stopped even when a test fails."""
    try:
        started = LocalCluster(workers=1, cpus=2)
    except RuntimeError:  # a port taken by another process between choosing and binding it: once more, fresh ports
        started = LocalCluster(workers=1, cpus=2)
    try:
        yield started
    finally:
        started.stop()
