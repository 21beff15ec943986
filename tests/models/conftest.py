"""Fixtures for model tests: real OpenAI-compatible servers on 127.0.0.1, stopped after each test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from assay.testing.server import OpenAITestServer


@pytest.fixture
def make_server() -> Iterator[Callable[..., OpenAITestServer]]:
    """Start a test server with the given arguments; every server started is stopped at teardown."""
    started: list[OpenAITestServer] = []

    def make(*args: Any, **kwargs: Any) -> OpenAITestServer:
        server = OpenAITestServer(*args, **kwargs)
        server.start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


@pytest.fixture
def server(make_server: Callable[..., OpenAITestServer]) -> OpenAITestServer:
    """An echoing test server."""
    return make_server()
