"""The report's view model: what the HTML page shows, built from loaded runs, comparisons and failure themes.

Figures come from the results code (``Run.metric_rows``, ``Run.operational``, ``compare_runs``) and the
feedback grouping; this module only selects, formats and packs them. The per-sample data for the browser is
packed compactly (short keys, capped texts) so a page for 50,000 samples stays small; see ``sample_data``.
"""

from __future__ import annotations

import json
import math
import time
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import numpy as np
from markupsafe import Markup

from assay.report import svg

if TYPE_CHECKING:
    from assay.record import RunManifest, SampleRecord
    from assay.results import Run

TEXT_CAP = 20_000  # characters of one text kept for the detail view; the rest is cut with a note
RUN_CSS = ("run-0", "run-1", "run-2", "run-3")
MAX_CHANGES_LISTED = 500  # regressed / improved samples listed per comparison
MAX_THEMES = 50  # failure themes listed per run


# --- formatting ------------------------------------------------------------------------------------------


def fmt_value(value: float | None) -> str:
    """A metric value as shown in tables: four decimals, an em dash when undefined."""
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:.4f}"


def fmt_interval(ci: Sequence[float] | None) -> str:
    """``[lo, hi]`` with four decimals, an em dash when undefined."""
    if not ci or len(ci) != 2 or any(v is None or not math.isfinite(v) for v in ci):
        return "—"
    return f"[{ci[0]:.4f}, {ci[1]:.4f}]"


def fmt_percent(value: float | None) -> str:
    """A share as a percentage with one decimal."""
    if value is None or not math.isfinite(value):
        return "—"
    return f"{100 * value:.1f}%"


def fmt_seconds(seconds: float | None) -> str:
    """A duration for people: 850 ms, 4.2 s, 3m 05s, 2h 01m."""
    if seconds is None or not math.isfinite(seconds):
        return "—"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def fmt_time(epoch: float | None) -> str:
    """A timestamp in UTC."""
    if not epoch:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(epoch))


def fmt_int(n: int | None) -> str:
    """An integer with thousands separators."""
    return "—" if n is None else f"{n:,}"


def raw(value: float | None) -> str:
    """A number exactly as Python's ``repr`` (for data attributes that tests and scripts read), '' if none."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return repr(float(value))


def sample_href(task: str, sample_id: str, run: int | None = None) -> str:
    """The deep link to one sample: ``#sample=<task>/<id>`` (each part percent-encoded), ``&run=<n>`` optional."""
    href = f"#sample={quote(task, safe='')}/{quote(sample_id, safe='')}"
    return href if run is None else f"{href}&run={run}"


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
class ThemeView:
    """One failure theme: its label, how many samples it covers and the link that filters to them."""

    index: int
    kind: str  # "failure" or "error"
    label: str
    count: int  # samples
    verdicts: int
    href: str
    example: str | None
    feedback: str | None  # the most common feedback with its count


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


@dataclass
class ChangeView:
    """A sample that regressed or improved between two runs."""

    task: str
    sample_id: str
    metric: str
    a_s: str
    b_s: str
    href: str


@dataclass
class DeltaView:
    """One metric's change between two runs, with its paired test."""

    task: str
    metric: str
    filter: str
    a_s: str
    b_s: str
    delta_raw: str
    delta_s: str
    direction: str  # "up" (better), "down" (worse) or "" (no significant change)
    ci_s: str
    test: str
    p_s: str
    significant: bool
    n_paired: str
    n_regressed: int
    n_improved: int


@dataclass
class CompareView:
    """Two runs side by side: metric deltas and the samples that changed."""

    a_index: int
    b_index: int
    a_label: str
    b_label: str
    a_css: str
    b_css: str
    alpha: float
    confidence_label: str
    n_shared_label: str
    rows: list[DeltaView]
    regressed: list[ChangeView]
    improved: list[ChangeView]
    regressed_total: int
    improved_total: int
    notes: list[str]

    @property
    def regressed_more(self) -> bool:
        """True when the list was cut at MAX_CHANGES_LISTED."""
        return self.regressed_total > len(self.regressed)

    @property
    def improved_more(self) -> bool:
        """True when the list was cut at MAX_CHANGES_LISTED."""
        return self.improved_total > len(self.improved)


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


def task_views(run: Run, css: str) -> tuple[list[TaskView], set[str]]:
    """The summary rows of a run, grouped by task (groups after tasks), and the CI methods used."""
    tasks: dict[str, TaskView] = {}
    methods: set[str] = set()
    for row in run.metric_rows():
        ci, method = _ci(row)
        if method:
            methods.add(method)
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
            )
        )
    return list(tasks.values()), methods


def latencies(records: Iterable[SampleRecord], manifest: RunManifest) -> dict[tuple[str, str], array[float]]:
    """Per (role, name), the latencies of requests that reached a model (not cached), for the histograms.

    Attributes requests exactly as :func:`assay.results.operational.operational_figures` does (which reports
    only percentiles; a histogram needs the values): the model under its configured name, each judge call
    under its own model.
    """
    from assay.models.base import display_name
    from assay.results.operational import judge_calls

    model = display_name(manifest.model)
    out: dict[tuple[str, str], array[float]] = {}  # 8 bytes a request, read one record at a time
    model_lat = out.setdefault(("model", model), array("d"))
    for rec in records:
        for resp in rec.responses:
            if resp is not None and not resp.cached and math.isfinite(resp.latency_s):
                model_lat.append(resp.latency_s)
        for fr in rec.filters.values():
            for verdicts in fr.verdicts.values():
                for v in verdicts:
                    for call in judge_calls(v):
                        lat = call.get("latency_s")
                        if call.get("cached") or not isinstance(lat, int | float) or not math.isfinite(lat):
                            continue
                        out.setdefault(("judge", str(call.get("model") or "judge")), array("d")).append(float(lat))
    return out


def _cost(value: Any, priced: bool) -> str:
    if isinstance(value, int | float):
        return f"${value:,.4f}"
    return "no price for this model" if priced else "no prices configured"


def ops_views(run: Run) -> tuple[list[OpsView], list[tuple[str, str]]]:
    """Operational figures per model and judge, each with a latency histogram; and the run's totals."""
    figures = run.operational
    lat = latencies(run.iter_records(), run.manifest)
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
    return notes


# --- the sample browser's data ------------------------------------------------------------------------------


def cap_text(value: Any) -> Any:
    """A text for the page: as is up to TEXT_CAP characters, else ``[first TEXT_CAP chars, full length]``."""
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= TEXT_CAP else [text[:TEXT_CAP], len(text)]


def clip(value: Any) -> str | None:
    """A short text (reason, feedback, error, details) cut at TEXT_CAP with a marker."""
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str, indent=1)
    return text if len(text) <= TEXT_CAP else f"{text[:TEXT_CAP]}… [{len(text) - TEXT_CAP:,} more characters]"


def _trim(items: list[Any]) -> list[Any]:
    while items and items[-1] is None:
        items.pop()
    return items


def _tri(value: bool | None) -> int | None:
    return None if value is None else int(bool(value))


def _score(value: Any) -> float | int | None:
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        return None
    return int(value) if float(value).is_integer() else round(float(value), 6)


class MetricIndex:
    """Numbers the (metric, filter) pairs of all runs, so samples refer to them by position."""

    def __init__(self) -> None:
        self.keys: list[tuple[str, str]] = []
        self._pos: dict[tuple[str, str], int] = {}

    def __call__(self, metric: str, filter_name: str) -> int:
        key = (metric, filter_name)
        pos = self._pos.get(key)
        if pos is None:
            pos = self._pos[key] = len(self.keys)
            self.keys.append(key)
        return pos

    def as_data(self) -> list[dict[str, str]]:
        """The list the page script reads: metric, filter and the results key."""
        return [{"m": m, "f": f, "k": f"{m},{f}"} for m, f in self.keys]


_NO_FIELD: Any = object()


def input_field(task_config: Mapping[str, Any]) -> str | None:
    """The dataset field a task reads its input from (``fields.input`` of its config), if it names one."""
    fields = task_config.get("fields")
    value = fields.get("input") if isinstance(fields, Mapping) else None
    return value if isinstance(value, str) and value else None


def sample_input(rec: SampleRecord, field_path: str | None = None) -> Any:
    """What a person calls the sample's input: the task's input field of the doc (``fields.input``, else the doc's
    ``input``), else the last user message, else the whole prompt; never the prompt's fixed template lines."""
    from assay.tasks.sample import get_path

    value = get_path(rec.doc, field_path, _NO_FIELD) if field_path else rec.doc.get("input", _NO_FIELD)
    if value is not _NO_FIELD and value is not None and value != "":
        return value
    for message in reversed(rec.messages):
        if isinstance(message, Mapping) and message.get("role") == "user" and message.get("content") is not None:
            content = message["content"]
            if isinstance(content, list):  # content parts: their text
                texts = [str(p["text"]) for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
                return "\n".join(texts) if texts else content
            return content
    return rec.prompt


def pack_sample(
    rec: SampleRecord, run_index: int, task_index: int, metrics: MetricIndex, field_path: str | None = None
) -> dict[str, Any]:
    """One sample for the page: short keys, texts capped, verdicts as positional lists, empty fields left out.

    ``{r: run, t: task, i: sample_id, d: doc_id, n: input, p: prompt, g: target, o: [response], v: [verdicts],
    fl, md}`` where ``n`` (see :func:`sample_input`) is left out when it is the prompt itself, a response is
    ``{x: text, c: [[tool, args, result]], l: latency, u: [in, out], k: cached, f: finish, m: model, e: error}``
    and a verdict entry is ``[metric, score, passed, [[score, passed, reason, feedback, error, details] per
    repeat]]`` (``passed`` 1/0, null when errored).
    """
    out: dict[str, Any] = {"r": run_index, "t": task_index, "i": rec.sample_id, "d": rec.doc_id}
    given = sample_input(rec, field_path)
    if given != rec.prompt:
        out["n"] = cap_text(given)
    out["p"] = cap_text(rec.prompt)
    if rec.target is not None:
        out["g"] = cap_text(rec.target)
    responses: list[dict[str, Any]] = []
    n = max(len(rec.responses), len(rec.response_errors))
    raw_texts: list[Any] = []
    for i in range(n):
        resp = rec.responses[i] if i < len(rec.responses) else None
        err = rec.response_errors[i] if i < len(rec.response_errors) else None
        item: dict[str, Any] = {}
        if resp is not None:
            raw_texts.append(resp.text)
            if resp.text is not None:
                item["x"] = cap_text(resp.text)
            if resp.tool_calls:
                item["c"] = [
                    _trim(
                        [
                            clip(tc.name) or "",
                            clip(json.dumps(tc.arguments, ensure_ascii=False, default=str)),
                            clip(tc.result),
                        ]
                    )
                    for tc in resp.tool_calls
                ]
            item["l"] = round(resp.latency_s, 4)
            if resp.usage.input_tokens or resp.usage.output_tokens:
                item["u"] = [resp.usage.input_tokens, resp.usage.output_tokens]
            if resp.cached:
                item["k"] = 1
            if resp.finish_reason:
                item["f"] = resp.finish_reason
            if resp.model:
                item["m"] = resp.model
        if err:
            item["e"] = clip(err)
        responses.append(item)
    if responses:
        out["o"] = responses
    verdicts: list[list[Any]] = []
    filtered: dict[str, list[Any]] = {}
    for filter_name, fr in rec.filters.items():
        if list(fr.filtered) != raw_texts:
            filtered[filter_name] = [cap_text(v) for v in fr.filtered]
        for metric, vs in fr.verdicts.items():
            per_repeat = [
                _trim(
                    [
                        _score(v.get("score")),
                        _tri(None if v.get("error") else bool(v.get("passed"))),
                        clip(v.get("reason")),
                        clip(v.get("feedback")),
                        clip(v.get("error")),
                        clip(v.get("details")) if v.get("details") else None,
                    ]
                )
                for v in vs
            ]
            verdicts.append(
                [metrics(metric, filter_name), _score(fr.scores.get(metric)), _tri(fr.passed.get(metric)), per_repeat]
            )
    if verdicts:
        out["v"] = verdicts
    if filtered:
        out["fl"] = filtered
    if rec.metadata:
        md = json.dumps(rec.metadata, ensure_ascii=False, default=str)
        out["md"] = rec.metadata if len(md) <= TEXT_CAP else {"note": f"metadata of {len(md):,} characters not shown"}
    return out


class SamplePositions:
    """The position of each (run, task, sample id) in the page's sample list, from the runs' columns (no record
    is read): runs in order, then tasks in manifest order, then doc_id order, as :func:`iter_samples` packs them."""

    def __init__(self, runs: Sequence[Run]) -> None:
        self._tasks: dict[tuple[int, str], tuple[int, Any, Any]] = {}
        start = 0
        for r, run in enumerate(runs):
            for name in run.task_names:
                cols = run.columns.get(name)
                if cols is None or cols.id_hashes is None:
                    continue
                order = np.argsort(cols.id_hashes, kind="stable")
                self._tasks[(r, name)] = (start, cols, order)
                start += len(cols)
        self.total = start

    def get(self, key: tuple[int, str, str]) -> int | None:
        """The position of ``(run index, task, sample_id)``, or None when that run has no such sample."""
        from assay.results.columns import hash64

        found = self._tasks.get((key[0], key[1]))
        if found is None:
            return None
        start, cols, order = found
        h = hash64(key[2])
        ranked = cols.id_hashes[order]
        lo, hi = np.searchsorted(ranked, h, "left"), np.searchsorted(ranked, h, "right")
        for i in order[lo:hi]:
            if cols.sample_ids[int(i)] == key[2]:
                return int(start + i)
        return None


def sample_meta(runs: Sequence[Run], labels: Sequence[str]) -> tuple[dict[str, Any], MetricIndex]:
    """The browser's data for all runs except the samples themselves (see :func:`iter_samples`), and the index of
    (metric, filter) pairs the samples refer to (every pair of every run's columns, so it is complete up front)."""
    tasks: list[str] = []
    metrics = MetricIndex()
    for run in runs:
        for info in run.manifest.tasks:
            if info.name not in tasks:
                tasks.append(info.name)
            for m in info.metrics:
                for f in info.filters:
                    metrics(m.name, f)
            cols = run.columns.get(info.name)
            for f, m_name in cols.keys if cols is not None else []:
                metrics(m_name, f)
    data = {
        "runs": [{"label": label, "css": RUN_CSS[i % len(RUN_CSS)]} for i, label in enumerate(labels)],
        "tasks": tasks,
        "metrics": metrics.as_data(),
        "cap": TEXT_CAP,
        "themes": [],
    }
    return data, metrics


def iter_samples(runs: Sequence[Run], tasks: Sequence[str], metrics: MetricIndex) -> Iterator[dict[str, Any]]:
    """Every sample of every run packed for the page (:func:`pack_sample`), read from disk one at a time: runs in
    order, tasks in manifest order, doc_id order (records of a task run.json does not list are left out)."""
    task_pos = {name: i for i, name in enumerate(tasks)}
    for r, run in enumerate(runs):
        inputs = {info.name: input_field(info.config) for info in run.manifest.tasks}
        for name in run.task_names:
            for rec in run.task_records(name):
                yield pack_sample(rec, r, task_pos[name], metrics, inputs.get(name))


def sample_data(runs: Sequence[Run], labels: Sequence[str]) -> tuple[dict[str, Any], SamplePositions]:
    """The browser's data for all runs with every sample in memory (small runs and tests; pages are written
    streaming by :mod:`assay.report.html`), and the positions of the samples."""
    data, metrics = sample_meta(runs, labels)
    data["samples"] = list(iter_samples(runs, data["tasks"], metrics))
    return data, SamplePositions(runs)


# --- comparisons --------------------------------------------------------------------------------------------


_TEST_NAMES = {"mcnemar": "McNemar, exact", "sign_flip": "sign-flip permutation", "none": "—"}


def fmt_p(p: float | None) -> str:
    """A p-value: four decimals, or ``< 0.0001``."""
    if p is None or not math.isfinite(p):
        return "—"
    return "< 0.0001" if p < 1e-4 else f"{p:.4f}"


def fmt_delta(d: float | None) -> str:
    """A signed difference with four decimals."""
    if d is None or not math.isfinite(d):
        return "—"
    return f"{d:+.4f}"


def compare_view(comparison: Any, runs: Sequence[Run], a: int, b: int, labels: Sequence[str]) -> CompareView:
    """The comparison section for run ``b`` against baseline ``a`` from a :class:`assay.results.Comparison`."""
    rows: list[DeltaView] = []
    regressed: list[ChangeView] = []
    improved: list[ChangeView] = []
    totals = {"regressed": 0, "improved": 0}
    for m in comparison.metrics:
        test = _TEST_NAMES.get(m.test, m.test)
        if m.test == "sign_flip":
            test += ", exact" if m.exact else f", {comparison.iters:,} resamples"
        direction = "up" if m.better else "down" if m.worse else ""
        rows.append(
            DeltaView(
                task=m.task,
                metric=m.metric,
                filter=m.filter,
                a_s=fmt_value(m.mean_a),
                b_s=fmt_value(m.mean_b),
                delta_raw=raw(m.diff),
                delta_s=fmt_delta(m.diff),
                direction=direction,
                ci_s=fmt_interval(m.ci),
                test=test,
                p_s=fmt_p(m.p_value),
                significant=bool(m.significant),
                n_paired=fmt_int(m.n_shared),
                n_regressed=len(m.regressed),
                n_improved=len(m.improved),
            )
        )
        if not (m.regressed or m.improved):
            continue
        label = m.metric if m.filter == "none" else f"{m.metric} · {m.filter}"
        for kind, ids, pairs, out in (
            ("regressed", m.regressed_ids, m.regressed_values, regressed),
            ("improved", m.improved_ids, m.improved_values, improved),
        ):
            totals[kind] += len(ids)
            for sid, (va, vb) in zip(ids, pairs, strict=True):
                if len(out) >= MAX_CHANGES_LISTED:
                    break
                out.append(
                    ChangeView(
                        task=m.task,
                        sample_id=sid,
                        metric=label,
                        a_s=fmt_value(va),
                        b_s=fmt_value(vb),
                        href=sample_href(m.task, sid, b),
                    )
                )
    return CompareView(
        a_index=a,
        b_index=b,
        a_label=labels[a],
        b_label=labels[b],
        a_css=RUN_CSS[a % len(RUN_CSS)],
        b_css=RUN_CSS[b % len(RUN_CSS)],
        alpha=comparison.alpha,
        confidence_label=f"{100 * comparison.confidence:g}%",
        n_shared_label="the samples both runs scored, paired by sample id where the input is the same",
        rows=rows,
        regressed=regressed,
        improved=improved,
        regressed_total=totals["regressed"],
        improved_total=totals["improved"],
        notes=[str(w) for w in comparison.warnings],
    )


# --- the whole page -----------------------------------------------------------------------------------------


def _ci_label(methods: set[str], runs: Sequence[Run]) -> str:
    iters = {r.settings.get("bootstrap_iters") for r in runs if r.settings.get("bootstrap_iters")}
    boot = "percentile bootstrap" + (f", {next(iter(iters)):,} resamples" if len(iters) == 1 else "")
    if methods == {"bootstrap"}:
        return boot
    if methods == {"t"}:
        return "Student's t"
    if not methods:
        return "none computed"
    return f"{boot} where computed, else Student's t"


def build_page(
    runs: Sequence[Run],
    comparisons: Sequence[tuple[int, int, Any]] = (),
    themes: Sequence[Sequence[Any] | None] | None = None,
    *,
    title: str | None = None,
) -> PageView:
    """The page for ``runs``; ``comparisons`` are ``(a, b, Comparison)`` by run position; ``themes`` per run."""
    from assay import __version__
    from assay.models.base import display_name

    labels = run_labels(runs)
    data, metrics = sample_meta(runs, labels)
    where = SamplePositions(runs)
    views: list[RunView] = []
    methods: set[str] = set()
    confidences: set[float] = set()
    for i, run in enumerate(runs):
        css = RUN_CSS[i % len(RUN_CSS)]
        tasks, used = task_views(run, css)
        methods |= used
        if isinstance(run.settings.get("confidence"), int | float):
            confidences.add(float(run.settings["confidence"]))
        ops, totals = ops_views(run)
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
            )
        )
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
        ci_method_label=_ci_label(methods, runs),
        runs=views,
        comparisons=[compare_view(c, runs, a, b, labels) for a, b, c in comparisons],
        data=data,
        samples=lambda: iter_samples(runs, data["tasks"], metrics),
    )


# --- failure themes -----------------------------------------------------------------------------------------


def theme_section(
    themes: Sequence[Any] | None, run: Run, run_index: int, where: SamplePositions
) -> tuple[list[ThemeView], list[dict[str, Any]], str]:
    """The themes of one run (``assay.feedback.Theme`` objects) for the page, their sample positions for the
    browser, and a note for when there are none. Only the MAX_THEMES most frequent themes are listed."""
    if themes is None:
        return [], [], "Failure themes were not computed for this run."
    if not themes:
        return [], [], "No failing or errored verdict: nothing to group."
    views: list[ThemeView] = []
    data: list[dict[str, Any]] = []
    for n, theme in enumerate(themes[:MAX_THEMES]):
        found = (where.get((run_index, t, sid)) for t, sid in theme.samples)
        positions = [p for p in found if p is not None]
        example = next((e.reason or e.feedback for e in theme.examples if e.reason or e.feedback), None)
        common = theme.feedback[0] if theme.feedback else None
        views.append(
            ThemeView(
                index=n,
                kind=theme.kind,
                label=_short(theme.label, 300),
                count=theme.n_samples,
                verdicts=theme.count,
                href=f"#theme={run_index}.{n}",
                example=_short(example, 300) if example else None,
                feedback=f"{_short(common[0], 300)} (×{common[1]})" if common else None,
            )
        )
        data.append({"r": run_index, "n": n, "label": _short(theme.label, 120), "idx": positions})
    more = len(themes) - len(views)
    note = f"{more} less frequent theme(s) not listed; `assay feedback` prints them all." if more > 0 else ""
    return views, data, note


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
