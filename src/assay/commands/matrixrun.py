"""``assay run`` with several ``--model NAME=SPEC`` or a task with ``variants:``: a matrix, one run per cell.

Kept out of :mod:`assay.commands.run` (which parses the options and hands over): the cells are planned here, run
by :mod:`assay.runner.matrix` through the one runner, and shown by :mod:`assay.report.matrix`.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.runner.exits import summary_line

if TYPE_CHECKING:
    from assay.runner.matrix import CellOutcome
    from assay.tasks import Task

_NAMED = re.compile(r"^([\w][\w.\-]*)=(.+)$", re.DOTALL)  # NAME=SPEC; a spec's own ':' keeps it out of NAME
# the command line's model options, by the key a model spec gives them under
MODEL_FLAGS = {"base_url": "--base-url", "api_key_env": "--api-key-env", "params": "--param"}


def _shown(value: str, name: str | None) -> str:
    """A ``--model`` value as an error message may quote it: whole, unless it may hold a credential (an
    ``api_key``, ``headers``), then by its name alone."""
    from assay.secrets import looks_secret

    if not looks_secret(value):
        return repr(value)
    return (f"{name}={{…}}" if name else "{…}") + " (its body not shown: it may hold credentials)"


def _json_spec(value: str, name: str | None) -> dict[str, Any]:
    """A JSON model spec: an object with the keys of a task's ``model:`` section, validated when it is loaded."""
    import json

    import click

    raw = value if name is None else f"{name}={value}"
    try:
        spec = json.loads(value)
    except json.JSONDecodeError as err:
        where = f"line {err.lineno} column {err.colno}" if "\n" in value.strip() else f"character {err.pos + 1}"
        raise click.BadParameter(
            f"{_shown(raw, name)}: not valid JSON ({err.msg} at {where} of the spec); a spec is provider:ARGUMENT or "
            'a JSON object such as \'{"provider": "openai", "model": "m", "base_url": "http://…/v1"}\'',
            param_hint="--model",
        ) from None
    if not isinstance(spec, dict):
        kind = {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(type(spec), "a number")
        raise click.BadParameter(
            f'{_shown(raw, name)}: a JSON model spec must be an object ({{"provider": …, …}}), got {kind}',
            param_hint="--model",
        )
    return spec


def parse_models(values: tuple[str, ...]) -> list[tuple[str | None, str | dict[str, Any]]]:
    """``--model`` values as (name or None, spec): ``NAME=SPEC`` names a model, a bare spec is named after it. A
    spec is ``provider:ARGUMENT`` or a JSON object (a value starting with ``{`` or ``[`` is read as JSON): the keys
    of a task's ``model:`` section, with the same meaning (the model registry validates both, naming a bad key).
    JSON that does not parse, or is not an object, is a usage error naming the value."""
    out: list[tuple[str | None, str | dict[str, Any]]] = []
    for value in values:
        m = _NAMED.match(value)
        name, spec = (m.group(1), m.group(2)) if m else (None, value)
        if spec.lstrip().startswith(("{", "[")):
            out.append((name, _json_spec(spec, name)))
        else:
            out.append((name, spec))
    return out


def _takes(spec: Any, key: str) -> bool:
    """Whether the provider ``spec`` names takes option ``key``; True when the provider is unknown or missing (the
    model loader then says what is wrong with the spec)."""
    from assay.errors import ConfigError
    from assay.models.registry import accepts_option, provider_class

    provider = (
        spec.get("provider") if isinstance(spec, dict) else spec.partition(":")[0] if isinstance(spec, str) else None
    )
    if not isinstance(provider, str):
        return True
    try:
        provider_class(provider)
    except ConfigError:
        return True
    return accepts_option(spec, key)


def model_options(specs: list[Any], options: dict[str, Any]) -> list[dict[str, Any]]:
    """The command line's model options (``--base-url``, ``--api-key-env``, ``--param``) for each spec: an option
    goes to a model whose provider takes it and whose spec gives none of its own (a JSON spec's ``base_url`` wins
    over ``--base-url``, and a Python agent gets no base URL); ``--param`` values are added to a spec's own
    ``params``, the spec's winning key by key. An option that applies to none of the models is a ConfigError (it
    would be ignored silently)."""
    from assay.errors import ConfigError

    given = {k: v for k, v in options.items() if k in MODEL_FLAGS and v is not None and v != {}}
    out: list[dict[str, Any]] = [{} for _ in specs]
    for key, value in given.items():
        used = False
        for i, spec in enumerate(specs):
            own = spec if isinstance(spec, dict) else {}
            if spec is None or not _takes(spec, key):
                continue
            if key == "params" and isinstance(own.get("params"), dict):
                out[i]["params"] = {**value, **own["params"]}
            elif key in own:
                continue  # the spec's own value; a bad one is named by the model loader
            else:
                out[i][key] = value
            used = True
        if not used:
            raise ConfigError(
                f"{MODEL_FLAGS[key]} applies to none of the models given: each gives its own {key!r} in its JSON "
                f"spec, or its provider takes none"
            )
    return out


def is_matrix(path: Path) -> bool:
    """True when ``path`` is a matrix folder (``--resume`` then resumes every cell)."""
    from assay.store.matrixindex import is_matrix as holds_index

    return holds_index(path)


def load_tasks(
    tasks: list[Any], lmeval: dict[str, Any] | None = None, limit: int | None = None, max_tests: int | None = None
) -> list[Task]:
    """The task files (or ``lm-eval:NAME``) read once, before deciding between one run and a matrix; ``lmeval``:
    lm-eval's options for its tasks (``--num-fewshot``, ``--apply-chat-template``, …), ``limit`` as lm-eval's,
    ``max_tests`` the cap on a promptfoo config's tests."""
    from assay.api import load_tasks as load

    return load(tasks, lmeval=lmeval, limit=limit, max_tests=max_tests)


def task_models(tasks: list[Task]) -> list[tuple[str | None, Any]]:
    """The named models the tasks list under ``models:`` (promptfoo's providers), in order; a name two tasks give
    different models is a ConfigError."""
    from assay.errors import ConfigError
    from assay.secrets import redact_spec

    found: dict[str, Any] = {}
    for task in tasks:
        for name, spec in (task.models or {}).items():
            if name in found and found[name] != spec:
                shown = redact_spec(found[name]), redact_spec(spec)  # a model's headers are never echoed
                raise ConfigError(f"tasks give two models the name {name!r}: {shown[0]!r} and {shown[1]!r}")
            found[name] = spec
    return list(found.items())


def wants_matrix(tasks: list[Task], models: list[tuple[str | None, Any]]) -> bool:
    """Several models (given, or the tasks' own ``models:`` when none is), or a task with prompt variants: a matrix
    rather than one run."""
    listed = models or task_models(tasks)
    return len(listed) > 1 or any(task.config.variants for task in tasks)


def maybe_matrix(
    tasks: list[Any] | None,
    resume: Path | None,
    models: list[tuple[str | None, Any]],
    settings: dict[str, Any],
    say: Any,
    retry_errors: bool,
    quiet: bool,
    fmt: str,
) -> int | None:
    """Run or resume a matrix when that is what was asked, and return its exit code; None for one run."""
    if resume is not None and is_matrix(resume):
        options: dict[str, Any] = {k: settings.pop(k) for k in ("base_url", "api_key_env", "params") if k in settings}
        return resume_matrix(
            resume, tasks or [], models, settings, options, say, retry_errors=retry_errors, quiet=quiet, fmt=fmt
        )
    if resume is None and tasks is not None and wants_matrix(tasks, models):
        return run_matrix(tasks, models or task_models(tasks), settings, say, quiet=quiet, fmt=fmt)
    return None


def _default_name(model: Any) -> str:
    from assay.models.base import display_name

    text = display_name(model.describe()).rsplit("/", 1)[-1]
    return re.sub(r"[^\w.\-]+", "-", text).strip("-") or "model"


def _spec_label(spec: Any) -> str:
    """A model spec as an error names it: ``openai:qwen``, or a JSON spec by its provider and model."""
    if isinstance(spec, dict):
        return "{" + ", ".join(f"{k}: {spec[k]!r}" for k in ("provider", "model", "target") if k in spec) + "}"
    return str(spec)


def _print_cell(done: CellOutcome, say: Any) -> None:
    if done.outcome is None:
        say.print(f"[red]cell {say.escape(done.cell.name)}:[/] {say.escape(done.error or '')}",
                  f"cell {done.cell.name}: error: {done.error}")  # fmt: skip
        return
    line = summary_line(done.outcome)
    say.print(say.escape(line), line)
    for label, text in (("first error", done.outcome.first_error),
                        ("first evaluator error", done.outcome.first_evaluator_error)):  # fmt: skip
        if text:
            say.print(f"[yellow]{label}:[/] {say.escape(text)}", f"{label}: {text}")


def _finish(matrix_dir: Path, outcomes: list[CellOutcome], say: Any, quiet: bool, fmt: str) -> int:
    from assay.runner.matrix import matrix_exit_code

    if not quiet and all(o.outcome is not None and o.outcome.status == "finished" for o in outcomes):
        from assay.commands.matrixreport import print_matrix

        print_matrix(matrix_dir, fmt)
    folder = str(matrix_dir)
    say.print(f"Matrix folder: [bold]{say.escape(folder)}[/]", f"Matrix folder: {folder}")
    code = matrix_exit_code(outcomes)
    if code:
        say.print(f"[yellow]resume with:[/] assay run --resume {say.escape(folder)}",
                  f"resume with: assay run --resume {folder}")  # fmt: skip
    return code


def run_matrix(
    tasks: list[Task],
    models: list[tuple[str | None, Any]],
    settings: dict[str, Any],
    say: Any,
    *,
    quiet: bool,
    fmt: str,
) -> int:
    """Plan, create and run every cell; the exit code is the most severe of the cells' (runner.matrix)."""
    from assay.api import _settings, resolve_model, split_options
    from assay.errors import ConfigError
    from assay.runner.matrix import cell_settings, create_matrix, plan_cells, run_cells
    from assay.runner.session import execute
    from assay.tasks.variants import expand_variants

    name = settings.pop("name", None)
    values, options = split_options(settings)
    run_settings = _settings(values)
    built = []
    for (given, spec), own in zip(models, model_options([spec for _, spec in models], options), strict=True):
        try:
            model = resolve_model(spec, tasks, timeout_s=run_settings.timeout_s, options=own)
            model.check()  # e.g. a hosted API without its key: said now, before any cell's folder exists
        except ConfigError as err:
            raise ConfigError(f"model {given or _spec_label(spec)}: {err}") from None
        built.append((given or _default_name(model), model))
    plans = plan_cells(built, expand_variants(tasks))
    by_name = {plan.name: plan for plan in plans}
    matrix_dir, index = create_matrix(plans, run_settings, name)
    say.print(f"Matrix of {len(plans)} cells: [bold]{say.escape(str(matrix_dir))}[/]",
              f"Matrix of {len(plans)} cells: {matrix_dir}")  # fmt: skip

    async def run_cell(cell: Any, cell_dir: Path) -> Any:
        plan = by_name[cell.name]
        return await execute(plan.tasks, plan.model, cell_settings(run_settings, plan), run_dir=cell_dir)

    outcomes = asyncio.run(run_cells(index, matrix_dir, run_cell, lambda done: _print_cell(done, say)))
    return _finish(matrix_dir, outcomes, say, quiet, fmt)


def resume_matrix(
    matrix_dir: Path,
    tasks: list[Path | str],
    models: list[tuple[str | None, Any]],
    settings: dict[str, Any],
    options: dict[str, Any],
    say: Any,
    *,
    retry_errors: bool,
    quiet: bool,
    fmt: str,
) -> int:
    """Resume every cell of a matrix folder as ``assay run --resume CELL`` would (finished samples are kept and
    nothing they hold is asked again); ``--model NAME=SPEC`` gives a model again by its name in the matrix, with
    ``options`` (``--base-url``, ``--api-key-env``, ``--param``)."""
    from assay.api import arun_outcome, load_tasks
    from assay.errors import ConfigError
    from assay.runner.matrix import run_cells
    from assay.store.matrixindex import read_matrix
    from assay.tasks.variants import expand_variants

    index = read_matrix(matrix_dir)
    given: dict[str, Any] = {}
    for name, spec in models:
        if name is None or name not in index.models:
            raise ConfigError(
                f"resuming a matrix, give each model by its name in it ({', '.join(index.models)}): --model NAME=SPEC"
            )
        given[name] = spec
    own = dict(zip(given, model_options(list(given.values()), options), strict=True)) if given else {}
    by_variant = {variant: cell_tasks for variant, cell_tasks in expand_variants(load_tasks(tasks))} if tasks else {}

    async def run_cell(cell: Any, cell_dir: Path) -> Any:
        spec = given.get(cell.model)  # the model's options (--base-url, --param) go with a model given again
        extra = own.get(cell.model, {})
        cell_tasks = by_variant.get(cell.variant) if tasks else None
        return await arun_outcome(cell_tasks, spec, resume=cell_dir, retry_errors=retry_errors, **settings, **extra)

    outcomes = asyncio.run(run_cells(index, matrix_dir, run_cell, lambda done: _print_cell(done, say)))
    return _finish(matrix_dir, outcomes, say, quiet, fmt)
