"""``assay judge``: import people's labels into a run folder and calibrate the run's judges against them.

Exit codes: 0 done; 2 bad input (not a run folder, a bad labels file naming its line, no judge metric, no labels).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from assay.errors import AssayError

if TYPE_CHECKING:
    from rich.console import Console

    from assay.record import RunManifest


class UsageFailure(click.ClickException):
    """Bad input (a labels file's line, a run folder, an option): exit code 2, as click's usage errors."""

    exit_code = 2


def _run_dir(path: Path) -> Path:
    if not (path / "run.json").is_file():
        raise UsageFailure(f"{path}: not a run folder (no run.json)")
    return path


@click.group("judge")
def judge_group() -> None:
    """Measure judges: people's labels and the judges' agreement with them."""


@judge_group.group("labels")
def labels_group() -> None:
    """People's labels of a run's judged outputs (RUN/labels.jsonl, append-only)."""


@labels_group.command("import")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--task", help="The task of rows that name none (default: the run's only task).")
@click.option("--metric", help="The metric of rows that name none (default: the run's only judge metric).")
@click.option("--who", default="", help="Who gave the labels of rows that name no one.")
def import_command(run_dir: Path, file: Path, task: str | None, metric: str | None, who: str) -> None:
    """Append the labels of a CSV or JSONL FILE keyed by sample_id to RUN_DIR/labels.jsonl."""
    from assay.evaluators.judge.calibration.labels import append_labels, read_label_file
    from assay.store.rundir import read_manifest

    try:
        manifest = read_manifest(_run_dir(run_dir))
        task, metric = _defaults(manifest, task, metric)
        labels = read_label_file(file, task=task, metric=metric, who=who)
        known = {(t.name, m.name) for t in manifest.tasks for m in t.metrics}
        for n, lab in enumerate(labels, 1):
            if (lab.task, lab.metric) not in known:
                raise UsageFailure(f"{file}: label {n} names {lab.task}/{lab.metric}, which this run does not have")
        written = append_labels(run_dir, labels)
    except AssayError as err:
        raise UsageFailure(str(err)) from None
    click.echo(f"{written} label(s) -> {run_dir / 'labels.jsonl'}", err=True)


def _defaults(manifest: RunManifest, task: str | None, metric: str | None) -> tuple[str | None, str | None]:
    """The task and metric of label rows that name none: as given, else the run's only task and judge metric."""
    from assay.evaluators.judge.calibration.collect import judge_metrics

    tasks = [t.name for t in manifest.tasks]
    task = task or (tasks[0] if len(tasks) == 1 else None)
    if metric is None:
        judged = [jm for jm in judge_metrics(manifest) if task in (None, jm.task)]
        metric = judged[0].metric if len(judged) == 1 else None
    return task, metric


@judge_group.command("calibrate")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--labels",
    "labels_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Labels from this CSV/JSONL file instead of RUN_DIR/labels.jsonl.",
)
@click.option("--evaluator", help="Only the judge metric (or evaluator) of this name.")
@click.option(
    "--save",
    "save",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also append the records to this project-level records file.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the records as JSON.")
@click.option("--iters", type=click.IntRange(min=100), default=2000, show_default=True, help="Bootstrap draws.")
@click.option("--seed", type=int, default=1234, show_default=True, help="Seed of the bootstrap.")
def calibrate_command(
    run_dir: Path,
    labels_file: Path | None,
    evaluator: str | None,
    save: Path | None,
    as_json: bool,
    iters: int,
    seed: int,
) -> None:
    """Agreement of RUN_DIR's judges with people's labels; writes a calibration record per judge metric to
    RUN_DIR/calibrations.jsonl (bound to the judge's model, prompt hash, scale and options)."""
    from assay.evaluators.judge.calibration.calibrate import calibrate_run
    from assay.evaluators.judge.calibration.labels import read_label_file, run_labels
    from assay.evaluators.judge.calibration.records import append_records
    from assay.store.jsonlfiles import CALIBRATIONS

    try:
        _run_dir(run_dir)
        if labels_file is not None:
            from assay.store.rundir import read_manifest

            task, metric = _defaults(read_manifest(run_dir), None, evaluator)
            labels = read_label_file(labels_file, task=task, metric=metric)
        else:
            labels = run_labels(run_dir)
        if not labels:
            raise UsageFailure(
                f"no labels in {labels_file or run_dir / 'labels.jsonl'}: import some (assay judge labels import)"
            )
        records = calibrate_run(
            run_dir,
            labels,
            evaluator=evaluator,
            labels_source=str(labels_file) if labels_file else None,
            iters=iters,
            seed=seed,
        )
        append_records(run_dir / CALIBRATIONS, records)
        if save is not None:
            append_records(save, records)
    except AssayError as err:
        raise UsageFailure(str(err)) from None
    if as_json:
        click.echo(json.dumps(records, indent=2, ensure_ascii=False))
    else:
        from assay.commands.report import _console

        console = _console()
        for record in records:
            print_record(console, record)
    click.echo(f"{len(records)} calibration record(s) -> {run_dir / CALIBRATIONS}", err=True)


def _f(value: Any, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _ci(ci: Any) -> str:
    return "" if not ci else f" [{_f(ci[0])}, {_f(ci[1])}]"


def print_record(console: Console, record: dict[str, Any]) -> None:
    """One judge's calibration as rich tables: the agreement figures and the confusion matrix."""
    from rich.table import Table
    from rich.text import Text

    ident = record["judge"]
    title = f"{record['task']}/{record['metric']} — judge {record['judge_id']} ({', '.join(ident['models'])})"
    table = Table(title=Text(title), show_header=True)
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_column("95% interval", justify="right")
    table.add_row("labelled items judged", str(record["n_items"]), "")
    table.add_row("judge errors (not compared)", str(record["n_judge_errors"]), "")
    if "accuracy" in record:
        table.add_row("accuracy", _f(record["accuracy"]), _ci(record.get("accuracy_ci")))
        table.add_row("base rate (most common label)", _f(record["base_rate"]), "")
        name = "weighted κ (quadratic)" if record.get("kappa_weights") == "quadratic" else "Cohen's κ"
        table.add_row(name, _f(record["kappa"]), _ci(record.get("kappa_ci")))
    if "linear_kappa" in record:
        table.add_row("weighted κ (linear)", _f(record["linear_kappa"]), "")
    if "spearman" in record:
        table.add_row("Spearman ρ", _f(record["spearman"]), _ci(record.get("spearman_ci")))
    alpha = record.get("krippendorff")
    if alpha:
        table.add_row(f"Krippendorff α, people ({len(alpha['raters'])})", _f(alpha["people"]), "")
        table.add_row("Krippendorff α, people + judge", _f(alpha["people_and_judge"]), "")
    consistency = record.get("self_consistency")
    if consistency:
        table.add_row(
            f"self-consistency ({consistency['n_outputs']} outputs judged twice+)", _f(consistency["agreement"]), ""
        )
    position = record.get("position_bias")
    if position and position["judgements"]:
        flips = f"{position['inconsistent']} of {position['judgements']} flipped"
        lean = f"{position['prefers_first']} to the first, {position['prefers_second']} to the second"
        table.add_row(f"position: swap consistency ({flips}: {lean})", _f(position["swap_consistency"]), "")
    verbose = record["verbosity"]
    table.add_row(
        "verbosity: ρ(judge score, length)", _f(verbose["judge_spearman"]), _ci(verbose.get("judge_spearman_ci"))
    )
    if verbose.get("people_spearman") is not None:
        table.add_row("verbosity: ρ(people's label, length)", _f(verbose["people_spearman"]), "")
    console.print(table)
    confusion = record.get("confusion")
    if confusion:
        matrix = Table(title="confusion (rows: people, columns: judge)")
        matrix.add_column("people \\ judge")
        labels = [str(c if not isinstance(c, float) else f"{c:g}") for c in confusion["labels"]]
        for name in labels:
            matrix.add_column(name, justify="right")
        low, high = confusion.get("low"), confusion.get("high")
        for r, row in enumerate(confusion["matrix"]):
            cells = [f"{v}" + (f" [{low[r][c]:g}–{high[r][c]:g}]" if low and high else "") for c, v in enumerate(row)]
            matrix.add_row(labels[r], *cells)
        console.print(matrix)
