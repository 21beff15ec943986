"""Fixtures for the calibration tests: the judge tests' real local server and private cache."""

from __future__ import annotations

from tests.judge.conftest import _private_cache, serve

__all__ = ["_private_cache", "serve"]
