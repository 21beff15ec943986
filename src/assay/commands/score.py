"""``assay score``: re-score a run's logged answers with the task's (possibly changed) filters and evaluators.

Exit codes are ``assay run``'s (see :mod:`assay.runner.exits`): 1 when the re-scored samples fail past the error
limit (the run's recorded ``--max-error-rate`` unless given), 2 when nothing was re-scored, 3 when workers died.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.markup import escape

from assay.commands.run import executor_options, ray_options
from assay.errors import AssayError

if TYPE_CHECKING:
    from assay.runner.rescore import Rescored


@click.command("score")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--task",
    "task_files",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A changed task file whose filters and evaluators replace those of the same-named task (repeatable).",
)
@click.option(
    "--output",
    "-o",
    "output_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where the new run folder goes (default: next to RUN_DIR).",
)
@click.option(
    "--in-place", is_flag=True, help="Rewrite RUN_DIR itself (its old scores are replaced) instead of a new folder."
)
@click.option(
    "--max-error-rate",
    type=click.FloatRange(0, 1),
    default=None,
    help="Exit 1 past this share of failed samples, model or evaluator errors, as assay run does (1: never; "
    "default: the limit the run recorded, else 0.1). The re-scored folder is written either way.",
)
@executor_options
@click.option("--quiet", "-q", is_flag=True, help="No table (for CI logs).")
@click.option("--format", "fmt", type=click.Choice(["rich", "markdown", "json"]), default="rich", show_default=True)
def score_command(
    run_dir: Path,
    task_files: tuple[Path, ...],
    output_dir: Path | None,
    in_place: bool,
    max_error_rate: float | None,
    executor: str,
    ray_address: str | None,
    ray_workers: int | None,
    ray_num_cpus: float | None,
    ray_num_gpus: float | None,
    ray_shard_size: int | None,
    ray_start_timeout: float | None,
    processes: int | None,
    quiet: bool,
    fmt: str,
) -> None:
    """Re-score RUN_DIR's logged responses into a new run folder (run.json names RUN_DIR as `rescored_from`);
    no model is called. With --in-place, RUN_DIR itself is rewritten (holding its lock). With --executor ray,
    Ray workers score shards of the records; this process still writes the run folder."""
    from assay.api import load_tasks, run_sync
    from assay.runner.outcomes import WorkerLost
    from assay.runner.rescore import rescore

    console = Console(stderr=True, soft_wrap=True)  # messages stay one line each in CI logs
    if in_place and output_dir is not None:
        raise click.UsageError("--in-place rewrites RUN_DIR; it takes no --output")
    try:
        tasks = load_tasks(list(task_files)) if task_files else None
        ray = ray_options(ray_address, ray_workers, ray_num_cpus, ray_num_gpus, ray_shard_size, ray_start_timeout)
        outcome = run_sync(
            rescore(
                run_dir,
                tasks,
                output_dir=output_dir,
                in_place=in_place,
                executor=executor,
                ray=ray,
                processes=processes,
            )
        )
    except WorkerLost as err:  # the original run is untouched; scoring again may well succeed
        console.print(f"[red]error:[/] {escape(str(err))}")
        sys.exit(3)
    except AssayError as err:
        console.print(f"[red]error:[/] {escape(str(err))}")
        sys.exit(2)
    if not quiet:
        from assay.report.table import render_table
        from assay.results import load_run

        out = render_table(load_run(outcome.run_dir), fmt=fmt)
        if isinstance(out, str):
            click.echo(out)
        else:
            Console().print(out)
    where = "in place in" if outcome.in_place else f"from {escape(str(run_dir))} into"
    console.print(f"Re-scored {outcome.samples} samples {where} [bold]{escape(str(outcome.run_dir))}[/]")
    sys.exit(_error_limit(outcome, run_dir, max_error_rate, console))


def _error_limit(outcome: Rescored, run_dir: Path, given: float | None, console: Console) -> int:
    """Say how many re-scored samples failed and apply ``assay run``'s error limit: its exit code."""
    from assay.runner.exits import DEFAULT_MAX_ERROR_RATE, EXIT_OK, EXIT_TOO_MANY_ERRORS, error_rate_problem
    from assay.store.rundir import read_manifest

    if given is not None:
        limit: float | None = given
    else:  # the run's own limit (None: it had none); a run folder from before it was recorded: the default
        recorded = read_manifest(run_dir).config
        limit = recorded.get("max_error_rate", DEFAULT_MAX_ERROR_RATE)
    errors, evaluator_errors = outcome.errors, outcome.evaluator_errors
    if errors or evaluator_errors:
        console.print(
            f"{errors} model error{'s' if errors != 1 else ''} (logged), {evaluator_errors} evaluator "
            f"error{'s' if evaluator_errors != 1 else ''} in {outcome.samples} samples"
        )
    for label, text in (("first error", outcome.first_error), ("first evaluator error", outcome.first_evaluator_error)):
        if text:
            console.print(f"[yellow]{label}:[/] {escape(text)}")
    first = outcome.first_error or outcome.first_evaluator_error
    problem = error_rate_problem(outcome.samples, errors, evaluator_errors, limit, first)
    if problem is None:
        return EXIT_OK
    console.print(f"[red]error:[/] {escape(problem)}")
    return EXIT_TOO_MANY_ERRORS
