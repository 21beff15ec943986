"""headline: tests on the HTML run page, in real headless Chromium (Debian's /usr/bin/chromium driven by Playwright):
the run card leads with the tests (passed / failed / errored, the pass rate with its Wilson interval, the mean
score, the named metrics), and the sample drawer lists each assertion of a test with its own pass, score, reason
and metric, a reason holding ``<script>`` shown as text and never run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.report.html import write_html
from tests.browser.browser_support import CHROMIUM, CSP_WATCH, Watched, launch
from tests.report.test_tests_headline import MEAN_SCORE, NAMED, PAYLOAD, run_task, wilson_by_hand


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
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


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("headline-html")
    proc, run_dir = run_task(folder, "--max-error-rate", "0.5")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert run_dir is not None
    return write_html([run_dir], folder / "report.html")


def _assertion_rows(page: Any) -> list[list[str]]:
    return page.eval_on_selector_all(
        "#detail table.assertions tbody tr",
        "rows => rows.map(r => [...r.querySelectorAll('td')].map(td => td.textContent))",
    )


def test_the_run_card_leads_with_the_tests(watched: Watched, page_file: Path) -> None:
    watched.load(page_file.as_uri())
    page = watched.page
    row = page.query_selector("tr.tests-row")
    assert row is not None and row.get_attribute("data-task") == "pirate"
    field = {
        name: row.query_selector(f'[data-field="{name}"]')
        for name in ("passed", "failed", "errored", "pass_rate", "ci", "mean_score")
    }
    assert [field[n].get_attribute("data-value") for n in ("passed", "failed", "errored")] == ["3", "2", "1"]
    assert float(field["pass_rate"].get_attribute("data-value")) == pytest.approx(0.6)
    assert field["pass_rate"].text_content().strip() == "60.00%"
    lo, hi = wilson_by_hand(3, 5)
    ci = field["ci"]
    assert (float(ci.get_attribute("data-low")), float(ci.get_attribute("data-high"))) == pytest.approx((lo, hi))
    assert ci.text_content().strip() == "[23.07%, 88.24%]" and ci.get_attribute("data-method") == "wilson"
    assert float(field["mean_score"].get_attribute("data-value")) == pytest.approx(MEAN_SCORE)
    named = row.eval_on_selector_all(
        ".named-metric", "ns => ns.map(n => [n.dataset.name, Number(n.dataset.value), Number(n.dataset.n)])"
    )
    assert [[n, pytest.approx(m), c] for n, m, c in named] == [[n, pytest.approx(m), c] for n, (m, c) in NAMED.items()]
    assert row.query_selector("td.mono").text_content() == "m"  # the provider
    # the tests come before the metric table in the run card, and the page says how the interval is made
    assert page.evaluate(
        "() => { const c = document.querySelector('.run-summary');"
        " return c.innerHTML.indexOf('tests-headline') < c.innerHTML.indexOf('class=\"summary\"'); }"
    )
    assert "Wilson score interval" in page.text_content(".ci-methods")
    assert watched.dialogs == [] and watched.errors == [] and watched.csp_violations() == []


def test_the_drawer_lists_each_assertion_and_a_script_in_a_reason_stays_text(
    watched: Watched, page_file: Path, artifacts_dir: Path
) -> None:
    watched.load(page_file.as_uri() + "#sample=pirate/t1")
    page = watched.page
    assert page.is_visible("#detail table.assertions")
    rows = _assertion_rows(page)  # a passing check's reason is the checker's own words: not pinned here
    assert [[r[0], r[1], r[2], r[4]] for r in rows] == [
        ["icontains", "✓ pass", "1", "pirate"],
        ["contains", "✓ pass", "1", ""],
    ]

    watched.load(page_file.as_uri() + "#sample=pirate/t3")
    page.wait_for_function("() => document.getElementById('detail-title').textContent.endsWith('/ t3')")
    assert _assertion_rows(page) == [["python", "✗ fail", "0.250", PAYLOAD, "tone"]]
    assert page.query_selector("#detail table.assertions tr.assertion.fail") is not None
    page.screenshot(path=str(artifacts_dir / "tests-headline-drawer.png"))
    # the reason's markup is text: no element made from it, nothing ran
    assert page.query_selector("#detail script") is None and page.query_selector("#detail img") is None
    page.wait_for_timeout(200)
    assert page.evaluate("() => window.__pwned === undefined")
    assert watched.dialogs == [] and watched.errors == [] and watched.csp_violations() == []

    watched.load(page_file.as_uri() + "#sample=pirate/t4")  # the errored test: its error, no assertion rows
    page.wait_for_function("() => document.getElementById('detail-title').textContent.endsWith('/ t4')")
    assert page.query_selector("#detail .verdict.error") is not None
    assert page.query_selector("#detail table.assertions") is None


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    from tests.browser.browser_support import ARTIFACTS

    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
