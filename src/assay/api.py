"""The Python entry points: ``run`` / ``arun`` a task against a model, ``rescore`` a finished run."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from assay.errors import ConfigError
from assay.models.base import Model
from assay.runner.rundir import read_manifest
from assay.runner.session import RunOutcome, RunSettings, execute

if TYPE_CHECKING:
    from assay.results import Run
    from assay.tasks import Task

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion, also from inside a running event loop (Jupyter): then in a thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="assay-run") as pool:
        return pool.submit(asyncio.run, coro).result()


def load_tasks(tasks: Any) -> list[Task]:
    """Tasks from Task objects, YAML paths or config dicts (one or a list)."""
    from assay.tasks import Task, load_task

    items = list(tasks) if isinstance(tasks, list | tuple) else [tasks]
    if not items:
        raise ConfigError("no task given")
    return [t if isinstance(t, Task) else load_task(t) for t in items]


def resolve_model(model: Any, tasks: Sequence[Task]) -> Model:
    """The model given, or the task's own default model; a clear error when there is neither."""
    from assay.models.registry import load_model

    if model is None:
        spec = next((t.model for t in tasks if t.model), None)
        if spec is None:
            raise ConfigError("no model: pass model=… (or --model) or give the task a 'model:' section")
        return load_model(spec)
    return model if isinstance(model, Model) else load_model(model)


async def arun_outcome(
    tasks: Any = None, model: Any = None, *, resume: str | Path | None = None, **settings: Any
) -> RunOutcome:
    """Run tasks (or resume a run folder) and return how it ended, without loading the results."""
    if resume is not None:
        run_dir = Path(resume)
        manifest = read_manifest(run_dir)
        from assay.models.registry import load_model
        from assay.tasks import Task

        recorded = RunSettings.model_validate({**manifest.config, **settings})
        task_objs = [Task.from_config(info.config) for info in manifest.tasks]
        for task, info in zip(task_objs, manifest.tasks, strict=True):
            if task.hash != info.task_hash:
                raise ConfigError(
                    f"{run_dir}: task {info.name!r} no longer matches the run (hash {task.hash[:12]} "
                    f"vs {info.task_hash[:12]}); its dataset or config changed since the run started"
                )
        model_obj = model if isinstance(model, Model) else load_model(model or manifest.model)
        return await execute(task_objs, model_obj, recorded, run_dir=run_dir)
    task_objs = load_tasks(tasks)
    return await execute(task_objs, resolve_model(model, task_objs), RunSettings(**settings))


async def arun(tasks: Any = None, model: Any = None, *, resume: str | Path | None = None, **settings: Any) -> Run:
    """Run tasks against a model (or resume a run folder) and return the loaded results."""
    from assay.results import load_run

    outcome = await arun_outcome(tasks, model, resume=resume, **settings)
    return load_run(outcome.run_dir)


def run(tasks: Any = None, model: Any = None, *, resume: str | Path | None = None, **settings: Any) -> Run:
    """Synchronous :func:`arun`; works inside a running event loop (e.g. Jupyter) too."""
    return run_sync(arun(tasks, model, resume=resume, **settings))
