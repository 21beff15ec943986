"""``assay audit TASK... / RUN...``: score degenerate answers and each row's own target through the tasks' real
scoring; scan finished runs for answers that won without solving.

Exit codes: 0 nothing found; 1 a probe earned credit above --max-credit (always one letter: beating chance beyond
doubt), a row's own target failed, or a run holds a finding; 2 a usage error (a bad task file or run folder); 3 a
metric could not be audited at all: every verdict errored (a judge that cannot be reached, an evaluator that raises).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from assay.commands.usage import UsageFailure
from assay.errors import AssayError

if TYPE_CHECKING:
    from assay.audit import TaskAudit
    from assay.audit.runscan import Finding


def _print(audits: list[TaskAudit], max_credit: float) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
    for audit in audits:
        console.rule(f"audit of {escape(audit.task)} ({audit.samples} samples)")
        if audit.note:
            console.print(f"[yellow]note[/yellow] {escape(audit.note)}")
        table = Table(header_style="bold")
        for col in ("filter", "metric", "probe", "passes", "of", "share", "chance", "mean score", "result"):
            table.add_column(col, justify="left" if col in ("filter", "metric", "probe", "result") else "right")
        for fig in sorted(audit.probes, key=lambda f: (not f.flagged, f.filter, f.metric, f.probe)):
            counted = fig.applicable - fig.legitimate
            table.add_row(
                escape(fig.filter), escape(fig.metric), escape(fig.probe), str(fig.passed), str(counted),
                f"{fig.share:.1%}", f"{fig.chance:.1%}", "—" if fig.mean_score is None else f"{fig.mean_score:.3f}",
                "[red]GAMEABLE[/red]" if fig.flagged else "ok",
            )  # fmt: skip
        console.print(table)
        for fig in audit.flagged:
            ex = fig.example or {}
            where = f"{escape(fig.filter)}/{escape(fig.metric)}"
            console.print(
                f"[red]gameable[/red] {where}: {escape(fig.probe)} ({escape(fig.about)}) passes {fig.passed} of "
                f"{fig.applicable - fig.legitimate}; e.g. sample {escape(str(ex.get('sample_id')))} "
                f"answered {escape(repr(ex.get('answer')))}: score {ex.get('score')}"
                + (f", reason {escape(repr(ex.get('reason')))}" if ex.get("reason") else "")
            )
        for ora in audit.oracle:
            if ora.failed:
                ex = ora.examples[0]
                console.print(
                    f"[red]broken[/red] {escape(ora.filter)}/{escape(ora.metric)}: the row's own target fails on "
                    f"{ora.failed} of {ora.applicable} samples; e.g. sample {escape(str(ex['sample_id']))} answered "
                    f"{escape(repr(ex['answer']))}: {escape(ex['reason'] or 'failed')}"
                )
        for metric in audit.unjudged:
            count, first = audit.errored[metric]
            console.print(
                f"[red]not audited[/red] {escape(metric)}: all {count} verdict(s) errored (first: {escape(first)})"
            )
        for metric, count in audit.unchecked.items():
            console.print(
                f"[yellow]unchecked[/yellow] {escape(metric)}: {count} sample(s) have no check (any answer passes); "
                "left out"
            )
        for metric, why in audit.skipped.items():
            console.print(f"[yellow]skipped[/yellow] {escape(metric)}: {escape(why)}")
    found = sum(len(a.flagged) + len(a.broken_oracle) for a in audits)
    console.print(
        f"{found} finding(s); a probe is gameable above {max_credit:.1%} of unearned passes (letters: chance)"
    )


def _print_findings(run: Path, findings: list[Finding]) -> None:
    from rich.console import Console
    from rich.markup import escape

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
    console.rule(f"audit of the run {escape(str(run))}")
    for f in findings:
        console.print(f"[red]{escape(f.kind)}[/red] {escape(f.task)}: {escape(f.what)} ({f.count} sample(s))")
        for sample_id, link in zip(f.samples, f.links, strict=True):
            console.print(f"    {escape(sample_id)}  {escape(link)}")
    console.print(f"{len(findings)} finding(s) in the run")


@click.command("audit")
@click.argument("tasks", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--limit", type=click.IntRange(min=1), help="Audit only the first N samples of each task.")
@click.option(
    "--max-credit",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help="The share of samples a degenerate answer may pass (where it is no right answer itself).",
)
@click.option("--judges", is_flag=True, help="Audit judge metrics too (calls their judge model, cached as any judge).")
@click.option("--format", "fmt", type=click.Choice(["rich", "json"]), default="rich", show_default=True)
def audit_command(tasks: tuple[Path, ...], limit: int | None, max_credit: float, judges: bool, fmt: str) -> None:
    """Score degenerate answers (empty, {}, NaN, every choice, the prompt echoed, regex bait...) and each row's own
    target through TASKS' filters and evaluators, with no model: what passes is a scorer that can be gamed. A run
    folder instead is scanned for answers that won without solving."""
    from assay.api import load_tasks
    from assay.audit import audit_task
    from assay.audit.runscan import findings_as_dicts, scan_run

    runs = [p for p in tasks if p.is_dir()]
    files = [p for p in tasks if not p.is_dir()]
    try:  # read as assay run reads them: assay's YAML, lm-eval task files (lm-eval's task layer), promptfoo configs
        loaded = load_tasks(files, limit=limit) if files else []
        audits = [audit_task(task, limit=limit, max_credit=max_credit, judges=judges) for task in loaded]
        scans = [(run, scan_run(run)) for run in runs]
    except AssayError as err:
        raise UsageFailure(str(err)) from None
    if fmt == "json":
        doc = [a.to_dict() for a in audits] + [{"run": str(r), "findings": findings_as_dicts(f)} for r, f in scans]
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False, default=str))
    else:
        if audits:
            _print(audits, max_credit)
        for run, findings in scans:
            _print_findings(run, findings)
    if any(a.flagged or a.broken_oracle for a in audits) or any(f for _, f in scans):
        sys.exit(1)
    if any(a.unjudged for a in audits):
        sys.exit(3)  # nothing found, but a metric said nothing either: not a clean bill
