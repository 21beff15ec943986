"""``assay report`` (tables, JUnit, HTML, ``--fail-under`` gates) and ``assay compare`` (paired tests).

Exit codes: 0 fine; 1 a ``--fail-under`` threshold was missed (report) or a metric is significantly
worse (compare); 2 a usage error (bad option, not a run folder, unknown metric, or two runs whose samples
do not pair up by sample id and input), or ``--junit`` / ``--html`` of a run whose samples.jsonl is corrupt.
A torn or corrupt samples.jsonl is noted (file and line) beside the figures results.json holds, in every format.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from assay.commands.usage import UsageFailure
from assay.errors import AssayError
from assay.report.pageselect import MAX_PAGE_SAMPLES

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console

    from assay.results.compare import Comparison
    from assay.results.loader import MetricRow, Run

FORMATS = ("rich", "markdown", "json")


def _console() -> Console:
    """A console for tables: the terminal's width, or a wide one when output goes to a file or CI log."""
    import sys

    from rich.console import Console

    return Console(highlight=False, width=None if sys.stdout.isatty() else 200)


def _load(path: Path) -> Run:
    from assay.results import load_run

    try:
        run = load_run(path)
        _ = run.results  # computed now when results.json is missing, so its errors surface here
    except AssayError as err:
        raise UsageFailure(str(err)) from None
    return run


@dataclass(frozen=True)
class Threshold:
    """A ``--fail-under`` gate: ``[task/]metric[,filter]=value``."""

    task: str | None
    metric: str
    filter: str | None
    value: float
    text: str

    def matches(self, row: MetricRow) -> bool:
        """Whether a table row is gated by this threshold (a bare metric gates tasks, not groups)."""
        if self.task is None and row.is_group:
            return False
        return (
            (self.task is None or row.task == self.task)
            and row.metric == self.metric
            and (self.filter is None or row.filter == self.filter)
        )


def parse_threshold(spec: str) -> Threshold:
    """Parse ``METRIC=VALUE`` where METRIC is ``metric``, ``task/metric``, optionally with ``,filter``."""
    name, sep, raw = spec.rpartition("=")
    if not sep or not name:
        raise click.BadParameter(f"expected METRIC=VALUE, got {spec!r}", param_hint="--fail-under")
    try:
        value = float(raw)
    except ValueError:
        raise click.BadParameter(f"{raw!r} is not a number (in {spec!r})", param_hint="--fail-under") from None
    if not math.isfinite(value):
        raise click.BadParameter(f"threshold must be finite (in {spec!r})", param_hint="--fail-under")
    task, slash, rest = name.rpartition("/")
    metric, comma, filter_name = rest.partition(",")
    if not metric or (slash and not task) or (comma and not filter_name):
        raise click.BadParameter(f"expected [task/]metric[,filter]=VALUE, got {spec!r}", param_hint="--fail-under")
    return Threshold(task or None, metric, filter_name or None, value, spec)


def check_thresholds(run: Run, thresholds: list[Threshold]) -> list[str]:
    """The failures (empty when every gated metric reaches its threshold); an unmatched gate is a usage error."""
    from assay.report.table import tests_counts

    rows = run.metric_rows()
    failures: list[str] = []
    for t in thresholds:
        matched = [r for r in rows if t.matches(r)]
        if not matched:
            known = sorted({f"{r.task}/{r.metric},{r.filter}" for r in rows})
            raise UsageFailure(f"--fail-under {t.text}: no such metric in {run.name}; known: {', '.join(known)}")
        for r in matched:
            tests = r.entry.get("tests")
            if isinstance(tests, dict):  # a `headline: tests` task is gated on what its headline shows
                rate = tests.get("pass_rate")
                if rate is None:
                    failures.append(f"{r.key} has no pass rate (no test passed or failed) — threshold {t.value:g}")
                elif rate < t.value:
                    failures.append(f"{r.key} pass rate = {rate:.4f} < {t.value:g} ({tests_counts(tests)})")
            elif r.mean is None:
                failures.append(f"{r.key} has no value (every sample errored) — threshold {t.value:g}")
            elif r.mean < t.value:
                hint = f" (scores run from 0 to 1: did you mean {t.value / 100:g}?)" if 1 < t.value <= 100 else ""
                failures.append(f"{r.key} = {r.mean:.4f} < {t.value:g}" + (hint if 0 <= r.mean <= 1 else ""))
    return failures


def refresh_calibration(run: Run) -> None:
    """Mark gated judges (require_calibration) calibrated or not from the calibration records on disk now, so a
    calibration made after the run counts, and one removed or outdated no longer does; and correct judge figures
    by the people's labels on disk now (labels given after the run count)."""
    from assay.evaluators.judge.calibration.gate import apply_marks, run_marks

    apply_marks(run.results, run_marks(run.manifest, run.path))
    from assay.results.judgecorrected import apply_judge_corrections, judge_corrections

    confidence = float((run.results.get("assay") or {}).get("confidence") or 0.95)
    apply_judge_corrections(run.results, judge_corrections(run.manifest, run.path, confidence=confidence))


def uncalibrated_gates(run: Run, thresholds: list[Threshold]) -> list[str]:
    """The ``--fail-under`` gates whose metric is an uncalibrated judge's: a gate on figures nobody has measured."""
    from assay.evaluators.judge.calibration.gate import uncalibrated_note

    out: list[str] = []
    for r in run.metric_rows():
        why = uncalibrated_note(r.entry)
        if why and any(t.matches(r) for t in thresholds):
            out.append(f"--fail-under on {r.key}: an uncalibrated judge ({why})")
    return out


def _html_writer() -> Any:
    try:
        from assay.report import html
    except ImportError as err:
        if err.name not in ("assay.report.html", None):
            raise
        raise UsageFailure(
            "--html: the HTML report is not available in this installation (assay.report.html)"
        ) from None
    return html.write_html


def _print_run(run: Run, fmt: str, console: Console, title: str | None, samples_notes: list[str]) -> None:
    from rich.text import Text

    from assay.report.table import build_tables, operational_renderables, render_operational, render_table

    if fmt == "rich":
        if title:
            console.rule(Text(title))
        for table in build_tables(run, width=console.width):
            console.print(table)
        for note in json.loads(render_table(run, "json"))["notes"] + samples_notes:
            console.print(Text("• " + note, style="yellow"))
        for part in operational_renderables(run):
            console.print(part)
    else:
        if title:
            click.echo(f"## {title}\n" if fmt == "markdown" else "")
        click.echo(render_table(run, fmt))
        if samples_notes:
            click.echo("\n".join(f"- {note}" for note in samples_notes))
        ops = render_operational(run, "markdown")
        if ops:
            click.echo("\n" + ops)


def _report_json(runs: list[Run], comparison: Comparison | None, samples_notes: list[list[str]]) -> str:
    from assay.report.table import render_table

    out: list[dict[str, Any]] = []
    for run, notes in zip(runs, samples_notes, strict=True):
        table = json.loads(render_table(run, "json"))
        table["notes"] = table["notes"] + notes
        entry = {"run": str(run.path), "run_id": run.manifest.run_id, "name": run.manifest.name}
        out.append({**entry, **table, "operational": run.operational})
    doc: dict[str, Any] = {"runs": out}
    if comparison is not None:
        doc["comparison"] = comparison.to_dict()
    return json.dumps(doc, indent=2, ensure_ascii=False)


@click.command("report")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="rich", show_default=True)
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False, path_type=Path), help="Write JUnit XML here.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path), help="Write an HTML report.")
@click.option(
    "--html-samples",
    type=click.IntRange(min=0),
    default=MAX_PAGE_SAMPLES,
    show_default=True,
    help="Samples of each run the HTML page holds (0: all); past it, errored then failing ones first.",
)
@click.option(
    "--fail-under",
    "fail_under",
    multiple=True,
    metavar="[TASK/]METRIC[,FILTER]=VALUE",
    help="Exit 1 when the metric's mean is below VALUE (repeatable).",
)
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05, show_default=True)
@click.option(
    "--strict-judges",
    is_flag=True,
    help="Exit 1 when a --fail-under metric is a judge's with require_calibration and no matching calibration "
    "(without it: a warning).",
)
@click.option(
    "--baseline", metavar="CELL", help="Of a matrix folder: the cell others are compared with (default: the first)."
)
def report_command(
    run_dirs: tuple[Path, ...],
    fmt: str,
    junit_path: Path | None,
    html_path: Path | None,
    html_samples: int,
    fail_under: tuple[str, ...],
    alpha: float,
    strict_judges: bool = False,
    baseline: str | None = None,
) -> None:
    """Show a run's results again from disk: RUN_DIR [RUN_DIR_B], or a matrix folder (a column per cell).

    With two runs both are shown and B (the candidate) is compared with A; --junit and --fail-under
    then apply to B. Exit code 1 when a --fail-under threshold is missed (or, with --strict-judges, gates an
    uncalibrated judge), 2 on usage errors.
    """
    if len(run_dirs) > 2:
        raise click.UsageError(f"expected one or two run folders, got {len(run_dirs)}")
    if len(run_dirs) == 1 and (run_dirs[0] / "optimization.json").is_file():  # an `assay optimize` folder
        from assay.optimize.report import report_optimization

        report_optimization(run_dirs[0], fmt, html_path)
        return
    if len(run_dirs) == 1 and (run_dirs[0] / "matrix.json").is_file():  # a matrix folder: a column per cell
        from assay.commands.matrixreport import report_matrix

        gated = [flag for flag, given in (("--fail-under", fail_under), ("--junit", junit_path)) if given]
        report_matrix(run_dirs[0], fmt, html_path, html_samples, alpha, gated, baseline)
        return
    if baseline is not None:
        raise UsageFailure("--baseline names a cell of a matrix folder (assay run with several --model)")
    thresholds = [parse_threshold(s) for s in fail_under]
    write_html = _html_writer() if html_path is not None else None
    runs = [_load(p) for p in run_dirs]
    for run in runs:
        refresh_calibration(run)
    from assay.results.samplecheck import check_samples

    # a torn or corrupt samples.jsonl is said beside the stored figures (file and line), in every format
    checks = [check_samples(run) for run in runs]
    candidate = runs[-1]
    comparison = None
    if len(runs) == 2:
        comparison = _compare(runs[0], runs[1], alpha=alpha)
    failures = check_thresholds(candidate, thresholds)
    uncalibrated = uncalibrated_gates(candidate, thresholds)
    console = _console()
    if fmt == "json":
        click.echo(_report_json(runs, comparison, [check.notes for check in checks]))
    else:
        for i, run in enumerate(runs):
            name = run.manifest.name  # a named run is labelled by its name (--name)
            title = f"run {name}" if name else None
            if len(runs) == 2:
                title = f"{'AB'[i]}: {name} ({run.path})" if name else f"{'AB'[i]}: {run.path}"
            _print_run(run, fmt, console, title, checks[i].notes)
        if comparison is not None:
            _print_comparison(comparison, fmt, console)
    if junit_path is not None:
        from assay.report.junit import write_junit

        counts = _per_sample("--junit", lambda: write_junit(candidate, junit_path))
        click.echo(
            f"JUnit: {counts['tests']} tests, {counts['failures']} failures, {counts['errors']} errors -> {junit_path}",
            err=True,
        )
    if write_html is not None:
        _per_sample("--html", lambda: write_html(runs, html_path, compare=comparison, max_samples=html_samples))
        click.echo(f"HTML report -> {html_path}", err=True)
    for line in uncalibrated:
        click.echo(f"{'FAIL' if strict_judges else 'WARNING'} {line}", err=True)
    for line in failures:
        click.echo(f"FAIL {line}", err=True)
    if failures or (uncalibrated and strict_judges):
        raise SystemExit(1)


def _per_sample(option: str, write: Callable[[], Any]) -> Any:
    """Write an output made of the per-sample records; a run whose records cannot be read (a corrupt samples.jsonl,
    named by file and line) is a usage error (exit 2), not a traceback."""
    try:
        return write()
    except AssayError as err:
        raise UsageFailure(f"{option}: {err}") from None


def _compare(run_a: Run, run_b: Run, **options: Any) -> Comparison:
    """compare_runs, with runs whose samples do not pair up (and other bad input) as a usage error (exit 2)."""
    from assay.results.compare import compare_runs

    try:
        return compare_runs(run_a, run_b, **options)
    except AssayError as err:
        raise UsageFailure(str(err)) from None


def _print_comparison(comparison: Comparison, fmt: str, console: Console) -> None:
    from assay.report.table import comparison_renderables, render_comparison

    if fmt == "rich":
        console.rule("B vs A")
        for part in comparison_renderables(comparison):
            console.print(part)
    else:
        click.echo(("\n## B vs A\n\n" if fmt == "markdown" else "") + render_comparison(comparison, fmt))


@click.command("compare")
@click.argument("run_a", type=click.Path(exists=True, path_type=Path))
@click.argument("run_b", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Significance level.",
)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="rich", show_default=True)
@click.option(
    "--iters", type=click.IntRange(min=1), default=10_000, show_default=True, help="Bootstrap/permutation draws."
)
@click.option("--seed", type=int, default=1234, show_default=True, help="Seed of the resampling.")
@click.option(
    "--min-paired",
    type=click.FloatRange(0, 1),
    default=0.5,
    show_default=True,
    help="Refuse (exit 2) when a task pairs fewer than this share of the smaller run's samples.",
)
def compare_command(run_a: Path, run_b: Path, alpha: float, fmt: str, iters: int, seed: int, min_paired: float) -> None:
    """Compare RUN_B (candidate) with RUN_A (baseline) on the samples both scored.

    Samples pair by sample id, and only where their input (the dataset row) is the same in both runs.
    Pass/fail metrics: exact McNemar test; continuous ones: sign-flip permutation test; intervals
    from a paired bootstrap. Exit code 1 when any metric is significantly worse, 2 on usage errors
    (including runs that share no task and metric, or whose samples do not pair up).
    """
    from assay.report.table import comparison_renderables, render_comparison

    comparison = _compare(_load(run_a), _load(run_b), alpha=alpha, iters=iters, seed=seed, min_paired=min_paired)
    if not comparison.metrics:  # a CI gate must not pass because there was nothing to compare
        raise UsageFailure(
            "nothing to compare: the runs share no task and metric" + "".join(f"\n  {w}" for w in comparison.warnings)
        )
    if fmt == "rich":
        console = _console()
        for part in comparison_renderables(comparison):
            console.print(part)
    else:
        click.echo(render_comparison(comparison, fmt))
    worse = comparison.significantly_worse
    if worse:
        click.echo(f"significantly worse: {', '.join(m.key for m in worse)}", err=True)
        raise SystemExit(1)
