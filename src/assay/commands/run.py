"""``assay run``."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

from assay.commands.lmevalopts import lmeval_options
from assay.errors import AssayError
from assay.runner.exits import (
    DEFAULT_MAX_ERROR_RATE,
    DEFAULT_MAX_RESPONSE_CHARS,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    exit_code,
    summary_line,
)

if TYPE_CHECKING:
    from rich.console import Console as RichConsole


def Console(*args: Any, **kwargs: Any) -> RichConsole:
    from rich.console import Console as RichConsole

    return RichConsole(*args, **kwargs)


def escape(text: str) -> str:
    from rich.markup import escape as rich_escape

    return rich_escape(text)


class _Messages:
    """The run's messages on stderr: with rich's colours on a terminal, as plain lines otherwise, so a CI or quiet
    run never imports rich (start-up time). ``markup`` is rich markup; plain output drops the tags."""

    def __init__(self) -> None:
        self._console: RichConsole | None = None
        self.terminal = sys.stderr.isatty()

    def escape(self, text: str) -> str:
        """``text`` made literal inside markup; markup is shown on a terminal only, so elsewhere it is kept as it is
        (rich is not imported for a message nobody sees as markup)."""
        return escape(text) if self.terminal else text

    def print(self, markup: str, plain: str) -> None:
        if self.terminal:
            if self._console is None:
                self._console = Console(stderr=True, soft_wrap=True)
            self._console.print(markup)
        else:
            click.echo(plain, err=True)


def _params(values: tuple[str, ...]) -> dict[str, Any]:
    """``--param key=value`` pairs; values are parsed as JSON when they can be (numbers, booleans, lists)."""
    out: dict[str, Any] = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected key=value, got {item!r}", param_hint="--param")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def _prices(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    try:
        prices = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise click.BadParameter(f"{path}:{err.lineno}: invalid JSON: {err.msg}", param_hint="--prices") from None
    if not isinstance(prices, dict):
        raise click.BadParameter(f"{path}: expected an object of model -> prices", param_hint="--prices")
    return prices


def _spec_arg(value: str | None) -> str | dict[str, Any] | None:
    """A model spec from the command line: a string like ``openai:NAME``, or a JSON object."""
    if value is None or not value.lstrip().startswith("{"):
        return value
    try:
        spec = json.loads(value)
    except json.JSONDecodeError as err:
        raise click.BadParameter(f"invalid JSON model spec: {err}") from None
    if not isinstance(spec, dict):
        raise click.BadParameter("a JSON model spec must be an object")
    return spec


# how a resumed run executes may change; what it evaluates and how results are computed may not
_RESUME_RUNTIME = {
    "concurrency": "concurrency",
    "timeout_s": "timeout_s",
    "max_attempts": "max_attempts",
    "retry_deadline": "retry_deadline_s",
    "retry_budget": "retry_budget",
    "max_error_rate": "max_error_rate",
    "cache": "cache",
    "cache_dir": "cache_path",
    "max_response_chars": "max_response_chars",
    "executor": "executor",
    "processes": "processes",
    "name": "name",
    "budget_usd": "budget_usd",
    "max_environments": "max_environments",
}
_RESUME_FIXED = (
    "limit", "output_dir", "error_policy", "bootstrap_iters", "seed", "cluster_key", "repeat_reduction",
    "prices_file", "feedback_model", "decide", "decide_alpha", "decide_baseline",
)  # fmt: skip


def _given(name: str) -> bool:
    """True when option ``name`` was set on the command line or by its environment variable."""
    source = click.get_current_context().get_parameter_source(name)
    return source in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


def _resume_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """Only the runtime options given explicitly: the rest keep the values recorded when the run started."""
    fixed = [name for name in _RESUME_FIXED if _given(name)]
    if fixed:
        flags = ", ".join("--" + name.removesuffix("_file").removesuffix("_dir").replace("_", "-") for name in fixed)
        raise click.UsageError(
            f"{flags}: a resumed run keeps the settings it started with; only how it runs "
            "(--concurrency, --timeout, --max-attempts, --retry-deadline, --retry-budget, --max-error-rate, "
            "--max-response-chars, cache, --executor, --ray-*, --processes) can change"
        )
    out = {"progress": settings["progress"]}
    for option, key in _RESUME_RUNTIME.items():
        if _given(option):
            out[key] = settings[key]
    if "ray" in settings:
        out["ray"] = settings["ray"]
    return out


def ray_options(
    address: str | None,
    workers: int | None,
    num_cpus: float | None,
    num_gpus: float | None,
    shard_size: int | None = None,
    start_timeout_s: float | None = None,
) -> dict[str, Any]:
    """The ``--ray-*`` options given, as RunSettings' ``ray`` section (empty when none is given)."""
    given = {
        "address": address,
        "workers": workers,
        "num_cpus": num_cpus,
        "num_gpus": num_gpus,
        "shard_size": shard_size,
        "start_timeout_s": start_timeout_s,
    }
    return {key: value for key, value in given.items() if value is not None}


F = TypeVar("F", bound=Callable[..., Any])

_EXECUTOR_OPTIONS = (
    click.option(
        "--executor",
        type=click.Choice(["local", "ray"]),
        default="local",
        show_default=True,
        help="Who runs the work: this process, or a Ray cluster (pip install 'assay[ray]').",
    ),
    click.option(
        "--ray-address",
        help="Ray cluster to join: auto, HOST:PORT or ray://HOST:10001 (default: $RAY_ADDRESS, else a local Ray).",
    ),
    click.option("--ray-workers", type=click.IntRange(min=1), help="Ray worker actors (default: one per CPU)."),
    click.option("--ray-num-cpus", type=click.FloatRange(min=0), help="CPUs each Ray worker reserves (default 1)."),
    click.option("--ray-num-gpus", type=click.FloatRange(min=0), help="GPUs each Ray worker reserves (default 0)."),
    click.option(
        "--ray-shard-size",
        type=click.IntRange(min=1),
        help="Samples sent to a Ray worker at a time (default: its share of --concurrency, at most 64, for model "
        "calls; 1,024 for offline scoring).",
    ),
    click.option(
        "--ray-start-timeout",
        type=click.FloatRange(min=0, min_open=True),
        help="Seconds each Ray worker may take to start, or to come back once lost (default 60); the run goes on "
        "with the workers that did, and stops (samples kept pending) when none did.",
    ),
    click.option(
        "--processes",
        type=click.IntRange(min=1),
        help="Processes scoring offline work (a predictions run, assay score) with the local executor, and reading "
        "a large samples.jsonl for the results (default: one per CPU, at most 8; 1: this process alone).",
    ),
)


def executor_options(command: F) -> F:
    """``--executor`` and the ``--ray-*`` options, shared by ``assay run`` and ``assay score``."""
    for option in reversed(_EXECUTOR_OPTIONS):
        command = option(command)
    return command


def _print_results(run_dir: Path, fmt: str, console: RichConsole | _Messages) -> None:
    from assay.report.table import render_table
    from assay.results import load_run

    out = render_table(load_run(run_dir), fmt=fmt)
    if isinstance(out, str):
        click.echo(out)
    else:
        Console().print(out)


class _TaskSource(click.ParamType):
    """A task file that exists, or ``lm-eval:NAME`` (a task of the installed lm-eval)."""

    name = "TASK"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value.startswith("lm-eval:"):
            return value
        return click.Path(exists=True, dir_okay=False, path_type=Path).convert(value, param, ctx)


@click.command("run")
@click.argument("tasks", nargs=-1, type=_TaskSource())
@click.option(
    "--task-format",
    type=click.Choice(["auto", "lm-eval"]),
    default="auto",
    show_default=True,
    help="Read the task files as lm-eval task YAMLs (auto: recognised by their keys; or give lm-eval:NAME).",
)
@click.option(
    "--model",
    "-m",
    "models",
    multiple=True,
    help="Model: openai:NAME, python:pkg.mod:fn, predictions:FILE.jsonl, or a JSON object with the keys of a "
    'task\'s model: section (\'{"provider": "openai", "model": "m", "base_url": "http://…/v1", "headers": {…}}\'); '
    "NAME=SPEC names it. Repeat it for a matrix: every model (with every prompt variant of the task) in one run "
    "folder each, plus matrix.json.",
)
@click.option(
    "--base-url",
    help="Base URL of an OpenAI-compatible server (e.g. http://localhost:8000/v1), for each --model whose spec "
    "gives no base_url of its own (and whose provider takes one).",
)
@click.option(
    "--api-key-env",
    help="Environment variable that holds the API key (default OPENAI_API_KEY), for each --model whose spec gives "
    "no api_key_env of its own.",
)
@click.option(
    "--param",
    "params",
    multiple=True,
    help="Generation parameter key=value (repeatable), for every --model that takes params; a JSON spec's own "
    "params win key by key.",
)
@click.option("--limit", type=click.IntRange(min=1), help="Evaluate only the first N samples of each task.")
@click.option(
    "--max-tests",
    type=click.IntRange(min=1),
    help="promptfoo configs: refuse one that expands to more than N tests, before anything is built "
    "(default: $ASSAY_PROMPTFOO_MAX_TESTS, else 100,000).",
)
@click.option("--concurrency", "-c", type=click.IntRange(1, 4096), default=32, show_default=True)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds one request may take (each retry has its own). Default: the model's timeout_s, else 60.",
)
@click.option(
    "--max-attempts",
    type=click.IntRange(min=1),
    default=8,  # assay.models.retry.DEFAULT_MAX_ATTEMPTS (not imported: the CLI starts light)
    show_default=True,
    help="Attempts per request: the first and its retries (5xx and dropped connections wait 25 ms doubling to 1 s; "
    "a 429 waits its Retry-After exactly, else 1 s doubling to 30 s).",
)
@click.option(
    "--retry-deadline",
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds after a request's first attempt past which no retry starts (it fails, saying so). Default: the "
    "longer of 120 and two --timeout.",
)
@click.option(
    "--retry-budget",
    type=click.FloatRange(min=0),
    help="Retries (of errors other than 429s) may add at most this share to the requests sent, plus 100: when "
    "the server fails more, requests fail at once instead of multiplying the load. Default: 0.5.",
)
@click.option(
    "--max-error-rate",
    type=click.FloatRange(0, 1),
    default=DEFAULT_MAX_ERROR_RATE,
    show_default=True,
    help="Fail the run (exit 1) past this share of failed samples, model or evaluator errors (1: never).",
)
@click.option(
    "--cache/--no-cache",
    default=None,
    help="Answer repeated requests from the SQLite response cache (off unless given or a task says cache: true).",
)
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), envvar="ASSAY_CACHE_DIR")
@click.option(
    "--max-response-chars",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_RESPONSE_CHARS,
    show_default=True,
    help="Characters of each answer kept in samples.jsonl (scoring sees it whole; the full length is recorded).",
)
@click.option(
    "--output-dir",
    "--output",
    "-o",
    "output_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("runs"),
    show_default=True,
    help="Where run folders are created (output_dir= in Python).",
)
@click.option(
    "--name",
    help="A name for the run, stored in run.json: reports, compare and the HTML page label the run by it "
    "(default: its folder name).",
)
@click.option(
    "--resume",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Resume a run folder with its recorded tasks, model and settings; only --concurrency, --timeout, "
    "--max-attempts, --retry-deadline, --retry-budget, --max-error-rate, the cache options, --executor and "
    "--ray-* may change. Task files given with it must be the run's own (needed when run.json holds a task "
    "without the credentials of a URL in it).",
)
@click.option(
    "--retry-errors",
    is_flag=True,
    help="With --resume: ask again for the samples whose model requests failed (e.g. after an outage).",
)
@click.option("--error-policy", type=click.Choice(["exclude", "as_zero", "fail"]), default="exclude", show_default=True)
@click.option("--bootstrap-iters", type=click.IntRange(min=0), default=10_000, show_default=True)
@click.option("--seed", type=int, default=1234, show_default=True)
@click.option("--cluster-key", help="Metadata key shared by related samples (clustered standard errors).")
@click.option(
    "--repeat-reduction",
    type=click.Choice(["mean", "max", "min", "majority"]),
    default="mean",
    show_default=True,
    help="How a sample's repeats become one score.",
)
@click.option(
    "--prices",
    "prices_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help='JSON file of prices: {"model": {"input": usd_per_1M_tokens, "output": usd_per_1M_tokens}}.',
)
@click.option(
    "--feedback-model",
    help="A model that writes feedback for failing verdicts: a spec as --model, or JSON such as "
    '\'{"provider": "openai", "model": "m", "base_url": "http://…/v1"}\'.',
)
@click.option(
    "--max-environments",
    type=click.IntRange(1, 4096),
    help="Agent environments (a task's environment:) alive at once; more samples wait for one  [default: 32]",
)
@click.option(
    "--budget-usd",
    type=click.FloatRange(0, min_open=True),
    help="The most the run may spend, in US dollars at --prices: refused when estimated above it, stopped (exit 3, "
    "resumable with more) when its measured spend reaches it or a provider reports no usage.",
)
@click.option(
    "--decide",
    metavar="CLAIM",
    help="Stop as soon as CLAIM is decided at --decide-alpha: METRIC>=VALUE (e.g. exact_match>=0.8), or "
    "METRIC>=baseline-D with --decide-baseline (not worse by more than D). Samples run in a random order; exit 0 "
    "holds, 1 fails, 4 undecided at the data's end.",
)
@click.option("--decide-alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05,
              show_default=True, help="--decide's error rate (each wrong decision at most half of it).")  # fmt: skip
@click.option("--decide-baseline", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="The run a METRIC>=baseline-D claim pairs with, by sample id.")  # fmt: skip
@executor_options
@lmeval_options
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no table (for CI logs).")
@click.option("--format", "fmt", type=click.Choice(["rich", "markdown", "json"]), default="rich", show_default=True)
def run_command(
    tasks: tuple[Path | str, ...],
    task_format: str,
    models: tuple[str, ...],
    base_url: str | None,
    api_key_env: str | None,
    params: tuple[str, ...],
    limit: int | None,
    max_tests: int | None,
    concurrency: int,
    timeout_s: float | None,
    max_attempts: int,
    retry_deadline: float | None,
    retry_budget: float | None,
    max_error_rate: float | None,
    cache: bool | None,
    cache_dir: Path | None,
    max_response_chars: int,
    output_dir: Path,
    name: str | None,
    resume: Path | None,
    retry_errors: bool,
    error_policy: str,
    bootstrap_iters: int,
    seed: int,
    cluster_key: str | None,
    repeat_reduction: str,
    prices_file: Path | None,
    feedback_model: str | None,
    executor: str,
    ray_address: str | None,
    ray_workers: int | None,
    ray_num_cpus: float | None,
    ray_num_gpus: float | None,
    ray_shard_size: int | None,
    ray_start_timeout: float | None,
    processes: int | None,
    max_environments: int | None,
    budget_usd: float | None,
    decide: str | None,
    decide_alpha: float,
    decide_baseline: Path | None,
    lmeval: dict[str, Any] | None,
    quiet: bool,
    fmt: str,
) -> None:
    """Run TASKS (YAML files, or lm-eval tasks) against a model and write a run folder; or --resume one."""
    from assay.api import arun_outcome, in_task_format

    say = _Messages()  # messages stay one line each in CI logs
    if not tasks and resume is None:
        raise click.UsageError("give at least one task file, or --resume RUN_DIR")
    tasks = tuple(in_task_format(tasks, task_format))  # lm-eval: read as lm-eval task YAMLs whatever their keys
    if retry_errors and resume is None:
        raise click.UsageError("--retry-errors goes with --resume RUN_DIR")
    settings: dict[str, Any] = {
        "concurrency": concurrency,
        "timeout_s": timeout_s,
        "max_attempts": max_attempts,
        **({"retry_deadline_s": retry_deadline} if retry_deadline is not None else {}),
        **({"retry_budget": retry_budget} if retry_budget is not None else {}),
        "max_error_rate": max_error_rate,
        "cache": cache,
        "cache_path": (cache_dir / "responses.sqlite") if cache_dir else None,
        "max_response_chars": max_response_chars,
        "progress": False if quiet else None,
        "executor": executor,
        "processes": processes,
        "name": name,
        **({"budget_usd": budget_usd} if budget_usd is not None else {}),
        **({"max_environments": max_environments} if max_environments is not None else {}),
    }
    ray = ray_options(ray_address, ray_workers, ray_num_cpus, ray_num_gpus, ray_shard_size, ray_start_timeout)
    if ray:
        settings["ray"] = ray
    if resume is None:
        settings.update(
            output_dir=output_dir,
            limit=limit,
            error_policy=error_policy,
            bootstrap_iters=bootstrap_iters,
            seed=seed,
            cluster_key=cluster_key,
            repeat_reduction=repeat_reduction,
            prices=_prices(prices_file),
            feedback_model=_spec_arg(feedback_model),
            **({"decide": decide, "decide_alpha": decide_alpha, "decide_baseline": decide_baseline} if decide else {}),
        )
    elif lmeval:
        raise click.UsageError("a resumed run's lm-eval tasks keep the lm-eval options they started with")
    else:
        settings = _resume_settings(settings)
    try:
        given: dict[str, Any] = {"base_url": base_url, "api_key_env": api_key_env, "params": _params(params)}
        if not models and any(given.values()):
            raise click.UsageError("--base-url, --api-key-env and --param need --model")
        from assay.commands import matrixrun

        named = matrixrun.parse_models(models)
        task_objs = (
            matrixrun.load_tasks(list(tasks), lmeval, limit, max_tests) if resume is None else list(tasks) or None
        )
        code = matrixrun.maybe_matrix(task_objs, resume, named, {**settings, **given}, say, retry_errors, quiet, fmt)
        if code is not None:  # several models, or prompt variants: one run folder per cell, and matrix.json
            sys.exit(code)
        label, spec = named[0] if named else (None, None)
        if label is not None and resume is None and settings.get("name") is None:
            settings["name"] = label  # --model NAME=SPEC names the run
        if spec is not None:  # a JSON spec's own base_url (api_key_env, params) wins over the command line's
            given = {key: None for key in given} | matrixrun.model_options([spec], given)[0]
        outcome = asyncio.run(
            arun_outcome(task_objs, spec, resume=resume, retry_errors=retry_errors, **settings, **given)
        )
    except KeyboardInterrupt:
        say.print("[yellow]Interrupted.[/]", "Interrupted.")  # the run has said where its folder is, how to resume
        sys.exit(EXIT_INTERRUPTED)
    except AssayError as err:
        say.print(f"[red]error:[/] {say.escape(str(err))}", f"error: {err}")
        sys.exit(EXIT_USAGE)
    if outcome.status == "finished" and not quiet:
        _print_results(outcome.run_dir, fmt, say)
    line = summary_line(outcome)
    say.print(say.escape(line), line)
    if outcome.decision:
        decided = outcome.decision["sentence"]
        say.print(say.escape(decided), decided)
    if outcome.first_error:
        say.print(f"[yellow]first error:[/] {say.escape(outcome.first_error)}", f"first error: {outcome.first_error}")
    if outcome.first_evaluator_error:
        text = outcome.first_evaluator_error
        say.print(f"[yellow]first evaluator error:[/] {say.escape(text)}", f"first evaluator error: {text}")
    if outcome.stopped_by is None:
        folder = str(outcome.run_dir)
        say.print(f"Run folder: [bold]{say.escape(folder)}[/]", f"Run folder: {folder}")
    sys.exit(exit_code(outcome))
