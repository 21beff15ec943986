"""Results as a table, like lm-eval's (Task | Version | Filter | n-shot | Metric | ↑↓ | Value | ± | Stderr),
with the confidence interval and the error count; in the terminal (rich), as markdown or as JSON."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from assay.report.corrected import CORRECTED_HEADERS, corrected_cells, corrected_table

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table

    from assay.results.compare import Comparison
    from assay.results.loader import MetricRow, Run

FORMATS = ("rich", "markdown", "json")
ARROWS = {True: "↑", False: "↓"}
HEADERS = ["Version", "Filter", "n-shot", "Metric", "↑↓", "Value", "±", "Stderr", "CI", "Scored", "Errors"]


def _fmt(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _ci(row: MetricRow) -> list[float] | None:
    return row.ci or row.ci_bootstrap or row.ci_t


def _ci_text(ci: Sequence[float] | None) -> str:
    return "—" if not ci else f"[{ci[0]:.4f}, {ci[1]:.4f}]"


def _errors_text(row: MetricRow) -> str:
    """Errored samples and how they were counted, with the errored verdicts by cause: the model request failed
    (``model``) or the evaluator could not judge (``evaluator``), e.g. ``12 (2 model, 10 evaluator; excluded)``.
    Verdicts are counted even when every sample kept a value (an errored repeat is left out of its sample's
    value under ``exclude``)."""
    verdicts = int(row.entry.get("n_errored_verdicts") or 0)
    if not row.n_errored and not verdicts:
        return "0"
    how = {"exclude": "excluded", "as_zero": "scored 0"}.get(row.error_policy or "", row.error_policy or "")
    causes: list[str] = []
    if "n_model_errors" in row.entry:
        model, evaluator = int(row.entry.get("n_model_errors") or 0), int(row.entry.get("n_eval_errors") or 0)
        causes = [f"{n} {what}" for n, what in ((model, "model"), (evaluator, "evaluator")) if n]
        if causes and verdicts > row.n_errored:
            causes[-1] += f" verdict{'s' if verdicts != 1 else ''}"
    elif verdicts > row.n_errored:
        causes = [f"{verdicts} verdict{'s' if verdicts != 1 else ''}"]
    notes = ", ".join(causes) + ("; " if causes and how else "") + how
    return f"{row.n_errored} ({notes})" if notes else str(row.n_errored)


def _not_applicable(row: MetricRow) -> int:
    """Samples the metric had nothing to check (their row gave it no expected value or check)."""
    return int(row.entry.get("n_not_applicable") or 0)


def _scored_text(row: MetricRow) -> str:
    """Scored of applicable samples, and how many the metric was not applicable to, e.g. ``10/10 (10 n/a)``."""
    na = _not_applicable(row)
    return f"{row.n_scored}/{row.n_total - na} ({na} n/a)" if na else f"{row.n_scored}/{row.n_total}"


# --- tests (headline: tests, promptfoo's view) -------------------------------------------------------------------

TESTS_HEADERS = ["Task", "Model", "Tests", "Pass rate", "CI", "Mean score", "Named metrics"]


def pct(value: float | None) -> str:
    """A share as a percentage with two decimals (promptfoo's), an em dash when undefined."""
    return "—" if value is None else f"{100 * value:.2f}%"


def pct_interval(ci: Sequence[float] | None) -> str:
    """``[6.15%, 79.23%]``, an em dash when undefined."""
    return "—" if not ci else f"[{pct(ci[0])}, {pct(ci[1])}]"


def tests_counts(tests: dict[str, Any]) -> str:
    """``1 passed · 2 failed · 0 errored`` (with the tests the metric had nothing to check, when there are any)."""
    text = f"{tests.get('passed', 0)} passed · {tests.get('failed', 0)} failed · {tests.get('errored', 0)} errored"
    na = int(tests.get("n_not_applicable") or 0)
    return text + (f" · {na} n/a" if na else "")


def named_metrics(tests: dict[str, Any], sep: str = ", ") -> str:
    """``accuracy 0.7500 (4 tests), tone 0.5000 (2 tests)``: each named metric's mean over the tests that have it."""
    named = tests.get("named_scores") or {}
    return sep.join(
        f"{name} {_fmt(f.get('mean'))} ({f.get('n', 0)} test{'s' if f.get('n') != 1 else ''})"
        for name, f in named.items()
    )


def tests_cell(tests: dict[str, Any]) -> str:
    """One cell's tests headline in two lines, for a matrix of runs (prompt × provider):
    ``1 passed · 2 failed · 0 errored`` then ``33.33% [6.15%, 79.23%] · mean 0.6667``."""
    second = f"{pct(tests.get('pass_rate'))} {pct_interval(tests.get('ci'))} · mean {_fmt(tests.get('mean_score'))}"
    named = named_metrics(tests)
    return f"{tests_counts(tests)}\n{second}" + (f"\n{named}" if named else "")


def _tests_rows(rows: list[MetricRow]) -> list[MetricRow]:
    return [r for r in rows if isinstance(r.entry.get("tests"), dict)]


def _tests_cells(rows: list[MetricRow], model: str, sep: str = ", ") -> list[list[str]]:
    out = []
    for r in rows:
        t = r.entry["tests"]
        label = (r.alias or r.task) + ("" if r.filter == "none" else f" · {r.filter}")
        cells = [label, model, tests_counts(t), pct(t.get("pass_rate")), pct_interval(t.get("ci"))]
        out.append([*cells, _fmt(t.get("mean_score")), named_metrics(t, sep) or "—"])
    return out


def _model_name(results: dict[str, Any]) -> str:
    return str(results.get("model_name") or "—")


def _tests_note(rows: list[MetricRow], conf: float) -> str | None:
    if not rows:
        return None
    metrics = sorted({r.metric for r in rows})
    return (
        f"Tests: a sample is a test, passed when every judged repeat of {' / '.join(metrics)} passed; pass rate = "
        f"passed / (passed + failed), errored tests apart; its {conf * 100:g}% CI: Wilson score interval"
    )


def _tests_table(rows: list[MetricRow], results: dict[str, Any]) -> Table | None:
    from rich.table import Table
    from rich.text import Text

    if not rows:
        return None
    table = Table(title="Tests", header_style="bold")
    conf = _confidence(results)
    for i, h in enumerate(TESTS_HEADERS):
        label = f"{conf * 100:g}% CI" if h == "CI" else h
        wraps = h in ("Task", "Model", "Tests", "Named metrics")
        table.add_column(label, justify="right" if 3 <= i <= 5 else "left", no_wrap=not wraps, overflow="fold")
    for cells, row in zip(_tests_cells(rows, _model_name(results)), rows, strict=True):
        styled = [Text(c) for c in cells]
        t = row.entry["tests"]
        styled[2].stylize("red" if t.get("failed") else "green")
        if t.get("errored"):
            styled[2].stylize("yellow")
        table.add_row(*styled)
    return table


def _as_results(obj: Run | dict[str, Any]) -> dict[str, Any]:
    return obj if isinstance(obj, dict) else obj.results


def _confidence(results: dict[str, Any]) -> float:
    settings = results.get("assay") or {}
    return float(settings.get("confidence", 0.95))


def _cells(rows: list[MetricRow]) -> list[list[str]]:
    """Table cells; the name and version are shown once per task, as lm-eval does."""
    from assay.evaluators.judge.calibration.gate import uncalibrated_note

    out: list[list[str]] = []
    previous = None
    for r in rows:
        first = r.task != previous
        previous = r.task
        out.append(
            [
                (r.alias or r.task) if first else "",
                ("" if r.version is None else str(r.version)) if first else "",
                r.filter,
                "" if r.n_shot is None else str(r.n_shot),
                r.metric + (" (uncalibrated)" if uncalibrated_note(r.entry) else ""),
                ARROWS.get(r.higher_is_better, "") if r.higher_is_better is not None else "",
                "n/a" if r.mean is None and _not_applicable(r) == r.n_total > 0 else _fmt(r.mean),
                "±" if r.stderr is not None else "",
                _fmt(r.stderr) if r.stderr is not None else "",
                _ci_text(_ci(r)),
                _scored_text(r),
                _errors_text(r),
            ]
        )
    return out


def _split(results: dict[str, Any]) -> tuple[list[MetricRow], list[MetricRow]]:
    from assay.results.loader import metric_rows

    rows = metric_rows(results)
    return [r for r in rows if not r.is_group], [r for r in rows if r.is_group]


def _notes(results: dict[str, Any]) -> list[str]:
    from assay.evaluators.judge.calibration.gate import uncalibrated_note
    from assay.results.judgecorrected import correction_note

    settings = results.get("assay") or {}
    notes: list[str] = []
    status = settings.get("status")
    if status and status != "finished":
        notes.append(f"run status: {status}")
    for task, info in (settings.get("tasks") or {}).items():
        if info.get("n_missing"):
            notes.append(f"{task}: {info['n_missing']} of {info['n_selected']} selected samples have no record")
        if info.get("n_model_errors"):
            example = info.get("model_error_example")
            notes.append(
                f"{task}: {info['n_model_errors']} sample(s) with model errors"
                + (f" (first: {example})" if example else "")
            )
    if settings.get("torn_lines"):
        notes.append(f"{settings['torn_lines']} torn line(s) at the end of samples.jsonl were skipped")
    notes.extend(settings.get("warnings") or [])
    for task, info in (settings.get("tasks") or {}).items():
        for by_metric in (info.get("filters") or {}).values():
            for metric, entry in by_metric.items():
                why = uncalibrated_note(entry)
                if why:
                    notes.append(f"{task}/{metric}: uncalibrated judge ({why}); see assay judge calibrate")
                fig = entry.get("judge_corrected")
                if isinstance(fig, dict) and "refused" in fig:  # a corrected figure is a table of its own
                    notes.append(str(correction_note(task, metric, entry)))
    tests_note = _tests_note(_tests_rows(_split(results)[0]), _confidence(results))
    if tests_note:
        notes.append(tests_note)
    if settings.get("cluster_key"):
        notes.append(f"stderr and CI are clustered by {settings['cluster_key']!r}")
    methods = _ci_methods(results)
    if methods:
        notes.append(f"{_confidence(results) * 100:g}% CI: {methods}")
    return notes


def _ci_methods(results: dict[str, Any]) -> str | None:
    """How the table's intervals were computed, from the methods the figures recorded (None without intervals)."""
    from assay.report.methods import MethodUses

    uses = MethodUses()
    settings = results.get("assay") or {}
    uses.add_settings(settings.get("bootstrap_iters"), settings.get("seed"))
    tasks, groups = _split(results)
    for row in tasks + groups:
        if _ci(row):
            method = row.ci_method or ("bootstrap" if row.ci_bootstrap else "t")
            uses.add(method, row.metric, binned=row.entry.get("bootstrap_method") == "binned")
    return uses.label() if uses.methods else None


COMPACT_DROP = ("Version", "n-shot", "±", "Scored")  # columns left out when the terminal is too narrow


def build_tables(obj: Run | dict[str, Any], width: int | None = None) -> list[Table]:
    """Rich tables: the tests of ``headline: tests`` tasks first when there are any, then tasks, then groups when
    there are any. Given a console ``width`` too narrow for every
    column, the version, n-shot, ± and scored columns are left out rather than squeezing names to nothing."""
    results = _as_results(obj)
    tasks, groups = _split(results)
    tables = [_rich_table("Tasks", tasks, results, ())]
    if groups:
        tables.append(_rich_table("Groups", groups, results, ()))
    if width is not None and any(_natural_width(t) > width for t in tables):
        drop = COMPACT_DROP + (("Filter",) if all(r.filter == "none" for r in tasks + groups) else ())
        tables = [_rich_table("Tasks", tasks, results, drop)]
        if groups:
            tables.append(_rich_table("Groups", groups, results, drop))
    pass_k = _pass_k_table(tasks)
    if pass_k is not None:
        tables.append(pass_k)
    corrected = corrected_table(tasks, _confidence(results))
    if corrected is not None:
        tables.append(corrected)
    headline = _tests_table(_tests_rows(tasks), results)  # headline: tests tasks lead with their tests
    return tables if headline is None else [headline, *tables]


def _natural_width(table: Table) -> int:
    from rich.console import Console
    from rich.measure import Measurement

    console = Console(width=10_000)
    return Measurement.get(console, console.options, table).maximum


def _rich_table(title: str, rows: list[MetricRow], results: dict[str, Any], drop: Sequence[str]) -> Table:
    from rich.table import Table
    from rich.text import Text

    conf = _confidence(results)
    table = Table(header_style="bold")
    headers = [title, *HEADERS]
    keep = [i for i, h in enumerate(headers) if h not in drop]
    for i in keep:
        header = headers[i]
        label = f"{conf * 100:g}% CI" if header == "CI" else header
        # numbers are never cut; names, the interval and the error note wrap when space is short
        wraps = header in (title, "Filter", "Metric", "CI", "Errors")
        table.add_column(label, justify="right" if i >= 6 else "left", no_wrap=not wraps, overflow="fold")
    for cells, row in zip(_cells(rows), rows, strict=True):
        styled = [Text(c) for c in cells]
        if cells[-1] != "0":
            styled[-1].stylize("yellow")
        if row.mean is None:
            styled[6].stylize("red")
        if "±" in drop and row.stderr is not None:
            styled[8] = Text("± " + cells[8])
        table.add_row(*(styled[i] for i in keep))
    return table


PASS_K_HEADERS = ["Task", "Filter", "Metric", "k", "pass@k", "± pass@k", "pass^k", "± pass^k", "Samples"]


def _pass_k_cells(rows: list[MetricRow]) -> list[list[str]]:
    """pass@k (at least one of k repeats passes) and pass^k (all k pass) per task metric with repeats > 1."""
    out: list[list[str]] = []
    for r in rows:
        at, hat = r.entry.get("pass_at_k") or {}, r.entry.get("pass_hat_k") or {}
        for k, fig in at.items():
            other = hat.get(k) or {}
            out.append(
                [
                    r.alias or r.task,
                    r.filter,
                    r.metric,
                    str(k),
                    _fmt(fig.get("value")),
                    _fmt(fig.get("stderr")),
                    _fmt(other.get("value")),
                    _fmt(other.get("stderr")),
                    str(fig.get("n", "")) + (f" ({fig['n_excluded']} excluded)" if fig.get("n_excluded") else ""),
                ]
            )
    return out


def _pass_k_table(rows: list[MetricRow]) -> Table | None:
    from rich.table import Table

    cells = _pass_k_cells(rows)
    if not cells:
        return None
    table = Table(title="pass@k / pass^k over repeats", header_style="bold")
    for i, h in enumerate(PASS_K_HEADERS):
        table.add_column(h, justify="right" if i >= 3 else "left")
    for c in cells:
        table.add_row(*c)
    return table


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    def esc(text: str) -> str:
        return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")

    lines = ["|" + "|".join(esc(h) for h in header) + "|", "|" + "|".join("---" for _ in header) + "|"]
    lines.extend("|" + "|".join(esc(c) for c in r) + "|" for r in rows)
    return "\n".join(lines)


def _row_json(r: MetricRow) -> dict[str, Any]:
    return {
        "task": r.task,
        "group": r.is_group,
        "alias": r.alias,
        "version": r.version,
        "filter": r.filter,
        "n_shot": r.n_shot,
        "metric": r.metric,
        "higher_is_better": r.higher_is_better,
        "value": r.mean,
        "stderr": r.stderr,
        "ci": r.ci,
        "ci_method": r.ci_method,
        "ci_t": r.ci_t,
        "ci_bootstrap": r.ci_bootstrap,
        "n_total": r.n_total,
        "n_scored": r.n_scored,
        "n_errored": r.n_errored,
        "n_errored_verdicts": r.entry.get("n_errored_verdicts"),
        "n_model_errors": r.entry.get("n_model_errors"),
        "n_eval_errors": r.entry.get("n_eval_errors"),
        "unscorable": r.entry.get("unscorable"),
        "error_policy": r.error_policy,
        "pass_rate": r.pass_rate,
        "n_passed": r.entry.get("n_passed"),
        **({"pass_at_k": r.entry["pass_at_k"]} if r.entry.get("pass_at_k") else {}),
        **({"pass_hat_k": r.entry["pass_hat_k"]} if r.entry.get("pass_hat_k") else {}),
        **({"tests": r.entry["tests"]} if isinstance(r.entry.get("tests"), dict) else {}),
        **({"judge_corrected": r.entry["judge_corrected"]} if isinstance(r.entry.get("judge_corrected"), dict) else {}),
    }


def render_rich(renderables: Sequence[RenderableType], width: int = 160) -> str:
    """Render rich objects to plain text (no colour codes)."""
    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=False, legacy_windows=False)
    for r in renderables:
        console.print(r)
    return buf.getvalue()


def render_table(run_or_results: Run | dict[str, Any], fmt: str = "rich") -> str:
    """The results table as text: ``rich`` (plain text of the terminal table), ``markdown`` or ``json``."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    results = _as_results(run_or_results)
    tasks, groups = _split(results)
    notes = _notes(results)
    if fmt == "json":
        return json.dumps(
            {"rows": [_row_json(r) for r in tasks + groups], "notes": notes}, indent=2, ensure_ascii=False
        )
    if fmt == "markdown":
        conf = f"{_confidence(results) * 100:g}% CI"
        header = [h if h != "CI" else conf for h in HEADERS]
        parts = [_markdown(["Tasks", *header], _cells(tasks))]
        tested = _tests_rows(tasks)
        if tested:  # headline: tests tasks lead with their tests
            tests_header = [h if h != "CI" else conf for h in TESTS_HEADERS]
            cells = _tests_cells(tested, _model_name(results), "; ")
            parts.insert(0, "Tests:\n\n" + _markdown(tests_header, cells))
        if groups:
            parts.append(_markdown(["Groups", *header], _cells(groups)))
        pass_k = _pass_k_cells(tasks)
        if pass_k:
            parts.append("pass@k / pass^k over repeats:\n\n" + _markdown(PASS_K_HEADERS, pass_k))
        corrected = corrected_cells(tasks)
        if corrected:
            header = [h if h != "CI" else conf for h in CORRECTED_HEADERS]
            parts.append("Judge figures corrected by people's labels:\n\n" + _markdown(header, corrected))
        if notes:
            parts.append("\n".join(f"- {n}" for n in notes))
        return "\n\n".join(parts)
    return render_rich([*build_tables(results), *notes])


# --- operational figures ---------------------------------------------------------------------------------------

OPERATIONAL_HEADERS = ["Role", "Model", "Requests", "Errors", "Cache hits", "Tokens in", "Tokens out"]
OPERATIONAL_HEADERS += ["p50 s", "p95 s", "p99 s", "Cost $"]


def _operational_cells(figures: dict[str, Any]) -> list[list[str]]:
    rows = []
    for role, models in (figures.get("roles") or {}).items():
        for name, f in models.items():
            lat = f.get("latency_s") or {}
            cost = f.get("cost_usd")
            rows.append(
                [
                    role,
                    name,
                    str(f.get("requests", 0)),
                    str(f.get("errors", 0)),
                    str(f.get("cache_hits", 0)),
                    str(f.get("input_tokens", 0)),
                    str(f.get("output_tokens", 0)),
                    _fmt(lat.get("p50"), 3),
                    _fmt(lat.get("p95"), 3),
                    _fmt(lat.get("p99"), 3),
                    "—" if cost is None else f"{cost:.4f}",
                ]
            )
    return rows


def _operational_figures(run_or_results: Run | dict[str, Any]) -> dict[str, Any]:
    if isinstance(run_or_results, dict):
        return (run_or_results.get("assay") or {}).get("operational") or {}
    return run_or_results.operational


def environment_notes(run_or_results: Run | dict[str, Any]) -> list[str]:
    """One line per task that ran agent environments: how many, how long making and removing one took, and the
    most alive at once (``results.json``'s ``assay.tasks.<task>.agent.environments``)."""
    doc = run_or_results if isinstance(run_or_results, dict) else run_or_results.results
    notes = []
    for name, task in ((doc.get("assay") or {}).get("tasks") or {}).items():
        env = ((task or {}).get("agent") or {}).get("environments")
        if env:
            notes.append(
                f"{name}: {env['count']} environments, made in {env['mean_create_s'] * 1000:.0f} ms on average "
                f"(p95 {env['p95_create_s'] * 1000:.0f} ms), removed in {env['mean_remove_s'] * 1000:.0f} ms, "
                f"at most {env['peak_alive']} alive at once"
            )
    return notes


def _operational_footer(figures: dict[str, Any]) -> list[str]:
    footer = []
    if figures.get("cost_usd") is not None:
        footer.append(f"estimated cost: ${figures['cost_usd']:.4f}")
    if figures.get("unpriced_models"):
        footer.append("no price configured for: " + ", ".join(figures["unpriced_models"]))
    return footer


def operational_renderables(run_or_results: Run | dict[str, Any]) -> list[RenderableType]:
    """The operational table and its notes as rich renderables (empty when there is nothing to show)."""
    from rich.table import Table
    from rich.text import Text

    figures = _operational_figures(run_or_results)
    cells = _operational_cells(figures)
    if not cells:
        return []
    table = Table(header_style="bold")
    for i, h in enumerate(OPERATIONAL_HEADERS):
        table.add_column(h, justify="right" if i >= 2 else "left")
    for c in cells:
        table.add_row(*(Text(x) for x in c))
    notes = [*_operational_footer(figures), *environment_notes(run_or_results)]
    return [table, *(Text(f) for f in notes)]


def render_operational(run_or_results: Run | dict[str, Any], fmt: str = "rich") -> str:
    """Requests, errors, cache hits, tokens, latency percentiles and cost per role and model."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    figures = _operational_figures(run_or_results)
    if fmt == "json":
        return json.dumps(figures, indent=2, ensure_ascii=False)
    if fmt == "markdown":
        cells = _operational_cells(figures)
        if not cells:
            return ""
        notes = [*_operational_footer(figures), *environment_notes(run_or_results)]
        return _markdown(OPERATIONAL_HEADERS, cells) + "".join(f"\n\n- {f}" for f in notes)
    parts = operational_renderables(run_or_results)
    return render_rich(parts) if parts else ""


# --- comparison ------------------------------------------------------------------------------------------------

COMPARE_HEADERS = ["Task", "Filter", "Metric", "A", "B", "Δ (B−A)", "CI", "Test", "p", "Shared", "Worse", "Better"]
MAX_LISTED = 20


def _verdict(m: Any) -> str:
    if m.worse:
        return "significantly worse"
    if m.better:
        return "significantly better"
    return "no significant difference" if m.p_value is not None else "no shared samples"


def _compare_cells(comp: Comparison) -> list[list[str]]:
    rows = []
    for m in comp.metrics:
        diff = "—" if m.diff is None else f"{m.diff:+.4f}"
        p = "—" if m.p_value is None else f"{m.p_value:.4g}"
        rows.append(
            [
                m.task,
                m.filter,
                m.metric + (f" {ARROWS[m.higher_is_better]}"),
                _fmt(m.mean_a),
                _fmt(m.mean_b),
                diff,
                _ci_text(m.ci),
                m.test + (" (exact)" if m.exact and m.test == "sign_flip" else ""),
                p,
                str(m.n_shared),
                str(len(m.regressed)),
                str(len(m.improved)),
                _verdict(m),
            ]
        )
    return rows


def _listing(comp: Comparison) -> list[str]:
    lines = []
    for m in comp.metrics:
        for label, ids in (("regressed", m.regressed_ids), ("improved", m.improved_ids)):
            if ids:
                shown = ", ".join(ids[:MAX_LISTED])
                more = f" … and {len(ids) - MAX_LISTED} more" if len(ids) > MAX_LISTED else ""
                lines.append(f"{m.key} {label}: {shown}{more}")
    return lines


def comparison_renderables(comp: Comparison) -> list[RenderableType]:
    """The comparison table and its notes (runs, warnings, regressed/improved samples) as rich renderables."""
    from rich.table import Table
    from rich.text import Text

    table = Table(header_style="bold")
    for i, h in enumerate(_compare_headers(comp)):
        table.add_column(h, justify="right" if 3 <= i <= 11 else "left")
    for c, m in zip(_compare_cells(comp), comp.metrics, strict=True):
        row = [Text(x) for x in c]
        if m.worse:
            row[-1].stylize("bold red")
        elif m.better:
            row[-1].stylize("green")
        table.add_row(*row)
    return [table, *(Text(n) for n in _compare_notes(comp))]


def _compare_headers(comp: Comparison) -> list[str]:
    conf = f"{comp.confidence * 100:g}% CI"
    return [conf if h == "CI" else h for h in COMPARE_HEADERS] + ["Result"]


def _pairing_notes(comp: Comparison) -> list[str]:
    out = []
    for p in comp.pairing.values():
        out.append(
            f"{p.task}: {p.paired} sample(s) paired by sample id with the same input; {p.only_in_a} only in A, "
            f"{p.only_in_b} only in B, {p.changed_input} with a changed input"
        )
    return out


def _outcome_notes(comp: Comparison) -> list[str]:
    """Which outcomes each metric's A, B, Δ and test are of, and how Δ's interval was computed."""
    from assay.report.methods import MethodUses

    uses = MethodUses()
    uses.add_settings(comp.iters, comp.seed)
    for m in comp.metrics:
        if m.ci is not None:
            uses.add(m.ci_method, m.metric)
    notes = [f"{m.key}: {m.outcomes}" for m in comp.metrics if m.outcomes]
    return notes + ([f"{comp.confidence * 100:g}% CI of Δ: {uses.label()}"] if uses.methods else [])


def _compare_notes(comp: Comparison) -> list[str]:
    from assay.results.judgecorrected import difference_note

    head = f"A = {comp.run_a}, B = {comp.run_b}; alpha = {comp.alpha:g}"
    corrected = [n for m in comp.metrics if (n := difference_note(m.key, m.judge_corrected))]
    return [head, *_outcome_notes(comp), *corrected, *_pairing_notes(comp), *comp.warnings, *_listing(comp)]


def render_comparison(comp: Comparison, fmt: str = "rich") -> str:
    """The comparison as text: per metric the difference, its interval, the test, p and sample counts."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    if fmt == "json":
        return json.dumps(comp.to_dict(), indent=2, ensure_ascii=False)
    if fmt == "markdown":
        body = _markdown(_compare_headers(comp), _compare_cells(comp))
        return body + "".join(f"\n\n- {n}" for n in _compare_notes(comp))
    return render_rich(comparison_renderables(comp))
