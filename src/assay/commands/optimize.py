"""``assay optimize``: improve a task's prompt, few-shot demos or configuration within a budget of model calls.

Exit codes: 0 finished; 1 a candidate's evaluation run failed (resume with ``--resume``), or ``--require-improvement``
and the best candidate is not significantly better than the original on the test split; 2 bad input; 130 Ctrl-C.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from assay.errors import AssayError


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows (give a finite number)")


def _json_arg(value: str | None, option: str) -> Any:
    if value is None:
        return None
    try:
        return json.loads(value, parse_constant=_reject_constant)
    except ValueError as err:  # JSONDecodeError, or NaN / Infinity
        raise click.BadParameter(f"invalid JSON: {err}", param_hint=option) from None


def _finite_usd(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """``--budget-usd``: a finite amount above 0 (click's FloatRange lets NaN through, which turns the cap off)."""
    import math

    if value is not None and not (math.isfinite(value) and value > 0):
        raise click.BadParameter(f"expected a finite amount of US dollars above 0, got {value!r}")
    return value


def _prices(path: Path) -> dict[str, Any]:
    """The price table of ``--prices FILE``, checked (a non-number is an error naming the file and the key)."""
    from assay.errors import ConfigError
    from assay.results.operational import validate_prices

    try:
        data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
    except (ValueError, OSError) as err:
        raise click.BadParameter(f"{path}: {err}", param_hint="--prices") from None
    try:
        validate_prices(data)
    except ConfigError as err:
        raise click.BadParameter(f"{path}: {err}", param_hint="--prices") from None
    return dict(data)


def _given(name: str) -> bool:
    """True when option ``name`` was set on the command line."""
    from click.core import ParameterSource

    return click.get_current_context().get_parameter_source(name) == ParameterSource.COMMANDLINE


def _model(spec: str | None, base_url: str | None, api_key_env: str | None, option: str) -> Any:
    """A model spec from a string or JSON object, with a base URL / key variable folded into a dict spec."""
    if spec is None:
        if base_url or api_key_env:
            raise click.UsageError(f"--base-url / --api-key-env need {option}")
        return None
    value: Any = _json_arg(spec, option) if spec.lstrip().startswith("{") else spec
    if not (base_url or api_key_env):
        return value
    if isinstance(value, str):
        provider, _, name = value.partition(":")
        value = {"provider": provider, "model": name}
    if base_url:
        value["base_url"] = base_url
    if api_key_env:
        value["api_key_env"] = api_key_env
    return value


@click.command("optimize")
@click.argument("task", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--model", "-m", help="The model being optimised for (default: the task's 'model:').")
@click.option("--base-url", help="Base URL of an OpenAI-compatible server for --model.")
@click.option("--api-key-env", help="Environment variable holding --model's API key.")
@click.option("--optimizer-model", "-r", help="The model that reflects on failures (a spec as --model, or JSON).")
@click.option("--optimizer-base-url", help="Base URL of an OpenAI-compatible server for --optimizer-model.")
@click.option("--optimizer-api-key-env", help="Environment variable holding --optimizer-model's API key.")
@click.option("--strategy", "-s", type=click.Choice(["reflective", "fewshot", "search"]))
@click.option("--budget", "-b", type=click.IntRange(min=1), help="Model calls the optimisation may make.")
@click.option("--budget-usd", type=float, callback=_finite_usd, help="Also stop once this is spent (needs --prices).")
@click.option("--component", "components", multiple=True, help="A text to optimise: 'system' or a marked block.")
@click.option("--constraint", "constraints", multiple=True, help="A rule the optimiser must keep (repeatable).")
@click.option("--objective", "objectives", multiple=True, help="score (first), then cost, latency_p95 or tokens.")
@click.option("--space", help='Search space as JSON: {"temperature": {"type": "float", "low": 0, "high": 1}}.')
@click.option("--sampler", type=click.Choice(["tpe", "random", "grid"]))
@click.option("--trials", type=click.IntRange(min=1), help="Search: stop after this many trials.")
@click.option("--fewshot-method", type=click.Choice(["random", "bootstrap", "greedy"]))
@click.option("--demos", type=click.IntRange(1, 64), help="Few-shot: at most this many demos.")
@click.option("--minibatch", type=click.IntRange(min=1), help="Reflective: training samples per reflection.")
@click.option("--seed", type=int, help="Seed of the strategy's draws (the splits: optimize.splits.seed).")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), help="Significance level.")
@click.option("--output", "-o", "output_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("runs"))
@click.option("--resume", type=click.Path(exists=True, file_okay=False, path_type=Path), help="Resume a folder.")
@click.option("--concurrency", "-c", type=click.IntRange(1, 4096), default=16, show_default=True)
@click.option(
    "--cache/--no-cache",
    default=None,
    help="Read and write the response cache in candidate runs (default: off, unless the task says cache: true).",
)
@click.option("--max-attempts", type=click.IntRange(min=1), help="Attempts per model request (each one counts).")
@click.option("--prices", "prices_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--require-improvement", is_flag=True, help="Exit 1 unless the test split shows a significant gain.")
@click.option("--quiet", "-q", is_flag=True, help="No line per trial.")
def optimize_command(
    task: Path | None,
    model: str | None,
    base_url: str | None,
    api_key_env: str | None,
    optimizer_model: str | None,
    optimizer_base_url: str | None,
    optimizer_api_key_env: str | None,
    strategy: str | None,
    budget: int | None,
    budget_usd: float | None,
    components: tuple[str, ...],
    constraints: tuple[str, ...],
    objectives: tuple[str, ...],
    space: str | None,
    sampler: str | None,
    trials: int | None,
    fewshot_method: str | None,
    demos: int | None,
    minibatch: int | None,
    seed: int | None,
    alpha: float | None,
    output_dir: Path,
    resume: Path | None,
    concurrency: int,
    cache: bool | None,
    max_attempts: int | None,
    prices_file: Path | None,
    require_improvement: bool,
    quiet: bool,
) -> None:
    """Optimise TASK for a model: propose candidates, evaluate each as a run, compare the best on the test split."""
    from assay.optimize import aoptimize

    console = Console(stderr=True, soft_wrap=True)
    if (task is None) == (resume is None):
        raise click.UsageError("give a TASK file, or --resume FOLDER")
    run_settings: dict[str, Any] = {"concurrency": concurrency}
    if cache is not None:  # else the one cache switch's default: off unless the task asks for it
        run_settings["cache"] = cache
    if max_attempts is not None:
        run_settings["max_attempts"] = max_attempts
    if resume is not None:  # a resumed optimisation keeps its recorded settings unless one is given again
        run_settings = {k: v for k, v in run_settings.items() if _given(k)}
    if prices_file is not None:
        run_settings["prices"] = _prices(prices_file)
    overrides: dict[str, Any] = {
        "strategy": strategy,
        "components": list(components),
        "constraints": list(constraints),
        "objectives": list(objectives),
        "space": _json_arg(space, "--space"),
        "sampler": sampler,
        "trials": trials,
        "minibatch": minibatch,
        "seed": seed,
        "alpha": alpha,
    }
    if fewshot_method or demos:
        overrides["fewshot"] = {
            k: v for k, v in {"method": fewshot_method, "max_demos": demos}.items() if v is not None
        }
    try:
        task_model = _model(model, base_url, api_key_env, "--model")
        optimizer = _model(optimizer_model, optimizer_base_url, optimizer_api_key_env, "--optimizer-model")
        log = None if quiet else (lambda line: console.print(line, markup=False, highlight=False))
        if resume is not None:
            if any(v not in (None, []) for v in overrides.values()) or budget is not None or budget_usd is not None:
                raise click.UsageError("a resumed optimisation keeps its settings: give only --resume (and models)")
            coro = aoptimize(None, task_model, optimizer_model=optimizer, resume=resume, log=log,
                             run_settings=run_settings)  # fmt: skip
        else:
            coro = aoptimize(str(task), task_model, optimizer_model=optimizer, budget=budget, budget_usd=budget_usd,
                             output_dir=output_dir,
                             log=log, run_settings=run_settings, **overrides)  # fmt: skip
        result = asyncio.run(coro)
    except KeyboardInterrupt:
        console.print("[yellow]Interrupted.[/] Resume with: assay optimize --resume FOLDER")
        sys.exit(130)
    except AssayError as err:
        from assay.optimize.engine import OptimizeError

        console.print(f"[red]error:[/] {escape(str(err))}")
        sys.exit(1 if isinstance(err, OptimizeError) else 2)
    for warning in result.warnings:
        console.print(f"[bold yellow]warning:[/] {escape(warning)}")
    calls = result.calls
    console.print(
        f"model calls: {calls['used']} of {calls['budget']} (task model {calls['task_model']}, optimiser "
        f"{calls['optimizer']}); judges {calls['judge']}; final test {calls['final_test']}",
        markup=False,
    )
    console.print(("[green]" if result.improved else "[yellow]") + escape(result.summary) + "[/]")
    console.print(f"Optimisation folder: [bold]{escape(str(result.folder))}[/] (best task: best_task.yaml)")
    if require_improvement and not result.improved:
        sys.exit(1)
