"""Tool tests: a host-folder environment (a test double, tests/environments/hostenv.py) and a sample's tools in it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from assay.tools.base import SampleTools, ToolSet
from tests.environments.hostenv import HostEnvironment


@pytest.fixture
async def env() -> AsyncIterator[HostEnvironment]:
    environment = HostEnvironment()
    try:
        yield environment
    finally:
        await environment.close()


@pytest.fixture
def state(env: HostEnvironment) -> SampleTools:
    return ToolSet([]).for_sample(environment=env)
