"""Fixtures for whole runs: a real OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from assay.testing.server import OpenAITestServer
from tests.e2e.e2e_support import arithmetic_reply


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer(arithmetic_reply) as srv:
        yield srv
