"""The HTML report without a browser: escaping, the CSP, figures against results.json, packing, SVG charts."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from assay.report import svg
from assay.report.html import csp_hash, embed_json, render_html, write_html
from assay.report.samples import TEXT_CAP, MetricIndex, pack_sample, sample_input
from assay.report.viewmodel import latencies
from assay.results import compare_runs, load_run
from tests.browser.report_runs import PAYLOADS, TEMPLATE_HEAD, XSS_TASK, make_record, make_run, read_results

ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "div", "span", "nav", "a", "main", "noscript", "p",
    "section", "h1", "h2", "h3", "ul", "li", "b", "table", "thead", "tbody", "tr", "th", "td", "svg", "rect", "path",
    "g", "text", "line", "dl", "dt", "dd", "ol", "label", "select", "option", "input", "button", "aside", "script",
}  # fmt: skip


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text of each <script> and <style> element."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.raw: dict[str, list[str]] = {"script": [], "style": []}
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in self.raw:
            self._in = tag
            self.raw[tag].append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == self._in:
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in:
            self.raw[self._in][-1] += data


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("html")
    return make_run(root / "a", 30, long_output=TEXT_CAP + 5_000), make_run(root / "b", 30, flip=True)


@pytest.fixture(scope="module")
def page(runs: tuple[Path, Path]) -> str:
    return render_html([runs[0]])


def parse(html: str) -> Tags:
    tags = Tags()
    tags.feed(html)
    return tags


def embedded(html: str) -> dict[str, Any]:
    block = re.search(r'<script type="application/json" id="assay-data">(.*?)</script>', html, re.S)
    assert block is not None
    data: dict[str, Any] = json.loads(block.group(1))
    return data


def test_embed_json_cannot_end_its_script_block() -> None:
    value = {"t": "</script><!-- <script>alert(1)</script> & \u2028\u2029 ]]>", "n": [1.5, None]}
    text = embed_json(value)
    assert not set(text) & {"<", ">", "&", "\u2028", "\u2029"}
    assert json.loads(text) == value
    assert json.loads(embed_json({"x": float("nan"), "y": [float("inf")]})) == {"x": None, "y": [None]}


def test_payloads_never_become_markup(page: str) -> None:
    tags = parse(page)
    names = {t for t, _ in tags.tags}
    assert names <= ALLOWED_TAGS, names - ALLOWED_TAGS
    assert [a.get("type") for t, a in tags.tags if t == "script"] == ["application/json", None]
    assert not [(t, k) for t, attrs in tags.tags for k in attrs if k.startswith("on")]
    assert not [a for t, a in tags.tags if a.get("id") == "pwned"]
    assert "<img" not in page.lower() and "<svg onload" not in page.lower()
    # the payloads are there, as text: in the summary (task name) and in the data
    assert any(t == "tr" and a.get("data-task") == XSS_TASK for t, a in tags.tags)
    samples = embedded(page)["samples"]
    assert {f"Question {i}: {p}" for i, p in enumerate(PAYLOADS)} <= {s["n"] for s in samples}
    assert {f"{TEMPLATE_HEAD}\nQuestion {i}: {p}" for i, p in enumerate(PAYLOADS)} <= {s["p"] for s in samples}


def test_csp_allows_only_the_page_script_and_style(page: str) -> None:
    tags = parse(page)
    meta = next(a for t, a in tags.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    policy = dict(d.strip().split(" ", 1) for d in (meta["content"] or "").split(";"))
    assert policy["default-src"] == "'none'"
    assert policy["script-src"] == csp_hash(tags.raw["script"][1])
    assert policy["style-src"] == csp_hash(tags.raw["style"][0])
    assert policy["img-src"] == "data:"
    assert "unsafe" not in (meta["content"] or "")
    assert "http://" not in page and "https://" not in page


def test_summary_figures_are_those_of_results_json(runs: tuple[Path, Path], page: str) -> None:
    results = read_results(runs[0])["assay"]["tasks"]
    rows = [a for t, a in parse(page).tags if t == "tr" and "data-metric" in a]
    cells = re.findall(
        r'data-task="([^"]*)" data-metric="([^"]*)" data-filter="([^"]*)">.*?data-field="value" data-value="([^"]*)">'
        r"([^<]*)<.*?data-low=\"([^\"]*)\" data-high=\"([^\"]*)\".*?data-field=\"pass_rate\" data-value=\"([^\"]*)\"",
        page,
        re.S,
    )
    assert len(cells) == len(rows) == sum(len(ms) for t in results.values() for ms in t["filters"].values())
    for task, metric, filt, value, text, low, high, pass_rate in cells:
        entry = results[task.replace("&#34;", '"').replace("&gt;", ">").replace("&lt;", "<")]["filters"][filt][metric]
        assert float(value) == entry["mean"] and text == f"{entry['mean']:.4f}"
        assert [float(low), float(high)] == entry["ci"]
        assert float(pass_rate) == entry["pass_rate"]


def test_sample_data_round_trips_and_caps_long_texts(runs: tuple[Path, Path], page: str) -> None:
    data = embedded(page)
    run = load_run(runs[0])
    assert len(data["samples"]) == len(run.records)
    long = next(s for s in data["samples"] if s["i"] == "s1" and data["tasks"][s["t"]] == "qa")
    text, full = long["o"][0]["x"]
    assert len(text) == TEXT_CAP and full == TEXT_CAP + 5_000 + len("answer 1")
    model_error = next(s for s in data["samples"] if s["i"] == "s5")
    assert model_error["o"][0]["e"].startswith("HTTP 500")
    assert all(v[2] is None for v in model_error["v"])


def test_pack_sample_is_compact() -> None:
    metrics = MetricIndex()
    rec = make_record("qa", 2, model="m")  # passes exact_match
    packed = pack_sample(rec, 0, 0, metrics)
    assert set(packed) == {"r", "t", "i", "d", "p", "g", "o", "v"}  # no metadata, no filtered copy of the outputs
    em = next(v for v in packed["v"] if metrics.keys[v[0]] == ("exact_match", "none"))
    assert em == [metrics("exact_match", "none"), 1, 1, [[1, 1]]]  # trailing nulls dropped
    errored = pack_sample(make_record("qa", 11, model="m"), 0, 0, metrics)
    judge = next(v for v in errored["v"] if metrics.keys[v[0]] == ("judge", "none"))
    assert judge[1] is None and judge[2] is None and judge[3][0][4].startswith("judge reply unparseable")


def test_sample_input_is_the_docs_input_not_the_template() -> None:
    rec = make_record("qa", 2, model="m")
    assert sample_input(rec, "q") == rec.doc["q"]  # the task's fields.input
    assert sample_input(rec, "missing.path") == rec.prompt  # one user message: the prompt itself
    assert "n" not in pack_sample(rec, 0, 0, MetricIndex())  # ... and then not packed twice
    chat = rec.model_copy(
        update={
            "doc": {"input": "the doc's input"},
            "messages": [
                {"role": "system", "content": "Be terse."},
                {"role": "user", "content": [{"type": "text", "text": "What is 2+2?"}]},
            ],
        }
    )
    assert sample_input(chat) == "the doc's input"  # a doc's own "input" field
    chat.doc = {}
    assert sample_input(chat) == "What is 2+2?"  # else the last user message, not "system: Be terse."
    assert pack_sample(chat, 0, 0, MetricIndex())["n"] == "What is 2+2?"


def test_comparison_given_or_computed(runs: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = load_run(runs[0]), load_run(runs[1])
    comparison = compare_runs(a, b, iters=500)
    out = write_html([a, b], tmp_path / "deep" / "cmp.html", compare=comparison)
    assert out == tmp_path / "deep" / "cmp.html" and out.is_file()
    html = out.read_text(encoding="utf-8")
    assert html.count('class="delta-row"') == len(comparison.metrics)
    assert html.count('<li><a href="#sample=') == sum(len(m.regressed) + len(m.improved) for m in comparison.metrics)
    deltas = [float(v) for v in re.findall(r'class="num delta[^"]*" data-value="([^"]+)"', html)]
    assert deltas == [m.diff for m in comparison.metrics]
    # three runs and no comparison given: each later run against the first
    three = render_html([runs[0], runs[1], runs[1]])
    assert three.count('<div class="card compare"') == 2


def test_run_without_results_json_is_reported_as_such(tmp_path: Path) -> None:
    run = make_run(tmp_path / "fresh", 12, tasks=("qa",), results=False)
    html = render_html([run])
    assert "results.json is missing" in html
    assert html.count('class="metric-row"') == 2


def test_render_needs_a_run() -> None:
    with pytest.raises(ValueError, match="at least one run"):
        render_html([])


def test_bar_chart_escapes_and_scales() -> None:
    chart = svg.bar_chart([svg.Bar(0.5, 0.4, 0.6, label="<b>x</b>")], title='"><script>')
    assert "<b>" not in chart and "<script>" not in chart and "&lt;b&gt;" in chart
    assert svg.bar_domain([svg.Bar(0.5, 0.4, 0.6)]) == (0.0, 1.0)
    assert svg.bar_domain([svg.Bar(3.0, 2.0, 4.5), svg.Bar(-0.2)]) == (-0.2, 4.5)
    assert ">n/a</text>" in svg.bar_chart([svg.Bar(None)])
    assert 'class="whisker"' not in svg.bar_chart([svg.Bar(0.3)])


def test_histogram_counts_and_tail() -> None:
    values = [0.1] * 60 + [0.2] * 39 + [50.0] + [float("nan")]
    hist = svg.histogram(values, bins=10)
    assert hist is not None and sum(hist.counts) == 100
    assert hist.overflow_from is not None and hist.counts[-1] >= 1  # the 50 s outlier sits in the open last bin
    assert svg.histogram([]) is None
    assert "no data" in svg.histogram_chart([])
    chart = svg.histogram_chart([0.1, 0.2, 0.3], title="<t>")
    assert "p50 200 ms" in chart and "&lt;t&gt;" in chart
    assert "p50 2 s" in svg.histogram_chart([1.0, 2.0, 3.0])


def test_latency_histograms_follow_the_operational_figures(runs: tuple[Path, Path], page: str) -> None:
    run = load_run(runs[0])
    ops = run.operational["roles"]
    lat = latencies(run.iter_record_dicts(), run.manifest)
    assert {k for k, v in lat.items() if v} == {(role, name) for role, by in ops.items() for name in by}
    for (role, name), values in lat.items():
        f = ops[role][name]
        failed = f["errors"] if role == "model" else 0  # a failed model request has no latency
        assert len(values) == f["requests"] - f["cache_hits"] - failed
        assert float(np.percentile(values, 50)) == pytest.approx(f["latency_s"]["p50"])
    cards = re.findall(r'<div class="ops-card" data-role="(\w+)"', page)
    assert sorted(cards) == sorted(role for role, by in ops.items() for _ in by)
    bars = re.findall(r"<title>[^<]*: (\d+)</title></rect>", page)
    assert sum(map(int, bars)) == sum(len(v) for v in lat.values())


def test_run_with_no_sample_yet(tmp_path: Path) -> None:
    run = make_run(tmp_path / "starting", 3, tasks=("qa",), results=False)
    (run / "samples.jsonl").write_text("", encoding="utf-8")
    html = render_html([run])
    assert embedded(html)["samples"] == []
    assert "qa: 3 selected sample(s) have no record" in html


def test_the_page_reads_the_records_once_for_columns_themes_and_latencies(
    runs: tuple[Path, Path], page: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At a million samples each read parses 1.5 GB: the columns, failure themes and latency histograms come from
    one pass, and say what separate passes over the records say."""
    import assay.store.sampleindex as sampleindex
    from assay.feedback.themes import group_failures
    from assay.report.html import _read_runs

    reads = []
    real = sampleindex.iter_dicts

    def counted(index: Any) -> Any:
        reads.append(index.path)
        return real(index)

    monkeypatch.setattr(sampleindex, "iter_dicts", counted)
    assert render_html([runs[0]]) == page
    assert len(reads) == 1

    separate = load_run(runs[0])
    (themes,), (lat,) = _read_runs([load_run(runs[0])])
    assert themes == group_failures(separate)
    assert lat == latencies(separate.iter_record_dicts(), separate.manifest)
    assert [t.title for t in themes]  # the run has failing samples to group


def test_records_read_after_the_columns_are_still_shown_to_observers(runs: tuple[Path, Path]) -> None:
    run = load_run(runs[0])
    _ = run.columns
    seen: list[str] = []
    run.read_records([lambda rec: seen.append(rec["sample_id"])])
    assert seen == [rec["sample_id"] for rec in run.iter_record_dicts()]
    assert len(seen) == len(run.index)


def test_a_page_of_two_runs_reads_the_second_in_a_forked_child_to_the_same_page(
    runs: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forked_starts: list[str]
) -> None:
    """The runs after the first are read by forked children while this process reads the first: the page is the
    one reading them in turn gives, and a bad line in one is the error reading it alone gives, no child left."""
    import functools
    import multiprocessing
    import shutil

    import assay.forking
    from assay.errors import DataError
    from assay.report import html

    started = forked_starts
    monkeypatch.setattr(assay.forking, "default_processes", lambda: 2)  # a child for the second run on any machine
    monkeypatch.setattr(assay.forking, "may_fork", lambda: False)
    in_turn = render_html(list(runs))
    assert started == []
    monkeypatch.setattr(assay.forking, "may_fork", lambda: True)
    read_here: list[str] = []  # the runs read by this process (a child's calls are counted in its own copy)
    real = html._read_run

    @functools.wraps(real)
    def counted(run: Any) -> Any:
        read_here.append(run.path.name)
        return real(run)

    monkeypatch.setattr(html, "_read_run", counted)
    assert render_html(list(runs)) == in_turn
    assert started == ["_read_run"] and read_here == [runs[0].name]  # the child's value was used

    broken = shutil.copytree(runs[1], tmp_path / "broken")
    lines = (broken / "samples.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    lines[3] = lines[3][:40] + "\n"  # cut short: not JSON
    (broken / "samples.jsonl").write_text("".join(lines), encoding="utf-8")
    with pytest.raises(DataError) as forked:
        render_html([runs[0], broken])
    monkeypatch.setattr(assay.forking, "may_fork", lambda: False)
    with pytest.raises(DataError) as alone:
        render_html([runs[0], broken])
    assert str(forked.value) == str(alone.value) and "samples.jsonl:4:" in str(alone.value)
    assert not multiprocessing.active_children()
