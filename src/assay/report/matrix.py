"""The matrix view: a matrix folder's cells as columns, its metrics and samples as rows, each cell compared with
a chosen baseline cell (by default the first) by ``compare``'s paired test. The terminal table is built here; the
HTML page from the same view (:mod:`assay.report.matrixhtml`)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.errors import AssayError, ConfigError
from assay.store.matrixindex import MatrixCell, MatrixIndex, read_matrix

if TYPE_CHECKING:
    from rich.console import RenderableType

    from assay.results import Run
    from assay.results.aggregate import SampleValues
    from assay.results.compare import MetricComparison

MAX_TABLE_SAMPLES = 20  # samples in the terminal table: those where the cells disagree first
MAX_PROMPT_CHARS = 4000  # of one prompt message on the page: its start and its end (where the question is) kept


@dataclass
class Figure:
    """One cell's figure of one metric, and its paired comparison with the baseline cell (None for the baseline)."""

    mean: float | None
    ci: list[float] | None
    n_scored: int
    n_total: int
    n_errored: int
    diff: float | None = None
    diff_ci: list[float] | None = None
    p_value: float | None = None
    test: str | None = None
    verdict: str = ""  # "better" | "worse" | "" (not significant, or the baseline)
    tests: dict[str, Any] | None = None  # a `headline: tests` task's passed / failed / errored and pass rate

    def text(self) -> str:
        """``0.8000 [0.4902, 0.9433]``, with the errored samples when there are any; a `headline: tests` task's
        cell leads with its tests (``1 passed · 2 failed · 0 errored``, the pass rate and its interval)."""
        if self.tests is not None:
            from assay.report.table import tests_cell

            return tests_cell(self.tests)
        if self.mean is None:
            return "—" if not self.n_errored else f"— ({self.n_errored} errors)"
        out = f"{self.mean:.4f}" + (f" [{self.ci[0]:.4f}, {self.ci[1]:.4f}]" if self.ci else "")
        return out + (f" ({self.n_errored} errors)" if self.n_errored else "")

    def delta_text(self) -> str:
        """``Δ -0.2000 p=0.25 (mcnemar)``, or empty for the baseline."""
        if self.diff is None:
            return ""
        p = "" if self.p_value is None else f" p={self.p_value:.3g}"
        mark = {"better": " ▲", "worse": " ▼"}.get(self.verdict, "")
        return f"Δ {self.diff:+.4f}{p}{mark}"


@dataclass
class MetricLine:
    """A (task, filter, metric) row: one figure per cell (None where the cell has no such metric)."""

    task: str
    filter: str
    metric: str
    higher_is_better: bool | None
    figures: list[Figure | None]

    @property
    def label(self) -> str:
        """``task / metric`` (with the filter unless it is ``none``)."""
        return f"{self.task} / {self.metric}" + ("" if self.filter == "none" else f" · {self.filter}")


@dataclass
class PromptPart:
    """One message of what a cell sent (``role`` ``system``, ``user``, …), or its whole prompt text (role
    ``prompt``: a request without chat messages, e.g. a completion or log-likelihood context)."""

    role: str
    text: str


@dataclass
class SampleOutcome:
    """One cell's outcome on one sample: pass, fail, partial, error, n/a or — (not run), its score, its answer, and
    the prompt the cell sent (as its samples.jsonl records it; None when the cell has no record of the sample)."""

    outcome: str
    value: float | None = None
    answer: str | None = None
    error: str | None = None
    prompt: list[PromptPart] | None = None

    def text(self) -> str:
        """``pass``, ``fail 0.25``, ``error``, …"""
        if self.value is None or (self.outcome in ("pass", "fail") and self.value in (0.0, 1.0)):
            return self.outcome
        return f"{self.outcome} {self.value:.2f}"


@dataclass
class SampleLine:
    """One sample of one task across the cells, judged by the task's first metric."""

    task: str
    metric: str
    doc_id: int
    sample_id: str
    target: str
    outcomes: list[SampleOutcome]

    @property
    def disagree(self) -> bool:
        """Whether the cells' outcomes differ on this sample."""
        return len({o.outcome for o in self.outcomes}) > 1


@dataclass
class MatrixView:
    """Everything the matrix table and page show."""

    path: Path
    index: MatrixIndex
    runs: list[Run]
    metrics: list[MetricLine]
    samples: list[SampleLine]
    n_samples: dict[str, int]  # samples of each task in the baseline cell (the table may show fewer)
    alpha: float
    baseline: int = 0  # the cell the others are compared with
    warnings: list[str] = field(default_factory=list)
    max_samples: int | None = MAX_TABLE_SAMPLES  # samples of each task shown (None: all)

    @property
    def cells(self) -> list[MatrixCell]:
        """The cells, as the columns."""
        return self.index.cells


def load_matrix(
    matrix_dir: Path,
    *,
    alpha: float = 0.05,
    max_samples: int | None = MAX_TABLE_SAMPLES,
    baseline: str | None = None,
) -> MatrixView:
    """Read a matrix folder: each cell's run, the metric figures, each cell against the ``baseline`` cell (its
    name; default the first), and up to ``max_samples`` samples of each task (None: all), those the cells
    disagree on first. An unknown baseline is a ConfigError listing the cells."""
    from assay.results import load_run

    matrix_dir = Path(matrix_dir)
    index = read_matrix(matrix_dir)
    names = [cell.name for cell in index.cells]
    if baseline is not None and baseline not in names:
        raise ConfigError(f"--baseline {baseline!r}: no such cell in {matrix_dir}; its cells: {', '.join(names)}")
    base = names.index(baseline) if baseline is not None else 0
    runs = [load_run(index.cell_dir(matrix_dir, cell)) for cell in index.cells]
    warnings: list[str] = []
    comparisons = _comparisons(runs, base, alpha, warnings)
    metrics = _metric_lines(runs, comparisons)
    samples, n_samples = _sample_lines(runs, max_samples)
    return MatrixView(matrix_dir, index, runs, metrics, samples, n_samples, alpha, base, warnings, max_samples)


def _comparisons(
    runs: list[Run], base: int, alpha: float, warnings: list[str]
) -> list[dict[tuple[str, str, str], Any]]:
    """Each cell's paired comparison with the baseline, by (task, filter, metric); empty for the baseline."""
    from assay.results.compare import compare_runs

    out: list[dict[tuple[str, str, str], Any]] = []
    for i, run in enumerate(runs):
        if i == base:
            out.append({})
            continue
        try:
            comp = compare_runs(runs[base], run, alpha=alpha)
        except AssayError as err:
            warnings.append(f"{run.name} vs {runs[base].name}: {err}")
            out.append({})
            continue
        out.append({(m.task, m.filter, m.metric): m for m in comp.metrics})
    return out


def _metric_lines(runs: list[Run], comparisons: list[dict[tuple[str, str, str], Any]]) -> list[MetricLine]:
    keys: dict[tuple[str, str, str], bool | None] = {}
    per_run = []
    for run in runs:
        rows = {(r.task, r.filter, r.metric): r for r in run.metric_rows(groups=False)}
        per_run.append(rows)
        for key, row in rows.items():
            keys.setdefault(key, row.higher_is_better)
    lines = []
    for key, hib in keys.items():
        figures: list[Figure | None] = []
        for rows, comps in zip(per_run, comparisons, strict=True):
            found = rows.get(key)
            if found is None:
                figures.append(None)
                continue
            fig = Figure(
                found.mean, found.ci or found.ci_bootstrap or found.ci_t, found.n_scored, found.n_total, found.n_errored
            )
            if isinstance(found.entry.get("tests"), dict):
                fig.tests = found.entry["tests"]
            comp: MetricComparison | None = comps.get(key)
            if comp is not None:
                fig.diff, fig.diff_ci, fig.p_value, fig.test = comp.diff, comp.ci, comp.p_value, comp.test
                fig.verdict = "better" if comp.better else "worse" if comp.worse else ""
            figures.append(fig)
        lines.append(MetricLine(key[0], key[1], key[2], hib, figures))
    return lines


def _outcome(values: SampleValues, at: dict[int, int], errors: dict[int, str], doc_id: int) -> SampleOutcome:
    i = at.get(doc_id)
    if i is None:
        return SampleOutcome("—")
    value = float(values.values[i])
    if math.isnan(value):
        return SampleOutcome("error", error=errors[doc_id]) if doc_id in errors else SampleOutcome("n/a")
    passed = float(values.passed_frac[i])
    kind = "pass" if passed >= 1.0 else "fail" if passed <= 0.0 or math.isnan(passed) else "partial"
    return SampleOutcome(kind, value)


def _sample_lines(runs: list[Run], max_samples: int | None) -> tuple[list[SampleLine], dict[str, int]]:
    lines: list[SampleLine] = []
    counts: dict[str, int] = {}
    base = runs[0]
    for task in base.task_names:
        info = next(t for t in base.manifest.tasks if t.name == task)
        if not info.metrics or not info.filters:
            continue
        metric, filter_name = info.metrics[0].name, info.filters[0]
        columns: list[tuple[SampleValues, dict[int, int], dict[int, str]] | None] = []
        for run in runs:
            if task not in run.task_names:
                columns.append(None)
                continue
            sv = run.sample_values(task, filter_name, metric)
            at = {int(d): i for i, d in enumerate(sv.doc_ids)}
            columns.append((sv, at, dict(sv.errors)))
        doc_ids = [int(d) for d in columns[0][0].doc_ids] if columns[0] is not None else []
        counts[task] = len(doc_ids)
        rows = []
        for doc_id in doc_ids:
            outcomes = [SampleOutcome("—") if c is None else _outcome(c[0], c[1], c[2], doc_id) for c in columns]
            rows.append((doc_id, outcomes))
        if max_samples is not None and len(rows) > max_samples:  # where the cells disagree first, then in order
            rows = sorted(rows, key=lambda r: len({o.outcome for o in r[1]}) == 1)[:max_samples]
            rows.sort(key=lambda r: r[0])
        picked = {doc_id for doc_id, _ in rows}
        ids, answers, prompts = _records(runs, task, picked)
        for doc_id, outcomes in rows:
            for j, outcome in enumerate(outcomes):
                outcome.answer = answers[j].get(doc_id)
                outcome.prompt = prompts[j].get(doc_id)
            sample_id, target = ids.get(doc_id, (str(doc_id), ""))
            lines.append(SampleLine(task, metric, doc_id, sample_id, target, outcomes))
    return lines, counts


def clip(text: str, limit: int = MAX_PROMPT_CHARS) -> str:
    """``text`` up to ``limit`` characters: its first quarter and its end, saying how much is left out between."""
    if len(text) <= limit:
        return text
    head = limit // 4
    tail = limit - head
    return f"{text[:head]}\n… [{len(text) - limit:,} characters left out] …\n{text[-tail:]}"


def _content_text(content: Any) -> str:
    """A chat message's content as text: a string as it is, the text parts of a list (other parts by their type)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, dict):
                parts.append(f"[{part.get('type', 'part')}]")
            else:
                parts.append(str(part))
        return "\n".join(parts)
    return "" if content is None else json.dumps(content, ensure_ascii=False, default=str)


def prompt_parts(record: dict[str, Any]) -> list[PromptPart]:
    """What a sample record says its cell sent: its chat messages (role and text; tool calls as JSON), else its
    prompt text. Each part is clipped (:func:`clip`)."""
    parts: list[PromptPart] = []
    for message in record.get("messages") or []:
        if not isinstance(message, dict):
            continue
        text = _content_text(message.get("content"))
        if message.get("tool_calls"):
            calls = json.dumps(message["tool_calls"], ensure_ascii=False, default=str)
            text = f"{text}\n{calls}" if text else calls
        parts.append(PromptPart(str(message.get("role") or "?"), clip(text)))
    if not parts:
        prompt = record.get("prompt")
        parts.append(PromptPart("prompt", clip(prompt if isinstance(prompt, str) else _content_text(prompt))))
    return parts


def _records(
    runs: list[Run], task: str, picked: set[int]
) -> tuple[dict[int, tuple[str, str]], list[dict[int, str | None]], list[dict[int, list[PromptPart]]]]:
    """The picked samples' ids and targets (from the baseline), and each cell's first answer and the prompt it
    sent, read in one pass per cell keeping only the picked ones."""
    ids: dict[int, tuple[str, str]] = {}
    answers: list[dict[int, str | None]] = []
    prompts: list[dict[int, list[PromptPart]]] = []
    for j, run in enumerate(runs):
        mine: dict[int, str | None] = {}
        sent: dict[int, list[PromptPart]] = {}
        if task in run.task_names:
            for record in run.task_record_dicts(task):
                doc_id = int(record.get("doc_id", -1))
                if doc_id not in picked:
                    continue
                if j == 0:
                    target = record.get("target")
                    ids[doc_id] = (
                        str(record.get("sample_id")),
                        target if isinstance(target, str) else json.dumps(target),
                    )
                responses = record.get("responses") or []
                first = responses[0] if responses else None
                mine[doc_id] = first.get("text") if isinstance(first, dict) else None
                sent[doc_id] = prompt_parts(record)
        answers.append(mine)
        prompts.append(sent)
    return ids, answers, prompts


# ---- the terminal table ------------------------------------------------------------------------------------------


def _metric_cells(view: MatrixView) -> list[list[str]]:
    rows = []
    for line in view.metrics:
        cells = [line.label]
        for fig in line.figures:
            cells.append("" if fig is None else (fig.text() + (f"\n{fig.delta_text()}" if fig.delta_text() else "")))
        rows.append(cells)
    return rows


def _sample_cells(view: MatrixView) -> list[list[str]]:
    return [[f"{s.task} / {s.sample_id}", *(o.text() for o in s.outcomes)] for s in view.samples]


def notes(view: MatrixView) -> list[str]:
    base = view.cells[view.baseline].name
    out = [f"Δ: each cell against the baseline {base} on paired samples (compare's paired test, α={view.alpha:g})"]
    for task, n in view.n_samples.items():
        shown = sum(1 for s in view.samples if s.task == task)
        if shown < n:
            out.append(f"{task}: {shown} of {n} samples shown (those the cells disagree on first)")
    return out + view.warnings


def matrix_renderables(view: MatrixView) -> list[RenderableType]:
    """The rich tables: metrics x cells, then samples x cells, then the notes."""
    from rich.table import Table
    from rich.text import Text

    title = view.index.name or view.path.name
    header = [cell.name for cell in view.cells]
    metrics = Table(title=f"matrix {title}", show_lines=True)
    metrics.add_column("Metric", overflow="fold")
    for name in header:
        metrics.add_column(name, justify="right", overflow="fold")
    for row in _metric_cells(view):
        metrics.add_row(*(Text(c) for c in row))
    samples = Table(title="samples (first metric of each task)")
    samples.add_column("Sample", overflow="fold")
    for name in header:
        samples.add_column(name, justify="center", overflow="fold")
    for row in _sample_cells(view):
        samples.add_row(*(Text(c) for c in row))
    return [metrics, samples, *(Text("• " + n, style="yellow") for n in notes(view))]


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    def esc(text: str) -> str:
        return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")

    lines = ["|" + "|".join(esc(h) for h in header) + "|", "|" + "|".join("---" for _ in header) + "|"]
    lines.extend("|" + "|".join(esc(c) for c in r) + "|" for r in rows)
    return "\n".join(lines)


def matrix_json(view: MatrixView) -> dict[str, Any]:
    """The view as JSON: cells, metric figures (with Δ against the baseline), sample outcomes, notes."""
    return {
        "matrix": str(view.path),
        "baseline": view.cells[view.baseline].name,
        "cells": [{**c.model_dump(), "run": str(r.path)} for c, r in zip(view.cells, view.runs, strict=True)],
        "metrics": [
            {
                "task": m.task,
                "filter": m.filter,
                "metric": m.metric,
                "cells": {c.name: (None if f is None else vars(f)) for c, f in zip(view.cells, m.figures, strict=True)},
            }
            for m in view.metrics
        ],
        "samples": [
            {
                "task": s.task,
                "sample_id": s.sample_id,
                "cells": {c.name: o.outcome for c, o in zip(view.cells, s.outcomes, strict=True)},
            }
            for s in view.samples
        ],
        "notes": notes(view),
    }


def render_matrix(view: MatrixView, fmt: str = "rich") -> str | list[RenderableType]:
    """``rich``: renderables to print; ``markdown`` and ``json``: text."""
    if fmt == "rich":
        return matrix_renderables(view)
    if fmt == "json":
        return json.dumps(matrix_json(view), indent=2, ensure_ascii=False, default=str)
    header = [c.name for c in view.cells]
    parts = [
        _markdown(["Metric", *header], _metric_cells(view)),
        _markdown(["Sample", *header], _sample_cells(view)),
        "\n".join(f"- {n}" for n in notes(view)),
    ]
    return "\n\n".join(parts)
