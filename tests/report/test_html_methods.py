"""Every page says how each interval on it was computed, from the methods the figures recorded (issue 25: the header
said "percentile bootstrap … else Student's t" above Wilson and bootstrap-t intervals)."""

from __future__ import annotations

import html as html_lib
import re
from pathlib import Path

import pytest

from assay.report.html import render_html
from assay.report.methods import method_name, methods_label
from assay.results import compare_runs, load_run
from tests.browser.report_runs import make_run, read_results


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("methods")
    return make_run(root / "a", 30, tasks=("qa",)), make_run(root / "b", 30, tasks=("qa",), flip=True)


def _header(page: str) -> str:
    found = re.search(r'<span class="ci-methods">(.*?)</span>', page, re.S)
    assert found, "the page states no interval methods"
    return html_lib.unescape(found.group(1))


def _recorded(run: Path) -> dict[str, str]:
    filters = read_results(run)["assay"]["tasks"]["qa"]["filters"]["none"]
    return {metric: entry["ci_method"] for metric, entry in filters.items()}


def test_a_single_run_page_names_the_method_of_each_figure(runs: tuple[Path, Path]) -> None:
    recorded = _recorded(runs[0])
    assert recorded == {"exact_match": "wilson", "judge": "bca_expanded"}  # pass/fail and graded scores
    page = render_html([runs[0]])
    header = _header(page)
    assert header.startswith("Intervals are 95% confidence intervals: ")
    assert "BCa bootstrap, small-sample expanded (judge)" in header
    assert "Wilson score interval (exact_match)" in header
    assert "200 resamples, seed 1" in header
    assert "Student's t" not in header and "percentile" not in header  # no method no figure here uses
    cells = re.findall(r'data-field="ci" [^>]*data-method="([^"]*)"(?: title="([^"]*)")?', page)
    assert sorted(cells) == sorted((m, method_name(m)) for m in recorded.values())


def test_a_compare_page_names_the_method_of_the_differences_too(runs: tuple[Path, Path]) -> None:
    a, b = load_run(runs[0]), load_run(runs[1])
    page = render_html([a, b], compare=compare_runs(a, b, iters=500))
    header = _header(page)
    assert "Wilson score interval (exact_match)" in header and "BCa bootstrap, small-sample expanded (judge)" in header
    assert "paired percentile bootstrap of the mean difference (Δ exact_match, Δ judge)" in header
    card = html_lib.unescape(re.search(r'<div class="card compare".*?</p>', page, re.S).group(0))
    assert "Intervals of Δ: paired percentile bootstrap of the mean difference (exact_match, judge)" in card
    assert "500 resamples, seed 1234" in card
    assert "A, B and Δ are means over those pairs" in card  # the errors rule the figures follow


def test_methods_label_lists_every_method_with_its_figures() -> None:
    label = methods_label({"t": ["b", "a"], "cluster_bootstrap": ["c"]}, iters={1000}, seeds={7, 8}, binned=["c"])
    assert label == "cluster bootstrap (percentile) (c); Student's t (a, b) — 1,000 resamples, binned resampling for c"
    assert methods_label({}) == "none computed" and method_name("new_method") == "new_method"
