"""The report's view model: what the HTML page shows, built from loaded runs, comparisons and failure themes.

Figures come from the results code (``Run.metric_rows``, ``Run.operational``, ``compare_runs``) and the
feedback grouping; this module only selects, formats and packs them. The per-sample data for the browser is
packed compactly (short keys, capped texts) so a page for 50,000 samples stays small; see
:func:`assay.report.samples.sample_data`.
"""

from __future__ import annotations

import math
import time
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from assay.report import svg
from assay.report.compareview import CompareView, compare_view
from assay.report.fmt import (
    fmt_int,
    fmt_interval,
    fmt_percent,
    fmt_seconds,
    fmt_time,
    fmt_value,
    raw,
)
from assay.report.methods import MethodUses, method_name
from assay.report.pageselect import MAX_PAGE_SAMPLES, PageSelection, select_samples
from assay.report.samples import (
    RUN_CSS,
    SamplePositions,
    iter_samples,
    sample_meta,
)
from assay.report.themeview import ThemeView, theme_section

if TYPE_CHECKING:
    from assay.record import RunManifest
    from assay.results import Run


# --- the page -----------------------------------------------------------------------------------------------


@dataclass
class MetricView:
    """One summary row: a task's metric under one filter."""

    task: str
    metric: str
    filter: str
    higher_is_better: bool
    value_raw: str
    value_s: str
    ci_low_raw: str
    ci_high_raw: str
    ci_s: str
    ci_method: str
    chart: Markup
    n_scored: int
    n_total: int | None
    n_errored: int
    n_errored_verdicts: int  # errored verdicts, repeats included (a sample keeps a value if one repeat was judged)
    pass_rate_raw: str
    pass_rate_s: str
    ci_method_s: str = ""  # the interval's method in words (what the page says each figure uses)
    uncalibrated: str = ""  # why a gated judge's figures are uncalibrated (require_calibration), else empty


@dataclass
class TestsView:
    """One headline row of a ``headline: tests`` task: tests passed / failed / errored, the pass rate with its
    Wilson interval, the mean score and the named metrics (promptfoo's view of a prompt × provider)."""

    task: str
    filter: str
    metric: str
    model: str
    passed: int
    failed: int
    errored: int
    not_applicable: int
    counts_s: str
    pass_rate_raw: str
    pass_rate_s: str
    ci_low_raw: str
    ci_high_raw: str
    ci_s: str
    mean_raw: str
    mean_s: str
    named: list[tuple[str, str, str, int]]  # (name, mean as shown, mean raw, tests with it)
    chart: Markup


@dataclass
class TaskView:
    """A task (or group) with its metric rows."""

    name: str
    is_group: bool
    metrics: list[MetricView] = field(default_factory=list)


@dataclass
class OpsView:
    """Operational figures of one model or judge in one run."""

    role: str
    name: str
    requests: str
    errors: str
    cache_hits: str
    input_tokens: str
    output_tokens: str
    latency_s: str
    cost: str
    histogram: Markup


@dataclass
class RunView:
    """Everything the page shows about one run."""

    index: int
    css: str
    label: str
    run_id: str
    status: str
    model_name: str
    judges: list[str]
    created: str
    duration: str | None
    n_samples: int
    error_policy: str | None
    git_hash: str | None
    tasks: list[TaskView]
    notes: list[str]
    ops: list[OpsView]
    ops_totals: list[tuple[str, str]]
    themes: list[ThemeView]
    themes_note: str
    tests: list[TestsView] = field(default_factory=list)  # headline: tests tasks, shown before the metrics


@dataclass
class PageView:
    """The whole page: runs, comparisons and the packed sample data for the browser script."""

    title: str
    generated_at: str
    assay_version: str
    confidence_label: str
    ci_method_label: str
    runs: list[RunView]
    comparisons: list[CompareView]
    data: dict[str, Any]  # everything the page script reads except "samples"
    samples: Callable[[], Iterator[dict[str, Any]]]  # the packed samples, read from disk when the page is written
    samples_note: str | None = None  # what the page leaves out of a large run's samples, and how they were chosen


# --- runs -----------------------------------------------------------------------------------------------


def run_labels(runs: Sequence[Run]) -> list[str]:
    """Each run's label: its folder name, made unique with its position when two folders share a name."""
    names = [r.name or r.manifest.run_id for r in runs]
    return [f"{n} ({i + 1})" if names.count(n) > 1 else n for i, n in enumerate(names)]


def _ci(row: Any) -> tuple[list[float] | None, str]:
    if row.ci:
        return list(row.ci), str(row.ci_method or "")
    if row.ci_bootstrap:
        return list(row.ci_bootstrap), "bootstrap"
    if row.ci_t:
        return list(row.ci_t), "t"
    return None, ""


def task_views(run: Run, css: str, uses: MethodUses | None = None) -> list[TaskView]:
    """The summary rows of a run, grouped by task (groups after tasks); the CI method of each is added to ``uses``."""
    tasks: dict[str, TaskView] = {}
    uses = MethodUses() if uses is None else uses
    uses.add_settings(run.settings.get("bootstrap_iters"), run.settings.get("seed"))
    from assay.evaluators.judge.calibration.gate import uncalibrated_note

    for row in run.metric_rows():
        ci, method = _ci(row)
        if ci is not None:
            uses.add(method, row.metric, binned=row.entry.get("bootstrap_method") == "binned")
        hib = True if row.higher_is_better is None else bool(row.higher_is_better)
        title = f"{row.task} {row.metric}: {fmt_value(row.mean)} {fmt_interval(ci)}"
        chart = svg.bar_chart(
            [svg.Bar(row.mean, ci[0] if ci else None, ci[1] if ci else None, css=css)], width=200, title=title
        )
        view = tasks.setdefault(row.task, TaskView(row.task, row.is_group))
        view.metrics.append(
            MetricView(
                task=row.task,
                metric=row.metric,
                filter=row.filter,
                higher_is_better=hib,
                value_raw=raw(row.mean),
                value_s=fmt_value(row.mean),
                ci_low_raw=raw(ci[0]) if ci else "",
                ci_high_raw=raw(ci[1]) if ci else "",
                ci_s=fmt_interval(ci),
                ci_method=method,
                chart=Markup(chart),
                n_scored=row.n_scored,
                n_total=row.n_total if row.entry else None,
                n_errored=row.n_errored,
                n_errored_verdicts=int(row.entry.get("n_errored_verdicts") or 0),
                pass_rate_raw=raw(row.pass_rate),
                pass_rate_s=fmt_percent(row.pass_rate),
                ci_method_s=method_name(method) if ci is not None else "",
                uncalibrated=uncalibrated_note(row.entry) or "",
            )
        )
    return list(tasks.values())


def tests_views(run: Run, css: str) -> list[TestsView]:
    """The tests headline rows of a run (its ``headline: tests`` tasks; empty for other runs)."""
    from assay.models.base import display_name
    from assay.report.table import pct, pct_interval, tests_counts

    views: list[TestsView] = []
    for row in run.metric_rows(groups=False):
        t = row.entry.get("tests")
        if not isinstance(t, dict):
            continue
        ci = t.get("ci") if isinstance(t.get("ci"), list) and len(t["ci"]) == 2 else None
        rate = t.get("pass_rate")
        title = f"{row.task}: pass rate {pct(rate)} {pct_interval(ci)}"
        chart = svg.bar_chart(
            [svg.Bar(rate, ci[0] if ci else None, ci[1] if ci else None, css=css)], width=200, title=title
        )
        named = [
            (str(name), fmt_value(f.get("mean")), raw(f.get("mean")), int(f.get("n") or 0))
            for name, f in (t.get("named_scores") or {}).items()
            if isinstance(f, dict)
        ]
        views.append(
            TestsView(
                task=row.task,
                filter=row.filter,
                metric=row.metric,
                model=display_name(run.manifest.model),
                passed=int(t.get("passed") or 0),
                failed=int(t.get("failed") or 0),
                errored=int(t.get("errored") or 0),
                not_applicable=int(t.get("n_not_applicable") or 0),
                counts_s=tests_counts(t),
                pass_rate_raw=raw(rate),
                pass_rate_s=pct(rate),
                ci_low_raw=raw(ci[0]) if ci else "",
                ci_high_raw=raw(ci[1]) if ci else "",
                ci_s=pct_interval(ci),
                mean_raw=raw(t.get("mean_score")),
                mean_s=fmt_value(t.get("mean_score")),
                named=named,
                chart=Markup(chart),
            )
        )
    return views


class LatencyTally:
    """Per (role, name), the latencies of requests that reached a model (not cached), for the histograms, gathered
    one record's JSON object at a time (:meth:`Run.iter_record_dicts`; a SampleRecord's defaults where a key is
    absent).

    Attributes requests exactly as :func:`assay.results.operational.operational_figures` does (which reports
    only percentiles; a histogram needs the values): the model under its configured name, each judge call
    under its own model.
    """

    def __init__(self, manifest: RunManifest) -> None:
        from assay.models.base import display_name

        self.values: dict[tuple[str, str], array[float]] = {}  # 8 bytes a request
        self._model = self.values.setdefault(("model", display_name(manifest.model)), array("d"))

    def add(self, rec: Mapping[str, Any]) -> None:
        from assay.results.operational import judge_calls

        model_lat = self._model
        for resp in rec.get("responses") or ():
            if resp is None or resp.get("cached", False):
                continue
            latency = float(resp.get("latency_s", 0.0))
            if math.isfinite(latency):
                model_lat.append(latency)
        for fr in (rec.get("filters") or {}).values():
            for verdicts in (fr.get("verdicts") or {}).values():
                for v in verdicts:
                    for call in judge_calls(v):
                        lat = call.get("latency_s")
                        if call.get("cached") or not isinstance(lat, int | float) or not math.isfinite(lat):
                            continue
                        key = ("judge", str(call.get("model") or "judge"))
                        self.values.setdefault(key, array("d")).append(float(lat))


def latencies(records: Iterable[Mapping[str, Any]], manifest: RunManifest) -> dict[tuple[str, str], array[float]]:
    """:class:`LatencyTally`'s values over ``records``."""
    tally = LatencyTally(manifest)
    for rec in records:
        tally.add(rec)
    return tally.values


def _cost(value: Any, priced: bool) -> str:
    if isinstance(value, int | float):
        return f"${value:,.4f}"
    return "no price for this model" if priced else "no prices configured"


def ops_views(
    run: Run, lat: dict[tuple[str, str], array[float]] | None = None
) -> tuple[list[OpsView], list[tuple[str, str]]]:
    """Operational figures per model and judge, each with a latency histogram; and the run's totals. ``lat``:
    the run's latencies, when they were gathered already (else its records are read for them)."""
    figures = run.operational
    if lat is None:
        lat = latencies(run.iter_record_dicts(), run.manifest)
    priced = bool(figures.get("prices_configured"))
    views: list[OpsView] = []
    for role, by_name in (figures.get("roles") or {}).items():
        for name, f in by_name.items():
            pct = f.get("latency_s") or {}
            lat_s = " / ".join(fmt_seconds(pct.get(k)) for k in ("p50", "p95", "p99"))
            if pct.get("p50") is None and f.get("requests") and f.get("cache_hits") == f.get("requests"):
                lat_s = "— (every request was served from the cache)"
            views.append(
                OpsView(
                    role=role,
                    name=name,
                    requests=fmt_int(f.get("requests")),
                    errors=fmt_int(f.get("errors")),
                    cache_hits=fmt_int(f.get("cache_hits")),
                    input_tokens=fmt_int(f.get("input_tokens")),
                    output_tokens=fmt_int(f.get("output_tokens")),
                    latency_s=lat_s,
                    cost=_cost(f.get("cost_usd"), priced),
                    histogram=Markup(
                        svg.histogram_chart(
                            lat.get((role, name), array("d")), title=f"{role} {name}: latency of requests"
                        )
                    ),
                )
            )
    totals: list[tuple[str, str]] = []
    if figures.get("total_seconds") is not None:
        totals.append(("wall time", fmt_seconds(figures["total_seconds"])))
    if figures.get("samples_per_second"):
        totals.append(("throughput", f"{figures['samples_per_second']:.1f} samples/s"))
    if isinstance(figures.get("cost_usd"), int | float):
        totals.append(("total cost", f"${figures['cost_usd']:,.4f}"))
    return views, totals


def run_notes(run: Run) -> list[str]:
    """Things a reader should know before trusting the figures."""
    notes: list[str] = []
    settings = run.settings
    if run.computed:
        notes.append("results.json is missing: these figures were computed from samples.jsonl now.")
    for task, info in (settings.get("tasks") or {}).items():
        missing = info.get("n_missing") or 0
        if missing:
            notes.append(f"{task}: {missing} selected sample(s) have no record (the run did not finish them).")
        errors = info.get("n_model_errors") or 0
        if errors:
            example = info.get("model_error_example")
            notes.append(
                f"{task}: {errors} sample(s) had a failed model request" + (f" (first: {example})." if example else ".")
            )
    if run.torn_lines:
        notes.append(f"samples.jsonl ended with {run.torn_lines} unfinished line(s), skipped.")
    notes.extend(str(w) for w in settings.get("warnings") or [])
    from assay.results.judgecorrected import correction_note

    for task, info in (settings.get("tasks") or {}).items():
        for by_metric in (info.get("filters") or {}).values():
            for metric, entry in by_metric.items():
                corrected = correction_note(task, metric, entry)
                if corrected:
                    notes.append(corrected)
    return notes


# --- the whole page -----------------------------------------------------------------------------------------


def _ci_label(uses: MethodUses, comparisons: Sequence[tuple[int, int, Any]]) -> str:
    """The methods of every interval on the page, from the methods its figures recorded (runs and comparisons)."""
    for _, _, comparison in comparisons:
        uses.add_settings(comparison.iters, comparison.seed)
        for m in comparison.metrics:
            if m.ci is not None:
                uses.add(m.ci_method, f"Δ {m.metric}")
    return uses.label()


def build_page(
    runs: Sequence[Run],
    comparisons: Sequence[tuple[int, int, Any]] = (),
    themes: Sequence[Sequence[Any] | None] | None = None,
    *,
    title: str | None = None,
    max_samples: int | None = MAX_PAGE_SAMPLES,
    run_latencies: Sequence[dict[tuple[str, str], array[float]]] | None = None,
) -> PageView:
    """The page for ``runs``; ``comparisons`` are ``(a, b, Comparison)`` by run position; ``themes`` per run;
    ``run_latencies``: each run's :class:`LatencyTally` values, when gathered already.
    The page holds at most ``max_samples`` samples of each run (None or 0: all; see :mod:`pageselect`)."""
    from assay.models.base import display_name
    from assay.version import __version__

    labels = run_labels(runs)
    data, metrics = sample_meta(runs, labels)
    selection = select_samples(runs, max_samples)
    where = SamplePositions(runs, selection)
    views: list[RunView] = []
    uses = MethodUses()
    confidences: set[float] = set()
    for i, run in enumerate(runs):
        css = RUN_CSS[i % len(RUN_CSS)]
        tasks = task_views(run, css, uses)
        if isinstance(run.settings.get("confidence"), int | float):
            confidences.add(float(run.settings["confidence"]))
        ops, totals = ops_views(run, run_latencies[i] if run_latencies is not None else None)
        manifest = run.manifest
        run_themes = themes[i] if themes is not None and i < len(themes) else None
        theme_views, theme_data, theme_note = theme_section(run_themes, run, i, where)
        data["themes"].extend(theme_data)
        views.append(
            RunView(
                index=i,
                css=css,
                label=labels[i],
                run_id=manifest.run_id,
                status=manifest.status,
                model_name=display_name(manifest.model),
                judges=[display_name(j) for j in manifest.judges],
                created=fmt_time(manifest.created_at),
                duration=fmt_seconds(manifest.total_seconds) if manifest.total_seconds else None,
                n_samples=run.n_records,
                error_policy=run.settings.get("error_policy"),
                git_hash=manifest.git_hash,
                tasks=tasks,
                notes=run_notes(run),
                ops=ops,
                ops_totals=totals,
                themes=theme_views,
                themes_note=theme_note,
                tests=tests_views(run, css),
            )
        )
        if views[-1].tests:
            uses.add("wilson", "pass rate of tests")
    conf = next(iter(confidences)) if len(confidences) == 1 else 0.95
    if title is None:
        title = (
            f"{labels[0]} — {views[0].model_name}"
            if len(runs) == 1
            else " vs ".join(labels)
            if runs
            else "assay report"
        )
    return PageView(
        title=title,
        generated_at=fmt_time(time.time()),
        assay_version=__version__,
        confidence_label=f"{100 * conf:g}%",
        ci_method_label=_ci_label(uses, comparisons),
        runs=views,
        comparisons=[compare_view(c, runs, a, b, labels) for a, b, c in comparisons],
        data=data,
        samples=lambda: iter_samples(runs, data["tasks"], metrics, selection),
        samples_note=samples_note(selection, labels),
    )


def samples_note(selection: PageSelection, labels: Sequence[str]) -> str | None:
    """What the page says when it holds only some of a run's samples (None when it holds them all)."""
    if not selection.capped:
        return None
    held = "; ".join(
        f"{shown:,} of the {total:,} samples of {label}" if len(labels) > 1 else f"{shown:,} of its {total:,} samples"
        for label, shown, total in zip(labels, selection.shown, selection.totals, strict=True)
        if shown < total
    )
    return (
        f"This page holds {held}: every errored sample first, then failing ones, then passing ones, each kind spread "
        "evenly over the run where it does not fit whole. Every sample is in the run folder (samples.jsonl, "
        "samples_<task>.jsonl); `assay report --html-samples N` holds more."
    )
