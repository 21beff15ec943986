"""One run from start (or resume) to results: the run folder, the loop, interruption, and results files."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import re
import secrets
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.errors import ConfigError
from assay.gcpause import gc_paused, resume_startup
from assay.models.base import Model
from assay.record import RunManifest
from assay.runner.executors import make_executor, require_ray
from assay.runner.executors.local import LocalExecutor
from assay.runner.gitinfo import GitHash as GitHash  # re-exported: it used to live here
from assay.runner.gitinfo import git_hash
from assay.runner.lock import run_lock
from assay.runner.pending import PendingWork
from assay.runner.progress import RunProgress
from assay.runner.scheduler import (
    ErrorRateExceeded,
    ModelAccessError,
    RunStats,
    Scheduler,
    SchedulerConfig,
    WorkerLost,
)
from assay.runner.settings import RESULTS_OPTIONS as RESULTS_OPTIONS  # re-exported: settings used to live here
from assay.runner.settings import RUNTIME_SETTINGS as RUNTIME_SETTINGS
from assay.runner.settings import RunOutcome, RunSettings
from assay.runner.warmup import Warmup
from assay.secrets import redact_spec
from assay.store.rundir import (
    MANIFEST,
    SAMPLES,
    SampleWriter,
    drop_samples,
    error_counts,
    errored_keys,
    finished_keys,
    read_manifest,
    remove_leftovers,
    repair_torn_tail,
    write_manifest,
)

if TYPE_CHECKING:
    from rich.console import Console

    from assay.results.scanahead import ScanAhead
    from assay.tasks import Sample, Task


DEFAULT_TIMEOUT_S = 60.0
DISK_FULL = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT})


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:60] or "run"


def new_run_dir(output_dir: Path, tasks: list[Task]) -> Path:
    """A fresh folder named after the task(s), the time and a random suffix."""
    name = tasks[0].name if len(tasks) == 1 else f"{tasks[0].name}+{len(tasks) - 1}"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = output_dir / f"{_slug(name)}-{stamp}-{secrets.token_hex(3)}"
    path.mkdir(parents=True, exist_ok=False)
    return path


def _check_unique_names(tasks: list[Task]) -> None:
    seen: set[str] = set()
    for task in tasks:
        if task.name in seen:
            raise ConfigError(f"two tasks are named {task.name!r}; task names must be unique within a run")
        seen.add(task.name)


def task_judges(task: Task) -> list[dict[str, Any]]:
    """The judge models a task's evaluators call (each names its role), for the manifest."""
    found: list[dict[str, Any]] = []
    for metric in task.metrics:
        judges = getattr(metric.evaluator, "judges", None)
        if callable(judges):
            found.extend({**j, "metric": metric.name, "task": task.name} for j in judges())
    return found


def share_run_cache(tasks: list[Task], enabled: bool, path: Path | None) -> None:
    """Hand the run's cache switch (one for every cache, off by default) to the evaluators that keep one of their
    own (a judge's answers), so they follow it unless their options say otherwise."""
    for task in tasks:
        for metric in task.metrics:
            use = getattr(metric.evaluator, "use_run_cache", None)
            if callable(use):
                use(enabled, path)


async def close_evaluators(tasks: list[Task]) -> None:
    """Release what the tasks' evaluators hold (judge connections)."""
    for task in tasks:
        for metric in task.metrics:
            await metric.evaluator.aclose()


def start_manifest(
    tasks: list[Task], model: Model, settings: RunSettings, run_dir: Path, git: GitHash | None = None
) -> RunManifest:
    from assay.version import __version__

    return RunManifest(
        run_id=run_dir.name,
        name=settings.name,
        assay_version=__version__,
        created_at=time.time(),
        model=model.describe(),
        judges=[redact_spec(judge) for task in tasks for judge in task_judges(task)],  # no credentials in run.json
        tasks=[task.info(len(task.samples(settings.limit))) for task in tasks],
        config=settings.recorded(),
        git_hash=git.result() if git is not None else git_hash(),
    )


def attempt_timeout(model: Model, settings: RunSettings) -> float:
    """Seconds one request may take: the run's ``timeout_s``, else the model's own ``timeout_s``, else 60."""
    if settings.timeout_s is not None:
        return settings.timeout_s
    own = getattr(model, "timeout_s", None)
    return float(own) if isinstance(own, int | float) and own > 0 else DEFAULT_TIMEOUT_S


def check_requests(work: Iterable[tuple[Task, Sample]], model: Model | None = None) -> None:
    """Render every pending sample's prompt now: a row the template cannot render fails the run before it starts
    (naming the file and line), instead of stopping it half-way with a half-written run folder. The model checks
    each task's generation parameters (``temperature: hot`` is an error before anything is sent) on the request of
    its first sample; the other samples' prompts are checked as an offline run's are (:func:`check_renders`: a plain
    template is proved to render without rendering it), not built into requests that would be thrown away."""
    from assay.models.loglikelihood import check_capability
    from assay.runner.offline import check_renders

    checked: set[str] = set()

    def after_the_first() -> Iterator[tuple[Task, Sample]]:
        for task, sample in work:
            if task.name in checked:
                yield task, sample
                continue
            checked.add(task.name)
            request = task.build_request(sample, 0)
            if model is not None:
                check_capability(model, request, f"task {task.name!r}")  # multiple_choice on a chat model
                model.check_params(dict(request.params), f"task {task.name!r}: generation")

    check_renders(after_the_first())


def _is_terminal(console: Console | None) -> bool:
    return console.is_terminal if console is not None else sys.stderr.isatty()


def say(console: Console | None, text: str, style: str | None = None) -> None:
    """One message line on stderr: through ``console`` when given, with rich on a terminal, else as plain text
    (a CI log or ``-q`` run never imports rich)."""
    if console is None and sys.stderr.isatty():
        from rich.console import Console

        console = Console(stderr=True, soft_wrap=True)
    if console is not None:
        console.print(text, style=style, markup=False, highlight=False)
    else:
        print(text, file=sys.stderr, flush=True)


def _disk_full(err: BaseException) -> bool:
    return isinstance(err, OSError) and err.errno in DISK_FULL


async def execute(
    tasks: list[Task],
    model: Model,
    settings: RunSettings,
    *,
    run_dir: Path | None = None,
    retry_errors: bool = False,
    console: Console | None = None,
) -> RunOutcome:
    """Run (or resume, when ``run_dir`` holds a run) every pending sample; write results when all are done.

    With ``retry_errors`` (resume only), samples whose model requests failed are asked again and replace their
    error records; successful answers are never asked again.

    Every check (task files, datasets, each pending sample's prompt and parameters) runs before the run folder is
    created or touched; the folder's lock is held from then until results are written, so a second process resuming
    the same run gets a clear error instead of writing samples twice. The manifest records how the run ended:
    finished, interrupted (Ctrl-C), or failed (too many errors, a model that refuses access, a full disk: said in
    one message with the command that resumes the run; an unexpected error is raised again).
    """
    git = GitHash() if run_dir is None else None  # runs while the tasks load
    try:
        _check_unique_names(tasks)
        for task in tasks:
            task.validate()  # read the data and render a prompt now: a bad task must fail before anything is written
        with contextlib.ExitStack() as held:
            if run_dir is not None:
                read_manifest(run_dir)  # a clear error for a folder that is not a run, before taking its lock
                held.enter_context(run_lock(run_dir, action="resume"))
            return await _execute(tasks, model, settings, run_dir, retry_errors, console, held, git)
    finally:
        if git is not None:
            git.result()  # reap the child whatever happened
    raise AssertionError("unreachable")  # pragma: no cover - mypy: ExitStack may swallow exceptions


async def _execute(
    tasks: list[Task],
    model: Model,
    settings: RunSettings,
    run_dir: Path | None,
    retry_errors: bool,
    console: Console | None,
    held: contextlib.ExitStack,
    git: GitHash | None = None,
) -> RunOutcome:
    done: set[tuple[str, str]] = set()
    retry: set[tuple[str, str]] = set()
    prior = (0, 0, 0)
    if run_dir is not None:
        manifest = read_manifest(run_dir)
        repair_torn_tail(run_dir / SAMPLES)
        remove_leftovers(run_dir)  # a killed writer's chunk folders and half-written files: this writer's now
        done = finished_keys(run_dir)
        retry = errored_keys(run_dir) if retry_errors else set()
        prior = error_counts(run_dir, exclude=retry)
    elif retry_errors:
        raise ConfigError("retry_errors applies to a resumed run (give resume=RUN_DIR / --resume)")
    if settings.executor == "ray":
        require_ray()
    from assay.runner.offline import OfflineScheduler, check_renders, is_offline

    with gc_paused():  # a resume's pass over the samples makes many small objects: no full collections meanwhile
        work = PendingWork(tasks, settings.limit, done - retry)  # made as it is reached: memory flat in its size
    skipped = work.skipped

    offline = is_offline(model, settings.feedback_model)  # answers exist: scored in chunks, no request loop
    if offline:
        check_renders(work)
    else:
        check_requests(work, model)
    if work:
        model.check()  # e.g. a hosted API without its key: fail now, not with a folder of failed samples
    feedback_model = None
    if settings.feedback_model is not None:
        from assay.models.registry import load_model

        feedback_model = load_model(settings.feedback_model)
        feedback_model.check()
    if retry and run_dir is not None:
        drop_samples(run_dir, retry)  # after every check: the error records are replaced by the new answers
    if run_dir is not None and settings.name is not None:
        manifest.name = settings.name  # a resumed run may be renamed (a label, not what it evaluates)
    if settings.cache is None:
        settings = settings.model_copy(update={"cache": settings.use_cache(tasks)})  # recorded, kept on resume
    share_run_cache(tasks, bool(settings.cache), settings.cache_path)  # judges follow the run's switch
    cache = None
    if settings.cache:
        from assay.models.cache import ResponseCache

        cache = ResponseCache(settings.cache_path)
    fresh = run_dir is None
    if run_dir is None:
        run_dir = new_run_dir(settings.output_dir, tasks)
        held.enter_context(run_lock(run_dir, action="write"))
        manifest = start_manifest(tasks, model, settings, run_dir, git)
        write_manifest(run_dir, manifest, durable=False)  # the SampleWriter fsyncs it in a thread, before any sample
    ahead = _scan_ahead(run_dir, manifest, settings) if offline and fresh else None
    if ahead is not None:
        held.callback(ahead.discard)  # its spools, however the run ends (nothing once the results are written)
    show = settings.progress if settings.progress is not None else _is_terminal(console)
    progress = RunProgress(len(work) + skipped, enabled=show, console=console)
    warm = Warmup()  # what the results need (numpy), imported while the first requests are in flight
    held.callback(warm.wait)  # however the run ends, the import is not left half-done
    held.callback(resume_startup)

    def first_answer() -> None:  # requests are in flight: what start-up put off can be done now
        resume_startup()  # the GC paused while `assay run` started (assay.gcpause)
        warm.start()

    config = SchedulerConfig(
        concurrency=settings.concurrency,
        retry=settings.retry_policy(attempt_timeout(model, settings)),
        max_error_rate=settings.max_error_rate,
        feedback_model=feedback_model,
        max_response_chars=settings.max_response_chars,
        prior=prior,
        on_first_answer=first_answer,
    )
    status: str = "failed"
    stopped_by: str | None = "error"
    message: str | None = "the run stopped on an unexpected error"
    session_start = time.perf_counter()
    stats = RunStats()
    scheduler: Scheduler | None = None
    resume = f"assay run --resume {run_dir}"
    try:
        with SampleWriter(run_dir / SAMPLES, sync_first=run_dir / MANIFEST if fresh else None) as writer:
            scheduler = make_executor(
                settings.executor, model, writer, config, cache=cache, progress=progress, ray=settings.ray,
                offline=offline, processes=settings.processes,
            )  # fmt: skip
            progress.start(already_done=skipped)
            if isinstance(scheduler, OfflineScheduler):
                scheduler.scan_ahead = ahead
            if not isinstance(scheduler, LocalExecutor):
                resume_startup()  # only the local request loop reports its first answer
            try:
                stats = await scheduler.run(work)
                status, stopped_by, message = "finished", None, None
            except ErrorRateExceeded as err:
                stats = scheduler.stats
                complete = stats.written == len(work)  # the end-of-run check: every sample is in
                status, stopped_by, message = ("finished" if complete else "failed"), "error_rate", str(err)
                if stats.errors:
                    resume += " --retry-errors"  # the failed samples are what must be asked again
                if stats.evaluator_errors:
                    message += f"; once the evaluator works, `assay score {run_dir}` scores the answers again"
            except ModelAccessError as err:
                status, stopped_by, message = "failed", "model_access", f"{err}; after fixing it, resume the run"
                stats = scheduler.stats
            except WorkerLost as err:
                status, stopped_by, message = "failed", "worker_lost", str(err)
                stats = scheduler.stats
            except (asyncio.CancelledError, KeyboardInterrupt):
                status, stopped_by = "interrupted", None
                message = f"interrupted; finished samples are saved in {run_dir}"
                stats = scheduler.stats
                raise
            except OSError as err:
                stats = scheduler.stats
                if not _disk_full(err):
                    message = f"{message}: {type(err).__name__}: {err}"
                    raise
                stopped_by, message = "disk_full", _disk_full_message(err, run_dir)
            except BaseException as err:
                message = f"{message}: {type(err).__name__}: {err}"
                stats = scheduler.stats
                raise
            finally:
                progress.stop()
    except OSError as err:  # closing the samples file on a full disk
        if not _disk_full(err):
            raise
        status, stopped_by, message = "failed", "disk_full", _disk_full_message(err, run_dir)
    finally:
        await model.aclose()
        await close_evaluators(tasks)
        if feedback_model is not None:
            await feedback_model.aclose()
        if cache is not None:
            cache.close()
        manifest.status = status
        manifest.total_seconds = (manifest.total_seconds or 0.0) + (time.perf_counter() - session_start)
        if status == "finished":
            manifest.finished_at = time.time()
        try:
            write_manifest(run_dir, manifest)
        except OSError as err:
            if not _disk_full(err):
                raise
            status, stopped_by, message = "failed", "disk_full", _disk_full_message(err, run_dir)
        if stopped_by is not None or status == "interrupted":
            say(console, message or "", style="yellow")
            say(console, f"Run folder: {run_dir}  (resume with: {resume})")
    if scheduler is not None and scheduler.cache_failures:
        failures = scheduler.cache_failures
        say(console, f"warning: {len(failures)} response(s) could not be cached (first: {failures[0]})", "yellow")
    if status == "finished":
        warm.wait()  # before importing the results code: this thread never imports numpy while the warm-up does
        from assay.results import write_results

        try:
            write_results(run_dir, processes=settings.processes, ahead=ahead, **settings.results_options())
        except OSError as err:
            if not _disk_full(err):
                raise
            status, stopped_by, message = "failed", "disk_full", _disk_full_message(err, run_dir)
            say(console, message, style="yellow")
    return RunOutcome(
        run_dir=run_dir,
        status=status,
        name=manifest.name,
        written=stats.written,
        skipped=skipped,
        errors=stats.errors,
        evaluator_errors=stats.evaluator_errors,
        cache_hits=stats.cache_hits,
        judge_cache_hits=stats.judge_cache_hits,
        cache_oldest=stats.cache_oldest,
        cache_newest=stats.cache_newest,
        truncated=stats.truncated,
        limit_stops=stats.limit_stops,
        requests=stats.requests,
        retries=stats.retries,
        seconds=stats.seconds,
        message=message,
        first_error=stats.first_error,
        first_evaluator_error=stats.first_evaluator_error,
        stopped_by=stopped_by,
        resume_command=resume if stopped_by is not None or status == "interrupted" else None,
    )


def _scan_ahead(run_dir: Path, manifest: RunManifest, settings: RunSettings) -> ScanAhead | None:
    """The results scan an offline run on this machine makes as it scores (a new folder: every line of
    samples.jsonl is one it scores), so the results need not read the file back."""
    if settings.executor != "local":
        return None
    from assay.results.scanahead import ScanAhead
    from assay.results.writer import results_options

    return ScanAhead(run_dir, manifest, results_options(**settings.results_options()))


def _disk_full_message(err: OSError, run_dir: Path) -> str:
    what = "the disk is full" if err.errno != errno.EFBIG else "a file size limit was reached"
    return (
        f"{what} ({err.strerror}) while writing {run_dir}; every sample finished before it is saved. "
        f"Free some space, then resume with: assay run --resume {run_dir}"
    )
