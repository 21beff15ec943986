"""``assay plan``: how many samples and repeats a difference needs, and what they cost, read from a pilot run.

Exit codes: 0 the plan was printed; 2 a usage error (not a run folder, a bad option or price file).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from assay.commands.report import _console, _load
from assay.commands.run import _prices
from assay.commands.usage import UsageFailure
from assay.errors import ConfigError

if TYPE_CHECKING:
    from assay.results.planning import MetricPlan, Plan


def _money(usd: float | None, complete: bool) -> str:
    if usd is None:
        return "unknown"
    return f"${usd:,.2f}" + ("" if complete else " (est.)")


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _sd_diff(m: MetricPlan) -> str:
    return f"{m.sd_diff:.3g}" + (f" (r={m.correlation:.2f})" if m.correlation is not None else "")


def _print_plan(plan: Plan) -> None:
    from rich.markup import escape
    from rich.table import Table

    console = _console()
    design = f"paired with {escape(plan.baseline)}" if plan.baseline else "two runs on the same samples, correlation 0"
    console.print(
        f"Plan from [bold]{escape(plan.run)}[/bold]: samples to detect a difference of {plan.diff:g} at "
        f"alpha={plan.alpha:g} (two-sided) with power {plan.power:g}; {design}; {plan.concurrency} concurrent requests."
    )
    table = Table(show_lines=False)
    for col in ("metric", "pilot n", "mean", "sd", "sd of diff", "repeats", "samples needed", "cost", "time"):
        table.add_column(col, justify="left" if col == "metric" else "right")
    for m in plan.metrics:
        cost = plan.costs.get(m.task)
        complete = bool(cost and cost.complete)
        for i, (k, n) in enumerate(sorted(m.samples_needed.items())):
            usd, secs = plan.cost(m.task, n, k)
            table.add_row(
                escape(m.key) if i == 0 else "",
                f"{m.n_pilot:,}" if i == 0 else "",
                f"{m.mean:.4g}" if i == 0 else "",
                f"{m.sd:.3g}" if i == 0 else "",
                (f"{m.sd_diff:.3g}" + (f" (r={m.correlation:.2f})" if m.correlation is not None else ""))
                if i == 0
                else "",
                str(k),
                f"{n:,}" + (" > dataset" if n > m.n_docs else ""),
                _money(usd, complete),
                _duration(secs),
            )
    console.print(table)
    widths = Table(title=f"Expected half-width of a {100 * (1 - plan.alpha):g}% interval", show_lines=False)
    widths.add_column("metric")
    widths.add_column("n", justify="right")
    widths.add_column("of the mean", justify="right")
    widths.add_column("of the difference", justify="right")
    for m in plan.metrics:
        for i, n in enumerate(sorted(m.half_width)):
            widths.add_row(
                escape(m.key) if i == 0 else "", f"{n:,}", f"±{m.half_width[n]:.3g}", f"±{m.half_width_diff[n]:.3g}"
            )
    console.print(widths)
    for task, c in plan.costs.items():
        tokens = (
            "tokens unknown"
            if c.input_tokens_per_sample is None or c.output_tokens_per_sample is None
            else f"{c.input_tokens_per_sample:,.0f} in + {c.output_tokens_per_sample:,.0f} out tokens"
        )
        console.print(
            f"{escape(task)}: {c.requests_per_sample:.3g} request(s) a sample, {tokens}, "
            f"{_money(c.usd_per_sample, c.complete)} a sample"
        )
    for m in plan.metrics:
        for note in m.notes:
            console.print(f"[yellow]note[/yellow] {escape(m.key)}: {escape(note)}")
    for warning in plan.warnings:
        console.print(f"[yellow]warning[/yellow] {escape(warning)}")
    console.print(f"[dim]method: {escape(plan.method)}[/dim]")


@click.command("plan")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--baseline",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A run of the same samples to pair with: its correlation with the pilot narrows the plan.",
)
@click.option("--diff", type=float, default=0.02, show_default=True,
              help="The difference to detect, on the metric's scale (0.02 is 2 points of a 0-1 metric).")  # fmt: skip
@click.option("--alpha", type=float, default=0.05, show_default=True, help="The test's level (two-sided).")
@click.option("--power", type=float, default=0.8, show_default=True, help="The chance of detecting the difference.")
@click.option("--repeats", "repeats", type=int, multiple=True,
              help="Repeats a sample to plan for (repeatable); the pilot's repeats and 1 by default.")  # fmt: skip
@click.option("--n", "sizes", type=int, multiple=True,
              help="A sample count to give the expected interval width for (repeatable).")  # fmt: skip
@click.option("--prices", "prices_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help='JSON file of prices: {"model": {"input": usd_per_1M_tokens, "output": usd_per_1M_tokens}}; '
              "the pilot's own prices by default.")  # fmt: skip
@click.option("--concurrency", type=int, help="Concurrent requests of the planned run (the pilot's by default).")
@click.option("--format", "fmt", type=click.Choice(["rich", "json"]), default="rich", show_default=True)
def plan_command(
    run_dir: Path,
    baseline: Path | None,
    diff: float,
    alpha: float,
    power: float,
    repeats: tuple[int, ...],
    sizes: tuple[int, ...],
    prices_file: Path | None,
    concurrency: int | None,
    fmt: str,
) -> None:
    """Plan the samples, repeats, cost and time a difference needs, from a pilot RUN_DIR (and a --baseline)."""
    from assay.results.planning import plan_run

    if concurrency is not None and concurrency < 1:
        raise UsageFailure("--concurrency: expected at least 1")
    run = _load(run_dir)
    base = _load(baseline) if baseline is not None else None
    try:
        plan = plan_run(
            run, baseline=base, diff=diff, alpha=alpha, power=power, repeats=repeats, sizes=sizes,
            prices=_prices(prices_file), concurrency=concurrency,
        )  # fmt: skip
    except ConfigError as err:
        raise UsageFailure(str(err)) from None
    if fmt == "json":
        click.echo(json.dumps(plan.to_dict(), indent=2, allow_nan=False))
    else:
        _print_plan(plan)
