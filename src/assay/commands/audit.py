"""``assay audit TASK...``: score degenerate answers and each row's own target through the tasks' real scoring.

Exit codes: 0 no probe earned credit and every correct answer passed; 1 a probe earned credit above --max-credit
(always one letter: beating chance beyond doubt), or a row's own target failed; 2 a usage error (a bad task file).
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
        for metric, why in audit.skipped.items():
            console.print(f"[yellow]skipped[/yellow] {escape(metric)}: {escape(why)}")
    found = sum(len(a.flagged) + len(a.broken_oracle) for a in audits)
    console.print(
        f"{found} finding(s); a probe is gameable above {max_credit:.1%} of unearned passes (letters: chance)"
    )


@click.command("audit")
@click.argument("tasks", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
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
    target through TASKS' filters and evaluators, with no model: what passes is a scorer that can be gamed."""
    from assay.audit import audit_task
    from assay.tasks import load_task

    try:
        audits = [audit_task(load_task(path), limit=limit, max_credit=max_credit, judges=judges) for path in tasks]
    except AssayError as err:
        raise UsageFailure(str(err)) from None
    if fmt == "json":
        click.echo(json.dumps([a.to_dict() for a in audits], indent=2, ensure_ascii=False, default=str))
    else:
        _print(audits, max_credit)
    if any(a.flagged or a.broken_oracle for a in audits):
        sys.exit(1)
