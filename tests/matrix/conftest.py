"""Fixtures for matrix runs: one real OpenAI-compatible server answering as two models."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from assay.testing.server import OpenAITestServer
from tests.matrix.matrix_support import reply


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer(reply, models=("alpha", "beta")) as srv:
        yield srv
