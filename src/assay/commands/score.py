"""``assay score``: re-score a run's logged answers with the task's (possibly changed) evaluators."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from assay.errors import AssayError


def _print_results(run_dir: Path, fmt: str) -> None:
    from assay.report.table import render_table
    from assay.results import load_run

    out = render_table(load_run(run_dir), fmt=fmt)
    if isinstance(out, str):
        click.echo(out)
    else:
        Console().print(out)


@click.command("score")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--task",
    "task_files",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A changed task file whose evaluators replace those of the same-named task (repeatable).",
)
@click.option("--quiet", "-q", is_flag=True)
@click.option("--format", "fmt", type=click.Choice(["rich", "markdown", "json"]), default="rich", show_default=True)
def score_command(run_dir: Path, task_files: tuple[Path, ...], quiet: bool, fmt: str) -> None:
    """Re-score RUN_DIR's logged responses with the task's (possibly changed) evaluators; no model is called."""
    from assay.api import load_tasks, run_sync
    from assay.runner.rescore import rescore

    console = Console(stderr=True, soft_wrap=True)  # messages stay one line each in CI logs
    try:
        tasks = load_tasks(list(task_files)) if task_files else None
        count = run_sync(rescore(run_dir, tasks))
    except AssayError as err:
        console.print(f"[red]error:[/] {escape(str(err))}")
        sys.exit(2)
    if not quiet:
        _print_results(run_dir, fmt)
    console.print(f"Re-scored {count} samples in {escape(str(run_dir))}")
