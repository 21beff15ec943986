"""The system Chromium for browser tests, and what the tests pass around: a watched page and the report files.

Playwright's Python package drives Debian's /usr/bin/chromium; no browser is ever downloaded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = Path(os.environ.get("ASSAY_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

# Records every CSP violation from the first moment of a page (injected by Playwright, which the CSP does not stop).
CSP_WATCH = (
    "window.__cspViolations = [];"
    "document.addEventListener('securitypolicyviolation', e => window.__cspViolations.push(e.violatedDirective));"
)


def launch(playwright: Any) -> Any:
    """Headless Chromium from /usr/bin/chromium with the flags CI uses."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)


@dataclass
class Watched:
    """A page with everything that would betray an injected script: dialogs, page errors, CSP violations."""

    page: Any
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def csp_violations(self) -> list[str]:
        """Directives the page's Content-Security-Policy blocked."""
        return list(self.page.evaluate("window.__cspViolations || []"))

    def load(self, url: str) -> None:
        """Open ``url`` and wait until the report script has rendered."""
        self.page.goto(url)
        self.page.wait_for_function("() => document.body.dataset.ready === '1'", timeout=15_000)


@dataclass
class Reports:
    """Two run folders (B flips some outcomes of A) and their pages: A alone, and A compared with B."""

    run_a: Path
    run_b: Path
    single: Path
    compare: Path
