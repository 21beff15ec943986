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


def parse_models(values: tuple[str, ...]) -> list[tuple[str | None, str]]:
    """``--model`` values as (name or None, spec): ``NAME=SPEC`` names a model, a bare spec is named after it."""
    out: list[tuple[str | None, str]] = []
    for value in values:
        m = _NAMED.match(value)
        out.append((m.group(1), m.group(2)) if m else (None, value))
    return out


def is_matrix(path: Path) -> bool:
    """True when ``path`` is a matrix folder (``--resume`` then resumes every cell)."""
    from assay.store.matrixindex import is_matrix as holds_index

    return holds_index(path)


def load_tasks(tasks: list[Any], lmeval: dict[str, Any] | None = None, limit: int | None = None) -> list[Task]:
    """The task files (or ``lm-eval:NAME``) read once, before deciding between one run and a matrix; ``lmeval``:
    lm-eval's options for its tasks (``--num-fewshot``, ``--apply-chat-template``, …), ``limit`` as lm-eval's."""
    from assay.api import load_tasks as load

    return load(tasks, lmeval=lmeval, limit=limit)


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
    from assay.runner.matrix import cell_settings, create_matrix, plan_cells, run_cells
    from assay.runner.session import execute
    from assay.tasks.variants import expand_variants

    name = settings.pop("name", None)
    values, options = split_options(settings)
    run_settings = _settings(values)
    built = []
    for given, spec in models:
        model = resolve_model(spec, tasks, timeout_s=run_settings.timeout_s, options=options)
        model.check()  # e.g. a hosted API without its key: said now, before any cell's folder exists
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
    by_variant = {variant: cell_tasks for variant, cell_tasks in expand_variants(load_tasks(tasks))} if tasks else {}

    async def run_cell(cell: Any, cell_dir: Path) -> Any:
        spec = given.get(cell.model)  # the model's options (--base-url, --param) go with a model given again
        extra = options if spec is not None else {}
        cell_tasks = by_variant.get(cell.variant) if tasks else None
        return await arun_outcome(cell_tasks, spec, resume=cell_dir, retry_errors=retry_errors, **settings, **extra)

    outcomes = asyncio.run(run_cells(index, matrix_dir, run_cell, lambda done: _print_cell(done, say)))
    return _finish(matrix_dir, outcomes, say, quiet, fmt)
