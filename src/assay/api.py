"""The Python entry points: ``run`` / ``arun`` a task against a model, ``rescore`` a finished run."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from assay.errors import AssayError, ConfigError
from assay.models.base import Model
from assay.runner.session import RunOutcome, RunSettings, execute
from assay.runner.settings import RUNTIME_SETTINGS
from assay.secrets import REDACTED
from assay.store.rundir import read_manifest
from assay.tasks.importers.lmeval.settings import KEYWORDS as LMEVAL_KEYWORDS

if TYPE_CHECKING:
    from assay.record import RunManifest
    from assay.results import Run
    from assay.tasks import Task

T = TypeVar("T")

# keywords people reach for, with the setting they mean (the CLI's --output is output_dir here)
_SYNONYMS = {"output": "output_dir", "out": "output_dir", "cache_file": "cache_path"}

# `assay run` options that are not RunSettings fields, as keywords of run/arun under the CLI's names (underscored;
# a test walks the click command so the two cannot drift): the model's options, the Ray ones, and other spellings
MODEL_OPTIONS = ("base_url", "api_key_env", "params")


def _ray_keywords() -> dict[str, str]:
    """``ray_FIELD`` for every field of the ``ray`` section (``--ray-workers``, …; seconds also without ``_s``)."""
    from assay.runner.executors import RayOptions

    out = {f"ray_{field}": field for field in RayOptions.model_fields}
    out.update({f"ray_{field[:-2]}": field for field in RayOptions.model_fields if field.endswith("_s")})
    return out


RAY_OPTIONS = _ray_keywords()
_SPELLINGS = {"timeout": "timeout_s", "param": "params", "prices_file": "prices"}
DISPLAY_OPTIONS = ("quiet", "format")  # run/arun only: no progress bar; print the results table in this format


class RunFailed(AssayError):
    """A run did not succeed: too many failed samples, a model that refused access, a full disk.

    ``outcome`` says how it ended (``outcome.run_dir`` holds what was done; ``outcome.resume_command`` continues it).
    """

    def __init__(self, outcome: RunOutcome) -> None:
        super().__init__(f"{outcome.message} (run folder: {outcome.run_dir})")
        self.outcome = outcome

    def __reduce__(self) -> tuple[Any, ...]:  # picklable (an isolated evaluation sends it back to pytest)
        return (type(self), (self.outcome,))


def check_settings(settings: dict[str, Any], *, call: str = "assay.run", also: Sequence[str] = ()) -> None:
    """Unknown keyword arguments are a ConfigError naming them, suggesting the intended one, listing the valid ones
    (the RunSettings fields, and ``also``)."""
    from assay.tasks.taskfile import did_you_mean

    known = sorted({*RunSettings.model_fields, *also})
    unknown = [name for name in settings if name not in RunSettings.model_fields]
    if not unknown:
        return
    name = unknown[0]
    hint = f" (did you mean {_SYNONYMS[name]!r}?)" if name in _SYNONYMS else did_you_mean(name, known)
    raise ConfigError(
        f"{call}() got an unknown keyword argument {name!r}{hint}; valid settings: resume, retry_errors, "
        + ", ".join(known)
    )


def run_keywords() -> list[str]:
    """Every keyword ``run``/``arun`` take besides ``tasks``, ``model``, ``resume`` and ``retry_errors``."""
    seconds = [k[:-2] for k in RunSettings.model_fields if k.endswith("_s")]
    extra = [*MODEL_OPTIONS, *RAY_OPTIONS, *_SPELLINGS, *seconds, "cache_dir", "lmeval", "max_tests", *DISPLAY_OPTIONS]
    extra += list(LMEVAL_KEYWORDS)
    return sorted({*RunSettings.model_fields, *extra})


def _params_option(value: Any) -> dict[str, Any]:
    """``params``: a dict, or the CLI's ``key=value`` strings (values parsed as JSON where they can be)."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple):
        raise ConfigError(f"params: expected a dict or 'key=value' strings, got {type(value).__name__}")
    out: dict[str, Any] = {}
    for item in value:
        key, sep, raw = str(item).partition("=")
        if not sep or not key:
            raise ConfigError(f"params: expected key=value, got {item!r}")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def _prices_option(value: Any) -> Any:
    """``prices``: a dict of model -> prices, or the path of a JSON file of them (as ``--prices``)."""
    if not isinstance(value, str | Path):
        return value
    path = Path(value)
    try:
        prices = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise ConfigError(f"prices: cannot read {path}: {err.strerror or err}") from None
    except json.JSONDecodeError as err:
        raise ConfigError(f"prices: {path}:{err.lineno}: invalid JSON: {err.msg}") from None
    if not isinstance(prices, dict):
        raise ConfigError(f"prices: {path}: expected an object of model -> prices")
    return prices


def _lmeval_options(settings: dict[str, Any]) -> dict[str, Any] | None:
    """lm-eval's options out of ``settings``: the ``lmeval`` dict, and the CLI's flags as keywords (``num_fewshot``,
    ``apply_chat_template``, …) over it."""
    from assay.tasks.importers.lmeval.settings import options_from

    lmeval = dict(settings.pop("lmeval", None) or {})
    flat = {k: settings.pop(k) for k in LMEVAL_KEYWORDS if k in settings}
    lmeval.update(options_from(**flat))
    return lmeval or None


def split_options(options: dict[str, Any], *, call: str = "assay.run") -> tuple[dict[str, Any], dict[str, Any]]:
    """``assay run``'s options as keywords, split into RunSettings and the model's options (``base_url``,
    ``api_key_env``, ``params``); the CLI's spellings (``timeout``, ``cache_dir``, ``prices`` as a file, the
    ``ray_*`` options) become the settings they stand for. An unknown keyword is a ConfigError."""
    settings = dict(options)
    spellings = dict(_SPELLINGS)  # and the CLI's seconds without their unit: --timeout is timeout_s, …
    spellings.update({k[:-2]: k for k in RunSettings.model_fields if k.endswith("_s")})
    for spelled, name in spellings.items():
        if spelled in settings:
            if name in settings:
                raise ConfigError(f"{call}(): give {spelled!r} or {name!r}, not both")
            settings[name] = settings.pop(spelled)
    overrides = {k: settings.pop(k) for k in MODEL_OPTIONS if k in settings and settings[k] is not None}
    for k in MODEL_OPTIONS:
        settings.pop(k, None)
    if "params" in overrides:
        overrides["params"] = _params_option(overrides["params"])
        if not overrides["params"]:
            del overrides["params"]
    ray = {RAY_OPTIONS[k]: settings.pop(k) for k in list(settings) if k in RAY_OPTIONS}
    ray = {k: v for k, v in ray.items() if v is not None}
    if ray:
        given = settings.get("ray") or {}
        settings["ray"] = {**(given.model_dump() if hasattr(given, "model_dump") else dict(given)), **ray}
    if "cache_dir" in settings:
        cache_dir = settings.pop("cache_dir")
        if cache_dir is not None:
            if settings.get("cache_path") is not None:
                raise ConfigError(f"{call}(): give cache_dir or cache_path, not both")
            from assay.models.cache import CACHE_FILE

            settings["cache_path"] = Path(cache_dir) / CACHE_FILE
    if settings.get("prices") is not None:
        settings["prices"] = _prices_option(settings["prices"])
    check_settings(settings, call=call, also=[k for k in run_keywords() if k not in DISPLAY_OPTIONS])
    return settings, overrides


def resumed_settings(recorded: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """A resumed run's settings: those it recorded, with the runtime ones given now on top. A ``ray`` given now
    changes only the Ray options it names (a new start timeout keeps the recorded cluster address)."""
    known = {k: v for k, v in recorded.items() if k in RunSettings.model_fields}
    merged = {**known, **given}
    if isinstance(known.get("ray"), Mapping) and given.get("ray") is not None:
        ray = given["ray"]
        named = ray.model_dump(exclude_unset=True) if hasattr(ray, "model_dump") else dict(ray)
        merged["ray"] = {**known["ray"], **named}
    return merged


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion, also from inside a running event loop (Jupyter): then in a thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="assay-run") as pool:
        return pool.submit(asyncio.run, coro).result()


TASK_FORMATS = ("auto", "lm-eval")


def in_task_format(items: Sequence[Any], task_format: str | None) -> list[Any]:
    """The task sources as ``task_format`` reads them: ``lm-eval`` makes every path an ``lm-eval:`` reference (an
    lm-eval task YAML whatever its keys); ``auto``/None recognises each by its keys."""
    if task_format not in (None, *TASK_FORMATS):
        raise ConfigError(f"task_format: one of {', '.join(TASK_FORMATS)}, got {task_format!r}")
    if task_format != "lm-eval":
        return list(items)
    return [t if not isinstance(t, str | Path) or str(t).startswith("lm-eval:") else f"lm-eval:{t}" for t in items]


def load_tasks(
    tasks: Any,
    *,
    task_format: str | None = None,
    lmeval: dict[str, Any] | None = None,
    limit: int | None = None,
    max_tests: int | None = None,
) -> list[Task]:
    """Tasks from Task objects, YAML paths or config dicts (one or a list). ``task_format="lm-eval"`` reads every
    path as an lm-eval task YAML (or lm-eval task name) whatever its keys, as ``--task-format lm-eval`` does.

    lm-eval references (``lm-eval:NAME``, lm-eval task or group files) are loaded together by lm-eval's own task
    layer, as ``lm_eval --tasks a,b`` loads them; ``lmeval`` holds lm-eval's options (``num_fewshot``, ``seeds``,
    ``apply_chat_template``, ``fewshot_as_multiturn``, ``system_instruction``, ``gen_kwargs``, ``metadata``,
    ``bootstrap_iters``) and ``limit`` is applied as lm-eval applies it. ``max_tests`` caps the tests a promptfoo
    config may expand to (default: ``$ASSAY_PROMPTFOO_MAX_TESTS``, else 100,000)."""
    from assay.tasks import Task, load_task

    items = list(tasks) if isinstance(tasks, list | tuple) else [tasks]
    if not items:
        raise ConfigError("no task given")
    items = in_task_format(items, task_format)
    from assay.tasks.importers.lmeval import is_lmeval_reference, load_lmeval_tasks
    from assay.tasks.importers.promptfoo import is_promptfoo_config, load_promptfoo

    references = [t for t in items if isinstance(t, str | Path) and is_lmeval_reference(t)]
    if lmeval and not references:
        raise ConfigError(f"lm-eval options ({', '.join(sorted(lmeval))}) apply to lm-eval tasks, and none is given")
    out: list[Task] = []
    for t in items:  # a promptfoo config gives one task per prompt
        if isinstance(t, str | Path) and is_lmeval_reference(t):
            if t is references[0]:  # every lm-eval reference in one load, where the first one stands
                options = {**(lmeval or {}), **({"limit": limit} if limit is not None else {})}
                out.extend(load_lmeval_tasks(references, **options))
        elif isinstance(t, str | Path) and is_promptfoo_config(t):
            out.extend(load_promptfoo(t, max_tests=max_tests))
        else:
            out.append(t if isinstance(t, Task) else load_task(t))
    return out


def _own_model(task: Task) -> dict[str, Any] | None:
    """A task's own model: its ``model:``, else the one model its ``models:`` names (several: a matrix's)."""
    if task.model:
        return task.model
    return next(iter(task.models.values())) if task.models and len(task.models) == 1 else None


def resolve_model(
    model: Any, tasks: Sequence[Task], *, timeout_s: float | None = None, options: dict[str, Any] | None = None
) -> Model:
    """The model given, or the tasks' own default model; a clear error when there is none, or two tasks disagree.

    An explicit ``timeout_s`` is passed to a model built from a spec whose provider takes one (``openai``), so the
    model's own HTTP timeout never cuts a request shorter than the run allows. ``options`` (``base_url``,
    ``api_key_env``, ``params``: ``--base-url`` and the like) apply to the spec given.
    """
    from assay.models.registry import accepts_option, load_model

    if options:
        if model is None:
            raise ConfigError(f"{', '.join(sorted(options))} need a model: pass model=… (a spec such as 'openai:NAME')")
        if isinstance(model, Model):
            raise ConfigError(
                f"{', '.join(sorted(options))} apply to a model spec ('openai:NAME' or a dict), not to the model "
                f"object {type(model).__name__} already built"
            )
    if isinstance(model, Model):
        return model
    spec, owner = model, None
    if spec is None:
        owners = [t for t in tasks if _own_model(t)]
        if not owners:
            several = next((t for t in tasks if t.models), None)
            if several is not None:
                raise ConfigError(
                    f"task {several.name!r} lists {len(several.models or {})} models: `assay run` runs them as a "
                    "matrix, one cell each; one run evaluates one model: pass model=… (or --model)"
                )
            raise ConfigError("no model: pass model=… (or --model) or give the task a 'model:' section")
        owner = owners[0]
        spec = _own_model(owner)
        other = next((t.name for t in owners if _own_model(t) != spec), None)
        if other is not None:
            raise ConfigError(
                f"tasks {owner.name!r} and {other!r} name different models in their 'model:' sections; "
                "one run evaluates one model: pass model=… (or --model)"
            )
    overrides = {"timeout_s": timeout_s} if timeout_s is not None and accepts_option(spec, "timeout_s") else {}
    overrides.update(options or {})
    try:
        if isinstance(spec, dict) and overrides:
            return load_model({**spec, **overrides})
        return load_model(spec, **overrides)
    except ConfigError as err:
        if owner is None:
            raise
        raise owner.config_error(("model",), str(err)) from None


def _resume_model(
    model: Any, recorded: dict[str, Any], run_dir: Path, timeout_s: float | None, options: dict[str, Any] | None = None
) -> Model:
    """The model of a resumed run: the one recorded in run.json, or the one given, which must be the same model."""
    from assay.models.base import display_name

    if model is None and options:
        raise ConfigError(f"{', '.join(sorted(options))} need the model again: pass model=… (--model) to resume")
    if model is None:
        if REDACTED in json.dumps(recorded, default=str):
            raise ConfigError(
                f"{run_dir}/run.json records the model without its credentials (a key in the URL or in a parameter "
                "is never written); give the model again to resume: --model, --base-url and --param as at the start"
            )
        return resolve_model(recorded, [], timeout_s=timeout_s)
    model_obj = resolve_model(model, [], timeout_s=timeout_s, options=options)
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
    from assay.tasks.importers import task_from_config

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
            task = task_from_config(info.config)
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


def _settings(values: dict[str, Any]) -> RunSettings:
    """RunSettings from keywords; a bad value is a ConfigError naming the keyword (never a pydantic traceback)."""
    from pydantic import ValidationError

    try:
        return RunSettings.model_validate(values)
    except ValidationError as err:
        problems = []
        for e in err.errors():
            key = ".".join(str(p) for p in e["loc"]) or "(settings)"
            problems.append(f"{key}: {e['msg'].removeprefix('Value error, ')}")
        raise ConfigError("invalid run settings: " + "; ".join(problems)) from None


async def arun_outcome(
    tasks: Any = None,
    model: Any = None,
    *,
    resume: str | Path | None = None,
    retry_errors: bool = False,
    task_format: str | None = None,
    **settings: Any,
) -> RunOutcome:
    """Run tasks (or resume a run folder) and return how it ended, without loading the results.

    ``settings`` are ``assay run``'s options under the same names with underscores (:func:`split_options`). On
    resume, the recorded settings apply; ``settings`` given here override how the run executes (concurrency,
    timeout, cache, …). ``model`` may be omitted (the recorded model is rebuilt) or given again (e.g. an object
    that run.json cannot rebuild), but it must be the model the run started with; likewise ``tasks`` (needed for a
    task that run.json records without its credentials, e.g. a key in a judge's URL). An unknown keyword is a
    ConfigError listing the valid ones. ``task_format="lm-eval"`` reads the task paths as lm-eval task YAMLs.
    """
    lmeval = _lmeval_options(settings)  # lm-eval's options, for its tasks (recorded with each task)
    max_tests = settings.pop("max_tests", None)  # the cap on a promptfoo config's tests, read at load only
    settings, model_options = split_options(settings)
    if resume is not None:
        if lmeval:
            raise ConfigError("a resumed run's lm-eval tasks keep the lm-eval options they started with")
        if max_tests is not None:
            raise ConfigError("max_tests applies when a promptfoo config is read; a resumed run's tasks are read")
        run_dir = Path(resume)
        manifest = read_manifest(run_dir)
        fixed = sorted(set(settings) - RUNTIME_SETTINGS)
        if fixed:
            raise ConfigError(
                f"a resumed run keeps the settings it started with; only {', '.join(sorted(RUNTIME_SETTINGS))} "
                f"can change (got {', '.join(fixed)})"
            )
        recorded = _settings(resumed_settings(manifest.config, settings))
        task_objs = resume_tasks(tasks, manifest, run_dir)
        model_obj = _resume_model(model, manifest.model, run_dir, settings.get("timeout_s"), model_options)
        return await execute(task_objs, model_obj, recorded, run_dir=run_dir, retry_errors=retry_errors)
    if retry_errors:
        raise ConfigError("retry_errors applies to a resumed run: pass resume=RUN_DIR")
    task_objs = load_tasks(
        tasks, task_format=task_format, lmeval=lmeval, limit=settings.get("limit"), max_tests=max_tests
    )
    run_settings = _settings(settings)
    model_obj = resolve_model(model, task_objs, timeout_s=run_settings.timeout_s, options=model_options)
    return await execute(task_objs, model_obj, run_settings)


async def arun(
    tasks: Any = None,
    model: Any = None,
    *,
    resume: str | Path | None = None,
    quiet: bool = False,
    format: str | None = None,  # the CLI's --format
    **settings: Any,
) -> Run:
    """Run tasks against a model (or resume a run folder) and return the loaded results.

    Every ``assay run`` option is a keyword under the same name with underscores (``base_url``, ``api_key_env``,
    ``params``, ``timeout``, ``cache``, ``cache_dir``, ``prices`` (a dict or a JSON file), ``name``, ``ray_*``, …).
    ``quiet`` shows no progress bar; ``format`` (``rich``, ``markdown``, ``json``) prints the results table and the
    run's summary line when it finishes, as the CLI does (by default nothing is printed).

    Raises :class:`RunFailed` when the run did not succeed: more failed samples than ``max_error_rate`` (10 % by
    default; ``max_error_rate=None`` never fails), a model that refused access, a full disk.
    """
    from assay.results import load_run

    if format is not None and format not in ("rich", "markdown", "json"):
        raise ConfigError(f"format: 'rich', 'markdown' or 'json', got {format!r}")
    if quiet:
        settings["progress"] = False
    outcome = await arun_outcome(tasks, model, resume=resume, **settings)
    if outcome.stopped_by is not None:
        raise RunFailed(outcome)
    loaded = load_run(outcome.run_dir)
    if format is not None and not quiet:
        _show(loaded, outcome, format)
    return loaded


def _show(loaded: Run, outcome: RunOutcome, fmt: str) -> None:
    """The results table (stdout) and the summary line (stderr), as ``assay run`` prints them."""
    import sys

    from assay.report.table import render_table
    from assay.runner.exits import summary_line

    print(render_table(loaded, fmt=fmt), flush=True)
    print(summary_line(outcome), file=sys.stderr, flush=True)


def run(tasks: Any = None, model: Any = None, *, resume: str | Path | None = None, **settings: Any) -> Run:
    """Synchronous :func:`arun` (the same keywords: every ``assay run`` option); works inside a running event loop
    (e.g. Jupyter) too."""
    return run_sync(arun(tasks, model, resume=resume, **settings))
