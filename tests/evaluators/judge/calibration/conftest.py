"""Fixtures for the calibration tests: the browser tests' headless Chromium (the judge tests' real local server and
private cache come from the judge folder's conftest)."""

from __future__ import annotations

from tests.browser.conftest import browser, watched

__all__ = ["browser", "watched"]
