"""Fixtures for the calibration tests: the judge tests' real local server and private cache, and the browser
tests' headless Chromium."""

from __future__ import annotations

from tests.browser.conftest import browser, watched
from tests.judge.conftest import _private_cache, serve

__all__ = ["_private_cache", "browser", "serve", "watched"]
