"""Fixtures for judge tests: a real OpenAI-compatible server on 127.0.0.1 whose replies a test scripts."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from assay.testing.server import FaultPlan, OpenAITestServer


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never touch the user's cache: the default cache directory is a fresh temporary one."""
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def serve() -> Iterator[Callable[..., OpenAITestServer]]:
    """Start a test server with a scripted reply function; every server started is stopped at the end."""
    started: list[OpenAITestServer] = []

    def start(reply: Any, faults: FaultPlan | None = None, **kwargs: Any) -> OpenAITestServer:
        server = OpenAITestServer(reply, faults=faults, **kwargs)
        server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
