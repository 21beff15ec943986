"""Fixtures for browser tests: a real headless Chromium (Debian's /usr/bin/chromium) driven by Playwright.

The tests skip only when /usr/bin/chromium or the playwright package is absent; install them with
``apt-get install -y chromium`` and ``pip install playwright`` (never ``playwright install``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.browser_support import ARTIFACTS, CHROMIUM, CSP_WATCH, Reports, Watched, launch


@pytest.fixture(scope="module")  # a live sync Playwright keeps an event loop running: stop it after its module
def browser() -> Iterator[Any]:
    """One headless Chromium per test module; skips when the browser or playwright is missing."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    with sync_api.sync_playwright() as pw:
        chromium = launch(pw)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def watched(browser: Any) -> Iterator[Watched]:
    """A fresh page (1280×900) that records dialogs (dismissing them), page errors and CSP violations."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    w = Watched(page)
    page.on("dialog", lambda d: (w.dialogs.append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: w.errors.append(str(e)))
    page.add_init_script(CSP_WATCH)
    try:
        yield w
    finally:
        context.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """test-artifacts/ at the repository root (git-ignored): screenshots to look at."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Reports:
    """Run folders A and B (written directly, results by the results writer) and their report pages."""
    from assay.report.html import write_html
    from tests.browser.report_runs import make_run

    root = tmp_path_factory.mktemp("reports")
    run_a = make_run(root / "baseline", 40, long_output=25_000)
    run_b = make_run(root / "candidate", 40, flip=True)
    single = write_html([run_a], root / "single.html")
    compare = write_html([run_a, run_b], root / "compare.html")
    return Reports(run_a, run_b, single, compare)
