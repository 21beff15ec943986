"""The Python entry points: ``run`` / ``arun`` a task against a model, ``rescore`` a finished run."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from assay.errors import AssayError, ConfigError
from assay.models.base import Model
from assay.runner.rundir import read_manifest
from assay.runner.session import RUNTIME_SETTINGS, RunOutcome, RunSettings, execute
from assay.secrets import REDACTED

if TYPE_CHECKING:
    from assay.record import RunManifest
    from assay.results import Run
    from assay.tasks import Task

T = TypeVar("T")

# keywords people reach for, with the setting they mean (the CLI's --output is output_dir here)
_SYNONYMS = {"output": "output_dir", "out": "output_dir", "timeout": "timeout_s", "cache_dir": "cache_path"}


class RunFailed(AssayError):
    """A run did not succeed: too many failed samples, a model that refused access, a full disk.

    ``outcome`` says how it ended (``outcome.run_dir`` holds what was done; ``outcome.resume_command`` continues it).
    """

    def __init__(self, outcome: RunOutcome) -> None:
        super().__init__(f"{outcome.message} (run folder: {outcome.run_dir})")
        self.outcome = outcome


def check_settings(settings: dict[str, Any], *, call: str = "assay.run") -> None:
    """Unknown keyword arguments are a ConfigError naming them, suggesting the intended one, listing the valid ones."""
    from assay.tasks.loader import did_you_mean

    known = sorted(RunSettings.model_fields)
    unknown = [name for name in settings if name not in RunSettings.model_fields]
    if not unknown:
        return
    name = unknown[0]
    hint = f" (did you mean {_SYNONYMS[name]!r}?)" if name in _SYNONYMS else did_you_mean(name, known)
    raise ConfigError(
        f"{call}() got an unknown keyword argument {name!r}{hint}; valid settings: resume, retry_errors, "
        + ", ".join(known)
    )


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


def resolve_model(model: Any, tasks: Sequence[Task], *, timeout_s: float | None = None) -> Model:
    """The model given, or the tasks' own default model; a clear error when there is none, or two tasks disagree.

    An explicit ``timeout_s`` is passed to a model built from a spec whose provider takes one (``openai``), so the
    model's own HTTP timeout never cuts a request shorter than the run allows.
    """
    from assay.models.registry import accepts_option, load_model

    if isinstance(model, Model):
        return model
    spec, owner = model, None
    if spec is None:
        owners = [t for t in tasks if t.model]
        if not owners:
            raise ConfigError("no model: pass model=… (or --model) or give the task a 'model:' section")
        owner = owners[0]
        spec = owner.model
        other = next((t.name for t in owners if t.model != spec), None)
        if other is not None:
            raise ConfigError(
                f"tasks {owner.name!r} and {other!r} name different models in their 'model:' sections; "
                "one run evaluates one model: pass model=… (or --model)"
            )
    overrides = {"timeout_s": timeout_s} if timeout_s is not None and accepts_option(spec, "timeout_s") else {}
    try:
        if isinstance(spec, dict) and overrides:
            return load_model({**spec, **overrides})
        return load_model(spec, **overrides)
    except ConfigError as err:
        if owner is None:
            raise
        raise owner.config_error(("model",), str(err)) from None


def _resume_model(model: Any, recorded: dict[str, Any], run_dir: Path, timeout_s: float | None) -> Model:
    """The model of a resumed run: the one recorded in run.json, or the one given, which must be the same model."""
    from assay.models.base import display_name

    if model is None:
        if REDACTED in json.dumps(recorded, default=str):
            raise ConfigError(
                f"{run_dir}/run.json records the model without its credentials (a key in the URL or in a parameter "
                "is never written); give the model again to resume: --model, --base-url and --param as at the start"
            )
        return resolve_model(recorded, [], timeout_s=timeout_s)
    model_obj = resolve_model(model, [], timeout_s=timeout_s)
    given = model_obj.describe()
    same = given.get("provider") == recorded.get("provider") and display_name(given) == display_name(recorded)
    if not same:
        raise ConfigError(
            f"{run_dir} was run with model {recorded.get('provider')}:{display_name(recorded)}; resuming it with "
            f"{given.get('provider')}:{display_name(given)} would mix two models' answers in one run"
        )
    return model_obj


def resume_tasks(tasks: Any, manifest: RunManifest, run_dir: Path) -> list[Task]:
    """The tasks of a resumed run: each rebuilt from its config in run.json, or given again (a task file, for a
    config recorded without its credentials, e.g. a key in a judge's URL); either way it must be the task the run
    started with (same hash)."""
    from assay.tasks import Task

    given = {task.name: task for task in load_tasks(tasks)} if tasks is not None else {}
    names = [info.name for info in manifest.tasks]
    extra = sorted(set(given) - set(names))
    if extra:
        raise ConfigError(f"{run_dir} has no task named {extra[0]!r}; its tasks: {', '.join(names)}")
    out: list[Task] = []
    for info in manifest.tasks:
        task = given.get(info.name)
        if task is None:
            if info.redacted:
                raise ConfigError(
                    f"{run_dir}/run.json records task {info.name!r} without the credentials in "
                    f"{', '.join(info.redacted)} (a key in a URL is never written); give the task file again to "
                    f"resume: assay run --resume {run_dir} TASK.yaml (tasks=… in Python)"
                )
            task = Task.from_config(info.config)
        if task.hash != info.task_hash:
            why = (
                "the task file given differs from the one the run started with"
                if info.name in given
                else "its dataset or config changed since the run started"
            )
            raise ConfigError(
                f"{run_dir}: task {info.name!r} no longer matches the run (hash {task.hash[:12]} "
                f"vs {info.task_hash[:12]}); {why}"
            )
        out.append(task)
    return out


async def arun_outcome(
    tasks: Any = None,
    model: Any = None,
    *,
    resume: str | Path | None = None,
    retry_errors: bool = False,
    **settings: Any,
) -> RunOutcome:
    """Run tasks (or resume a run folder) and return how it ended, without loading the results.

    On resume, the recorded settings apply; ``settings`` given here override how the run executes (concurrency,
    timeout, cache, …). ``model`` may be omitted (the recorded model is rebuilt) or given again (e.g. an object
    that run.json cannot rebuild), but it must be the model the run started with; likewise ``tasks`` (needed for a
    task that run.json records without its credentials, e.g. a key in a judge's URL). An unknown keyword is a
    ConfigError listing the valid ones.
    """
    check_settings(settings)
    if resume is not None:
        run_dir = Path(resume)
        manifest = read_manifest(run_dir)
        fixed = sorted(set(settings) - RUNTIME_SETTINGS)
        if fixed:
            raise ConfigError(
                f"a resumed run keeps the settings it started with; only {', '.join(sorted(RUNTIME_SETTINGS))} "
                f"can change (got {', '.join(fixed)})"
            )
        known = {k: v for k, v in manifest.config.items() if k in RunSettings.model_fields}
        recorded = RunSettings.model_validate({**known, **settings})
        task_objs = resume_tasks(tasks, manifest, run_dir)
        model_obj = _resume_model(model, manifest.model, run_dir, settings.get("timeout_s"))
        return await execute(task_objs, model_obj, recorded, run_dir=run_dir, retry_errors=retry_errors)
    if retry_errors:
        raise ConfigError("retry_errors applies to a resumed run: pass resume=RUN_DIR")
    task_objs = load_tasks(tasks)
    run_settings = RunSettings(**settings)
    return await execute(task_objs, resolve_model(model, task_objs, timeout_s=run_settings.timeout_s), run_settings)


async def arun(tasks: Any = None, model: Any = None, *, resume: str | Path | None = None, **settings: Any) -> Run:
    """Run tasks against a model (or resume a run folder) and return the loaded results.

    Raises :class:`RunFailed` when the run did not succeed: more failed samples than ``max_error_rate`` (10 % by
    default; ``max_error_rate=None`` never fails), a model that refused access, a full disk.
    """
    from assay.results import load_run

    outcome = await arun_outcome(tasks, model, resume=resume, **settings)
    if outcome.stopped_by is not None:
        raise RunFailed(outcome)
    return load_run(outcome.run_dir)


def run(tasks: Any = None, model: Any = None, *, resume: str | Path | None = None, **settings: Any) -> Run:
    """Synchronous :func:`arun`; works inside a running event loop (e.g. Jupyter) too."""
    return run_sync(arun(tasks, model, resume=resume, **settings))
