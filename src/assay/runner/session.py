"""One run from start (or resume) to results: the run folder, the loop, interruption, and results files."""

from __future__ import annotations

import contextlib
import random
import re
import secrets
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.errors import ConfigError
from assay.gcpause import gc_paused
from assay.models.base import Model
from assay.record import RunManifest
from assay.runner.ending import Ending, drive, is_disk_full
from assay.runner.evaluatorhooks import close_evaluators, share_run_cache, share_run_prices, task_judges
from assay.runner.executors import require_ray
from assay.runner.executors.choose import make_executor
from assay.runner.followed import FollowedResults
from assay.runner.gitinfo import GitHash, git_hash
from assay.runner.lock import run_lock
from assay.runner.pending import PendingWork
from assay.runner.progress import RunProgress
from assay.runner.scheduler import RunStats, Scheduler, SchedulerConfig
from assay.runner.settings import RunOutcome, RunSettings
from assay.secrets import redact_spec
from assay.store.rundir import (
    SampleWriter,
    drop_samples,
    read_manifest,
    remove_leftovers,
    repair_torn_tail,
    write_manifest,
)
from assay.store.sampleindex import SAMPLES, error_counts, errored_keys, finished_keys

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console

    from assay.models.cache import ResponseCache
    from assay.record import SampleRecord
    from assay.results.scanahead import ScanAhead
    from assay.runner.budget import Budget
    from assay.runner.decide import Gate
    from assay.tasks import Sample, Task


DEFAULT_TIMEOUT_S = 60.0


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:60] or "run"


def new_run_dir(output_dir: Path, tasks: list[Task], run_name: str | None = None) -> Path:
    """A fresh folder named after the task(s), the run's ``--name`` if it has one (filesystem-safe: a list of runs
    then says which is which without opening their run.json), the time and a random suffix (unique)."""
    name = tasks[0].name if len(tasks) == 1 else f"{tasks[0].name}+{len(tasks) - 1}"
    named = re.sub(r"[^A-Za-z0-9_.-]+", "-", run_name or "")[:40].strip("-.")  # no name of dots only ("..")
    label = f"{_slug(name)}-{named}" if named else _slug(name)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = output_dir / f"{label}-{stamp}-{secrets.token_hex(3)}"
    path.mkdir(parents=True, exist_ok=False)
    return path


def _check_unique_names(tasks: list[Task]) -> None:
    seen: set[str] = set()
    for task in tasks:
        if task.name in seen:
            raise ConfigError(f"two tasks are named {task.name!r}; task names must be unique within a run")
        seen.add(task.name)


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


@dataclass
class _Resumed:
    """What a run folder holds already: samples finished, samples to ask again, and the error counts so far."""

    manifest: RunManifest | None = None
    done: set[tuple[str, str]] = field(default_factory=set)
    retry: set[tuple[str, str]] = field(default_factory=set)
    prior: tuple[int, int, int] = (0, 0, 0)


def _read_resumed(run_dir: Path | None, retry_errors: bool) -> _Resumed:
    if run_dir is None:
        if retry_errors:
            raise ConfigError("retry_errors applies to a resumed run (give resume=RUN_DIR / --resume)")
        return _Resumed()
    manifest = read_manifest(run_dir)
    repair_torn_tail(run_dir / SAMPLES)
    remove_leftovers(run_dir)  # a killed writer's chunk folders and half-written files: this writer's now
    retry = errored_keys(run_dir) if retry_errors else set()
    return _Resumed(manifest, finished_keys(run_dir), retry, error_counts(run_dir, exclude=retry))


def _check_before_writing(work: PendingWork, model: Model, settings: RunSettings, offline: bool) -> Model | None:
    """Every check that needs no run folder: prompts render, the model can answer them and has what it needs
    (a hosted API's key), and the feedback model too. Returns the feedback model, loaded."""
    from assay.runner.offline import check_renders

    if offline:
        check_renders(work)
    else:
        check_requests(work, model)
    if work:
        model.check()  # e.g. a hosted API without its key: fail now, not with a folder of failed samples
    if settings.feedback_model is None:
        return None
    from assay.models.registry import load_model

    feedback_model = load_model(settings.feedback_model)
    feedback_model.check()
    return feedback_model


def _open_cache(tasks: list[Task], settings: RunSettings) -> tuple[RunSettings, ResponseCache | None]:
    """The run's response cache (on or off, recorded and kept on resume), its switch handed to the judges too."""
    if settings.cache is None:
        settings = settings.model_copy(update={"cache": settings.use_cache(tasks)})
    share_run_cache(tasks, bool(settings.cache), settings.cache_path)
    if not settings.cache:
        return settings, None
    from assay.models.cache import ResponseCache

    return settings, ResponseCache(settings.cache_path)


async def _release(tasks: list[Task], model: Model, feedback_model: Model | None, cache: ResponseCache | None) -> None:
    await model.aclose()
    await close_evaluators(tasks)
    if feedback_model is not None:
        await feedback_model.aclose()
    if cache is not None:
        cache.close()


def _record_ending(
    run_dir: Path, manifest: RunManifest, ending: Ending, started: float, console: Console | None
) -> None:
    """Write how the run ended into run.json, and tell the user how to resume a run that stopped early."""
    manifest.status = ending.status
    manifest.total_seconds = (manifest.total_seconds or 0.0) + (time.perf_counter() - started)
    if ending.status == "finished":
        manifest.finished_at = time.time()
    try:
        write_manifest(run_dir, manifest)
    except OSError as err:
        if not is_disk_full(err):
            raise
        ending.disk_full(err)
    if ending.resume_command is not None:
        say(console, ending.message or "", style="yellow")
        say(console, f"Run folder: {run_dir}  (resume with: {ending.resume})")


def _write_results(
    run_dir: Path,
    settings: RunSettings,
    ahead: ScanAhead | None,
    followed: FollowedResults | None,
    ending: Ending,
    console: Console | None,
) -> None:
    from assay.results import write_results

    try:
        if followed is not None:
            followed.finish()
        else:
            write_results(run_dir, processes=settings.processes, ahead=ahead, **settings.results_options())
    except OSError as err:
        if not is_disk_full(err):
            raise
        ending.disk_full(err)
        say(console, ending.message or "", style="yellow")


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
    resumed = _read_resumed(run_dir, retry_errors)
    if settings.executor == "ray":
        require_ray()
    from assay.runner.offline import OfflineScheduler, is_offline

    with gc_paused():  # a resume's pass over the samples makes many small objects: no full collections meanwhile
        work = PendingWork(tasks, settings.limit, resumed.done - resumed.retry)  # made as reached: memory flat
    offline = is_offline(model, settings.feedback_model)  # answers exist: scored in chunks, no request loop
    gate = _gate(tasks, settings, resumed, run_dir, offline, work)
    budget = _budget(tasks, model, settings, run_dir, offline, work)
    feedback_model = _check_before_writing(work, model, settings, offline)
    if resumed.retry and run_dir is not None:
        drop_samples(run_dir, resumed.retry)  # after every check: the error records are replaced by the new answers
    settings, cache = _open_cache(tasks, settings)
    share_run_prices(tasks, settings.prices)

    fresh = run_dir is None
    if run_dir is None:
        run_dir = new_run_dir(settings.output_dir, tasks, settings.name)
        held.enter_context(run_lock(run_dir, action="write"))
        manifest = start_manifest(tasks, model, settings, run_dir, git)
        write_manifest(run_dir, manifest)
    else:
        assert resumed.manifest is not None
        manifest = resumed.manifest
        if settings.name is not None:
            manifest.name = settings.name  # a resumed run may be renamed (a label, not what it evaluates)
    ahead = _scan_ahead(run_dir, manifest, settings) if offline and fresh else None
    if ahead is not None:
        held.callback(ahead.discard)  # its spools, however the run ends (nothing once the results are written)

    show = settings.progress if settings.progress is not None else _is_terminal(console)
    progress = RunProgress(len(work) + work.skipped, enabled=show, console=console)
    config = SchedulerConfig(
        concurrency=settings.concurrency,
        retry=settings.retry_policy(attempt_timeout(model, settings)),
        max_error_rate=settings.max_error_rate,
        feedback_model=feedback_model,
        max_response_chars=settings.max_response_chars,
        prior=resumed.prior,
        observe=_observers(gate, budget),
        max_environments=settings.max_environments,
    )
    if any(getattr(t.agent, "environment", None) is not None for t in tasks):
        from assay.environments.cleanup import cleanup_leftovers

        cleanup_leftovers()  # environments of a run killed before it could remove them
    ending = Ending(run_dir)
    started = time.perf_counter()
    stats = RunStats()
    scheduler: Scheduler | None = None
    followed = None if offline else FollowedResults(run_dir, settings)  # the results read as the run writes
    if followed is not None:
        held.callback(followed.stop)  # however the run ends, the pass is over before the run folder is let go
    try:
        with SampleWriter(run_dir / SAMPLES, growth=followed.growth if followed else None) as writer:
            scheduler = make_executor(
                settings.executor, model, writer, config, cache=cache, progress=progress, ray=settings.ray,
                offline=offline, processes=settings.processes,
            )  # fmt: skip
            if isinstance(scheduler, OfflineScheduler):
                scheduler.scan_ahead = ahead
            progress.start(already_done=work.skipped)
            try:
                if gate is None:
                    stats = await drive(scheduler, work, ending)
                elif gate.decided is None:  # --decide: in a random order (seeded), so each sample is a fair draw
                    order = list(work)
                    random.Random(settings.seed).shuffle(order)
                    stats = await drive(scheduler, order, ending)
                else:  # a resumed run whose samples already decided the claim
                    ending.stop("finished", None, gate.sentence(gate.decided))
            finally:
                progress.stop()
    except OSError as err:  # closing the samples file on a full disk
        if not is_disk_full(err):
            raise
        ending.disk_full(err)
    finally:
        await _release(tasks, model, feedback_model, cache)
        if gate is not None:
            manifest.config["decision"] = gate.summary()
        if budget is not None:
            manifest.config["budget"] = budget.summary()
        _record_ending(run_dir, manifest, ending, started, console)
    if scheduler is not None and scheduler.cache_failures:
        failures = scheduler.cache_failures
        say(console, f"warning: {len(failures)} response(s) could not be cached (first: {failures[0]})", "yellow")
    if ending.status == "finished":
        _write_results(run_dir, settings, ahead, followed, ending, console)
    return RunOutcome(
        run_dir=run_dir,
        status=ending.status,
        name=manifest.name,
        written=stats.written,
        skipped=work.skipped,
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
        message=ending.message,
        first_error=stats.first_error,
        first_evaluator_error=stats.first_evaluator_error,
        stopped_by=ending.stopped_by,
        resume_command=ending.resume_command,
        decision=gate.summary() if gate is not None else None,
    )


def _observers(gate: Gate | None, budget: Budget | None) -> Callable[[SampleRecord], None] | None:
    """What each finished sample is shown to: the --decide gate and the --budget-usd tally (either may stop the run)."""
    watchers = [w for w in (budget.observe if budget else None, gate.observe_record if gate else None) if w]
    if not watchers:
        return None

    def observe(record: SampleRecord) -> None:
        for watch in watchers:
            watch(record)

    return observe


def _budget(
    tasks: list[Task], model: Model, settings: RunSettings, run_dir: Path | None, offline: bool, work: PendingWork
) -> Budget | None:
    """The ``--budget-usd`` tally (None without one): a resumed run's spend replayed, then the rest estimated; a run
    estimated past the budget is refused before anything is written."""
    if settings.budget_usd is None:
        return None
    from assay.models.base import display_name
    from assay.runner.budget import Budget
    from assay.runner.evaluatorhooks import task_judges
    from assay.runner.outcomes import BudgetSpent, BudgetUnmeasured

    if offline or settings.executor != "local":
        raise ConfigError("--budget-usd keeps a run that calls a model on the local executor within a sum")
    judges = [str(j.get("name")) for task in tasks for j in task_judges(task)]
    budget = Budget(settings.budget_usd, settings.prices, display_name(model.describe()), judges)
    if run_dir is not None:
        from assay.store.sampleindex import index_samples, iter_dicts

        try:
            for _, record in iter_dicts(index_samples(run_dir)):
                budget.observe(record)
        except (BudgetSpent, BudgetUnmeasured) as err:  # spent already, or not measurable: nothing more may run
            raise ConfigError(str(err)) from None
    budget.estimate_run(work)
    return budget


def _gate(
    tasks: list[Task], settings: RunSettings, resumed: _Resumed, run_dir: Path | None, offline: bool, work: PendingWork
) -> Gate | None:
    """The ``--decide`` gate (None without one): checked before anything is written; a resumed run's records are
    replayed into it first, in the order written."""
    recorded = resumed.manifest.config if resumed.manifest is not None else {}
    if not (settings.decide or recorded.get("decide")):
        return None  # before importing the gate: it brings numpy, which a run's first request must not wait for
    from assay.runner.decide import make_gate

    prior: list[dict[str, Any]] = []
    if run_dir is not None:
        from assay.store.sampleindex import index_samples, iter_dicts

        prior = [rec for _, rec in iter_dicts(index_samples(run_dir))]

    def selected(name: str) -> int:
        return sum(1 for task, _ in work if task.name == name) + sum(1 for task, _ in resumed.done if task == name)

    return make_gate(tasks, settings, recorded=recorded, offline=offline, selected=selected, prior=prior)


def _scan_ahead(run_dir: Path, manifest: RunManifest, settings: RunSettings) -> ScanAhead | None:
    """The results scan an offline run on this machine makes as it scores (a new folder: every line of
    samples.jsonl is one it scores), so the results need not read the file back."""
    if settings.executor != "local":
        return None
    from assay.results.scanahead import ScanAhead
    from assay.results.writer import results_options

    return ScanAhead(run_dir, manifest, results_options(**settings.results_options()))
