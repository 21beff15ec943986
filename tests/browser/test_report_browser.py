"""The HTML report in a real headless Chromium: figures, filters, deep links, payloads kept inert, ``assay view``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from assay.record import SampleRecord
from tests.browser.browser_support import Reports, Watched
from tests.browser.report_runs import PAYLOADS, TEMPLATE_HEAD, XSS_TASK, expected_outcomes, read_results


def records(run: Path) -> list[SampleRecord]:
    lines = (run / "samples.jsonl").read_text(encoding="utf-8").split("\n")
    return [SampleRecord.model_validate_json(line) for line in lines if line]


def assert_inert(w: Watched) -> None:
    """No injected script ran and no element a payload describes exists."""
    page = w.page
    assert w.dialogs == []
    assert w.errors == []
    assert w.csp_violations() == []
    assert page.evaluate("document.querySelectorAll('img[src=x]').length") == 0
    assert page.evaluate("document.querySelectorAll('[onerror], [onload]').length") == 0
    assert page.evaluate("document.getElementById('pwned')") is None
    assert page.evaluate("document.scripts.length") == 2  # the JSON data block and the page script


def test_summary_equals_results_json(watched: Watched, reports: Reports, artifacts: Path) -> None:
    watched.load(reports.single.as_uri())
    results = read_results(reports.run_a)["assay"]["tasks"]
    rows = watched.page.eval_on_selector_all(
        ".run-summary tr.metric-row",
        """rows => rows.map(r => ({
            task: r.dataset.task, metric: r.dataset.metric, filter: r.dataset.filter,
            value: r.querySelector('[data-field=value]').dataset.value,
            valueText: r.querySelector('[data-field=value]').textContent.trim(),
            low: r.querySelector('[data-field=ci]').dataset.low, high: r.querySelector('[data-field=ci]').dataset.high,
            scored: r.querySelector('[data-field=n_scored]').dataset.value,
            errored: r.querySelector('[data-field=n_errored]').dataset.value,
            passRate: r.querySelector('[data-field=pass_rate]').dataset.value,
            passText: r.querySelector('[data-field=pass_rate]').textContent.trim()}))""",
    )
    expected = [(t, f, m) for t, info in results.items() for f, ms in info["filters"].items() for m in ms]
    assert sorted((r["task"], r["filter"], r["metric"]) for r in rows) == sorted(expected)
    for row in rows:
        entry = results[row["task"]]["filters"][row["filter"]][row["metric"]]
        assert float(row["value"]) == entry["mean"]
        assert row["valueText"] == f"{entry['mean']:.4f}"
        assert [float(row["low"]), float(row["high"])] == entry["ci"]
        assert int(row["scored"]) == entry["n_scored"]
        assert int(row["errored"]) == entry["n_errored"]
        assert float(row["passRate"]) == entry["pass_rate"]
        assert row["passText"] == f"{100 * entry['pass_rate']:.1f}%"
    assert watched.page.locator(".run-summary svg.bar-chart").count() == len(rows)
    watched.page.locator("#summary").screenshot(path=str(artifacts / "report-summary.png"))
    watched.page.screenshot(path=str(artifacts / "report-page.png"), full_page=True)
    assert_inert(watched)


def test_filter_to_failed_counts(watched: Watched, reports: Reports) -> None:
    watched.load(reports.single.as_uri())
    page = watched.page
    assert page.text_content("#sample-count") == "80"
    page.select_option("#f-status", "fail")
    want = expected_outcomes(reports.run_a)
    assert page.get_attribute("#sample-count", "data-count") == str(want["fail"])
    shown = page.locator("#sample-rows tr")
    assert shown.count() == min(want["fail"], 50)
    assert page.locator("#sample-rows tr .badge.fail").count() == shown.count()
    # one evaluator and one task: exactly the samples whose exact_match verdict failed
    page.select_option("#f-task", label="qa")
    page.select_option("#f-metric", label="exact_match")
    em_failed = sum(
        1 for r in records(reports.run_a) if r.task == "qa" and r.filters["none"].passed["exact_match"] is False
    )
    assert page.get_attribute("#sample-count", "data-count") == str(em_failed)
    page.select_option("#f-status", "error")
    em_errored = sum(
        1 for r in records(reports.run_a) if r.task == "qa" and r.filters["none"].passed["exact_match"] is None
    )
    assert page.get_attribute("#sample-count", "data-count") == str(em_errored)
    page.select_option("#f-status", "pass")
    assert page.get_attribute("#sample-count", "data-count") == str(40 - em_failed - em_errored)
    assert_inert(watched)


def test_list_shows_each_samples_input_not_the_prompt_template(watched: Watched, reports: Reports) -> None:
    watched.load(reports.single.as_uri())
    cells = watched.page.eval_on_selector_all(
        "#sample-rows tr", "rows => rows.map(r => [r.cells[1].textContent, r.cells[2].textContent])"
    )
    by_id = {r.sample_id: r for r in records(reports.run_a) if r.task == "qa"}
    assert len(cells) == 50
    for sid, text in cells[:40]:
        assert not text.startswith(TEMPLATE_HEAD)
        assert text == " ".join(by_id[sid].doc["q"].split())[:160]


def test_search_sort_and_pages(watched: Watched, reports: Reports) -> None:
    watched.load(reports.single.as_uri())
    page = watched.page
    assert page.text_content("#p-info") == "page 1 of 2"
    page.click("#p-next")
    assert page.locator("#sample-rows tr").count() == 30
    assert page.is_disabled("#p-next")
    page.fill("#f-q", "s13")
    page.wait_for_function("() => document.getElementById('sample-count').dataset.count === '2'")
    page.fill("#f-q", PAYLOADS[2])  # search for a payload: matched as text, run as nothing
    page.wait_for_function("() => document.getElementById('sample-count').dataset.count !== '2'")
    assert int(page.get_attribute("#sample-count", "data-count") or 0) > 0
    page.fill("#f-q", "")
    page.select_option("#f-metric", label="judge")
    page.select_option("#f-sort", "asc")
    page.wait_for_function("() => document.getElementById('sample-count').dataset.count === '80'")
    scores = page.eval_on_selector_all("#sample-rows tr td:nth-child(6)", "tds => tds.map(t => t.textContent)")
    numeric = [float(s) for s in scores if s != "—"]
    assert numeric == sorted(numeric) and numeric[0] == 0.25
    page.select_option("#f-sort", "desc")
    first = page.text_content("#sample-rows tr:first-child td:nth-child(6)")
    assert first == "1"
    assert_inert(watched)


def test_deep_link_opens_sample(watched: Watched, reports: Reports, artifacts: Path) -> None:
    by_id = {(r.task, r.sample_id): r for r in records(reports.run_a)}
    watched.load(reports.single.as_uri() + "#sample=qa/s3")
    page = watched.page
    assert page.is_visible("#detail")
    assert page.text_content("#detail-title") == "qa / s3"
    rec = by_id[("qa", "s3")]
    texts = page.eval_on_selector_all("#detail pre.text", "ps => ps.map(p => p.textContent)")
    assert rec.prompt in texts and rec.doc["q"] in texts  # the prompt the model saw, and the sample's input
    labels = page.eval_on_selector_all("#detail .field > .label", "ls => ls.map(l => l.textContent)")
    assert labels[:2] == ["Input", "Prompt"]
    assert rec.responses[0] is not None and rec.responses[0].text in texts
    reasons = page.text_content("#detail .verdict.fail")
    assert reasons is not None and "expected 'answer 3'" in reasons
    page.screenshot(path=str(artifacts / "report-sample.png"))
    # a task whose name is itself a payload, linked with percent-encoding; the texts arrive intact
    page.goto(reports.single.as_uri() + f"#sample={quote(XSS_TASK, safe='')}/s4")
    page.wait_for_function("() => document.getElementById('detail-title').textContent.endsWith('/ s4')")
    assert page.text_content("#detail-title") == f"{XSS_TASK} / s4"
    texts = page.eval_on_selector_all("#detail pre.text", "ps => ps.map(p => p.textContent)")
    assert f"Question 4: {PAYLOADS[4]}" in texts
    # Escape closes the panel and leaves the page at the samples
    page.keyboard.press("Escape")
    assert page.is_hidden("#detail")
    assert page.evaluate("location.hash") == "#samples"
    assert_inert(watched)


def test_long_output_is_capped_with_a_note(watched: Watched, reports: Reports) -> None:
    watched.load(reports.single.as_uri() + "#sample=qa/s1")
    page = watched.page
    lengths = page.eval_on_selector_all("#detail pre.text", "ps => ps.map(p => p.textContent.length)")
    assert 20_000 in lengths
    note = page.text_content("#detail .truncated")
    assert note is not None and "25,008 characters" in note


def test_every_payload_stays_inert(watched: Watched, reports: Reports) -> None:
    watched.load(reports.compare.as_uri())
    page = watched.page
    for task in ("qa", XSS_TASK):
        for i in range(len(PAYLOADS) + 4):
            page.evaluate("h => { location.hash = h; }", f"#sample={quote(task, safe='')}/s{i}")
            page.wait_for_function("id => document.getElementById('detail').dataset.sample.endsWith(id)", arg=f"/s{i}")
            page.evaluate("() => document.querySelectorAll('#detail details').forEach(d => d.open = true)")
    page.keyboard.press("Escape")
    page.select_option("#f-status", "error")
    assert_inert(watched)
    html = reports.compare.read_text(encoding="utf-8")
    assert "<img src=x" not in html and "<script>alert" not in html


def test_comparison_section(watched: Watched, reports: Reports, artifacts: Path) -> None:
    from assay.results import compare_runs, load_run

    comparison = compare_runs(load_run(reports.run_a), load_run(reports.run_b))
    watched.load(reports.compare.as_uri())
    page = watched.page
    assert page.locator("table.deltas tr.delta-row").count() == len(comparison.metrics)
    deltas = page.eval_on_selector_all("tr.delta-row .delta", "ts => ts.map(t => t.dataset.value)")
    assert [float(d) for d in deltas] == [m.diff for m in comparison.metrics]
    n_regressed = sum(len(m.regressed) for m in comparison.metrics)
    n_improved = sum(len(m.improved) for m in comparison.metrics)
    assert page.locator("ul.regressed li").count() == n_regressed > 0
    assert page.locator("ul.improved li").count() == n_improved > 0
    page.locator("#compare").screenshot(path=str(artifacts / "report-compare.png"))
    page.click("ul.regressed li:first-child a")
    page.wait_for_selector("#detail:not([hidden])")
    assert page.locator("#detail .runcol").count() == 2
    assert page.eval_on_selector_all("#detail .runcol", "cs => cs.map(c => c.dataset.run)") == ["0", "1"]
    assert_inert(watched)


def _start_view(*run_dirs: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "assay", "view", *map(str, run_dirs), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = re.search(r"http://127\.0\.0\.1:\d+/", line)
    if match is None:
        proc.kill()
        pytest.fail(f"assay view did not print its URL: {line!r} {proc.stderr.read() if proc.stderr else ''}")
    return proc, match.group(0)


def test_assay_view_serves_the_page(watched: Watched, reports: Reports) -> None:
    proc, url = _start_view(reports.run_a, reports.run_b)
    try:
        response: Any = watched.page.goto(url)
        assert response.status == 200
        assert "default-src 'none'" in response.headers["content-security-policy"]
        watched.page.wait_for_function("() => document.body.dataset.ready === '1'", timeout=15_000)
        results = read_results(reports.run_a)["assay"]["tasks"]["qa"]["filters"]["none"]["exact_match"]
        value = watched.page.get_attribute(
            ".run-summary[data-run='0'] tr[data-task='qa'][data-metric='exact_match'] [data-field=value]", "data-value"
        )
        assert value is not None and float(value) == results["mean"]
        assert watched.page.locator("table.deltas tr.delta-row").count() > 0
        watched.page.goto(url + "#sample=qa/s2&run=1")
        watched.page.wait_for_selector("#detail:not([hidden])")
        assert watched.page.text_content("#detail-title") == "qa / s2"
        assert_inert(watched)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_page_data_is_json_in_an_inert_block(reports: Reports) -> None:
    """No browser needed: the embedded data parses back to the exact texts of the run."""
    html = reports.single.read_text(encoding="utf-8")
    block = re.search(r'<script type="application/json" id="assay-data">(.*?)</script>', html, re.S)
    assert block is not None
    data = json.loads(block.group(1))
    inputs = {s["n"] for s in data["samples"] if isinstance(s.get("n"), str)}
    assert all(f"Question {i}: {p}" in inputs for i, p in enumerate(PAYLOADS))
    prompts = {s["p"] for s in data["samples"] if isinstance(s["p"], str)}
    assert all(f"{TEMPLATE_HEAD}\nQuestion {i}: {p}" in prompts for i, p in enumerate(PAYLOADS))


def test_theme_link_filters_to_its_samples(watched: Watched, reports: Reports) -> None:
    from assay.feedback.themes import group_failures
    from assay.results import load_run

    themes = group_failures(load_run(reports.run_a))
    watched.load(reports.single.as_uri())
    page = watched.page
    assert page.locator("ol.themes li").count() == min(len(themes), 50)
    for n in (0, len(themes) - 1):
        page.click(f"ol.themes li[data-theme='{n}'] a")
        page.wait_for_function(
            "n => document.getElementById('sample-count').dataset.count === String(n)", arg=len(themes[n].samples)
        )
        shown = page.eval_on_selector_all(
            "#sample-rows tr", "rows => rows.map(r => [r.cells[0].textContent, r.cells[1].textContent])"
        )
        assert sorted(map(tuple, shown)) == sorted(themes[n].samples)
    page.click("#f-theme .chip button")
    assert page.get_attribute("#sample-count", "data-count") == "80"
    assert_inert(watched)


def test_a_page_holding_part_of_a_run_says_so_and_its_theme_links_still_filter(
    watched: Watched, reports: Reports, tmp_path: Path
) -> None:
    """Past its budget a page holds errored, then failing samples first: the list, its count, the note and the
    theme links all speak of the samples the page holds."""
    from assay.feedback.themes import group_failures
    from assay.report.html import write_html
    from assay.results import load_run

    page_path = write_html([reports.run_a], tmp_path / "part.html", max_samples=30)
    watched.load(page_path.as_uri())
    page = watched.page
    assert page.get_attribute("#sample-count", "data-count") == "30"
    note = page.locator("#samples-note")
    assert note.is_visible() and "This page holds 30 of its 80 samples" in (note.text_content() or "")
    page.select_option("#f-status", "pass")
    passing = int(page.get_attribute("#sample-count", "data-count") or "0")
    want = expected_outcomes(reports.run_a)
    assert passing == max(0, 30 - (80 - want["pass"]))  # errored and failing samples fill it first
    page.select_option("#f-status", "")
    themes = group_failures(load_run(reports.run_a))
    held = page.eval_on_selector_all(
        "#sample-rows tr", "rows => rows.map(r => r.cells[1].textContent)"
    )  # the first page of the list (50 rows): all 30
    page.click("ol.themes li[data-theme='0'] a")
    shown = page.eval_on_selector_all("#sample-rows tr", "rows => rows.map(r => r.cells[1].textContent)")
    assert shown and set(shown) == {sid for _, sid in themes[0].samples} & set(held)
    assert_inert(watched)
