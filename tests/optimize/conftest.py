"""Two real local OpenAI-compatible servers: one answers as the task model, one as the optimiser model."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from assay.optimize.demo import reflect_text, respond
from assay.testing.server import OpenAITestServer, last_user_text


@pytest.fixture
def task_server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer(lambda body: respond(last_user_text(body))) as srv:
        yield srv


@pytest.fixture
def opt_server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer(lambda body: reflect_text(last_user_text(body))) as srv:
        yield srv
