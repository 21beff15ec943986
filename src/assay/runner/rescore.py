"""Re-score a run's logged responses with (possibly changed) evaluators, without calling any model.

The records are streamed from the run's ``samples.jsonl`` in chunks and scored by the offline scorer (evaluators'
batch paths), here or on Ray workers, so memory stays flat in the size of the run. By default the result is a new
run folder whose ``run.json`` names the run it came from (``rescored_from``); ``in_place`` rewrites the run itself,
under its lock, replacing ``samples.jsonl`` only once every sample is re-scored.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.errors import ConfigError, DataError
from assay.forking import default_processes
from assay.gcpause import gc_paused
from assay.record import RunManifest
from assay.runner.evaluatorhooks import close_evaluators, task_judges
from assay.runner.executors import EXECUTORS, RayOptions, require_ray
from assay.runner.executors.processes import can_fork
from assay.runner.executors.shards import encode, verdict_error
from assay.runner.lock import run_lock
from assay.runner.logged import LoggedLine, answered_from_record, iter_sample_lines_of
from assay.runner.offline import CHUNK, score_records
from assay.runner.pending import runs
from assay.runner.scheduler import RunStats
from assay.runner.session import new_run_dir
from assay.runner.settings import RESULTS_OPTIONS
from assay.store.rundir import SampleWriter, read_manifest, remove_leftovers, write_manifest
from assay.store.sampleindex import SAMPLES, iter_sample_lines

if TYPE_CHECKING:
    from assay.tasks import Sample, Task

_PARTIAL = ".samples.jsonl.rescoring"  # an in-place re-score writes here, then replaces samples.jsonl


@dataclass(frozen=True)
class Rescored:
    """Where the re-scored run is, how many samples it holds, and how many of them failed as ``assay run`` counts
    them (a logged model error, else an error verdict; a sample counts once), with the first of each."""

    run_dir: Path
    samples: int
    in_place: bool
    errors: int = 0
    evaluator_errors: int = 0
    first_error: str | None = None
    first_evaluator_error: str | None = None


_STR = rb'("(?:[^"\\]|\\.)*")'
_HEAD = re.compile(  # a record's first keys as SampleRecord.model_dump_json (or json.dumps) writes them
    rb'\{\s*"task"\s*:\s*' + _STR + rb'\s*,\s*"task_hash"\s*:\s*"[^"\\]*"\s*,\s*"doc_id"\s*:\s*(-?\d+)\s*,'
    rb'\s*"sample_id"\s*:\s*' + _STR
)


def _logged_lines(
    path: Path, by_name: dict[str, Task], samples: dict[str, Sequence[Sample]], size: int
) -> Iterator[tuple[Task, list[LoggedLine]]]:
    """:func:`_chunks` for Ray workers: the lines are sent unparsed (the workers parse them), the driver reads only
    each record's task, doc id and sample id, to find the task's sample (whose input is not logged)."""
    return runs(_tasked_lines(path, by_name, samples), size)


def _tasked_lines(
    path: Path, by_name: dict[str, Task], samples: dict[str, Sequence[Sample]]
) -> Iterator[tuple[Task, LoggedLine]]:
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.endswith(b"\n"):
                break  # torn tail: not a finished sample
            if raw.isspace():
                continue
            head = _HEAD.match(raw, 0, 4096)
            line: bytes | dict[str, Any] = raw
            if head is not None:
                name, doc_id, sample_id = _string(head.group(1)), int(head.group(2)), _string(head.group(3))
            else:  # written by something else: parsed here (a corrupt line is an error naming it)
                line = next(iter_sample_lines_of([raw], path, lineno))
                name, doc_id, sample_id = line.get("task"), line.get("doc_id", -1), str(line.get("sample_id"))
            task = by_name.get(str(name))
            if task is None:
                raise DataError(f"{path}:{lineno}: sample of task {name!r}, which run.json does not list")
            pool = samples[task.name]
            found = isinstance(doc_id, int) and 0 <= doc_id < len(pool) and pool[doc_id].id == sample_id
            yield task, (pool[doc_id] if found else None, line, lineno)


def _string(quoted: bytes) -> Any:
    """A JSON string literal's value (without the JSON parser when it has no escapes)."""
    return quoted[1:-1].decode("utf-8") if b"\\" not in quoted else json.loads(quoted)


def _chunks(path: Path, by_name: dict[str, Task]) -> Iterator[tuple[Task, list[dict[str, Any]]]]:
    """Logged records in file order, in runs of one task of at most CHUNK records."""

    def tasked() -> Iterator[tuple[Task, dict[str, Any]]]:
        for lineno, record in iter_sample_lines(path):
            task = by_name.get(str(record.get("task")))
            if task is None:
                raise DataError(f"{path}:{lineno}: sample of task {record.get('task')!r}, which run.json does not list")
            yield task, record

    return runs(tasked(), CHUNK)


@dataclass(frozen=True)
class _How:
    """Who scores the records: Ray workers (``ray`` given), else ``processes`` forked processes here."""

    ray: RayOptions | None
    processes: int


def _count(stats: RunStats, task: str, names: Sequence[str], scored: Any) -> None:
    """Count a scored chunk's failed samples in ``stats`` as the runner does (``scored``: its Scored)."""
    for name, model_error, evaluator_error in zip(names, scored.model_errors, scored.evaluator_errors, strict=True):
        if model_error is not None or evaluator_error is not None:
            stats.count_errors(f"{task}/{name}", model_error, evaluator_error)


async def _rescore_into(
    source: Path, writer: SampleWriter, by_name: dict[str, Task], how: _How, stats: RunStats
) -> int:
    """Score every logged record of ``source`` with ``by_name``'s tasks and append it to ``writer``: here (in forked
    worker processes when there is more than a chunk and the evaluators allow it), or on Ray workers fed shards of
    records; either way their encoded lines are appended here, the one writer, and their failures counted in
    ``stats``."""
    samples = {name: task.samples() for name, task in by_name.items()}
    if how.ray is not None:
        return await _rescore_on_ray(source, writer, by_name, samples, how.ray, stats)
    if how.processes > 1 and can_fork(list(by_name.values())):
        chunks = _logged_lines(source, by_name, samples, CHUNK)
        first = next(chunks, None)
        second = next(chunks, None) if first is not None else None
        if first is not None and second is not None:
            lines = chain([first, second], chunks)
            return await _rescore_in_processes(source, writer, by_name, lines, how.processes, stats)
    pending, count = _chunks(source, by_name), 0
    while True:
        with gc_paused():  # a chunk read, scored and freed before the GC is on again (see _rescore_next)
            done = await _rescore_next(pending, samples, writer, stats)
        if done is None:
            return count
        count += done


async def _rescore_next(
    chunks: Iterator[tuple[Task, list[dict[str, Any]]]],
    samples: dict[str, Sequence[Sample]],
    writer: SampleWriter,
    stats: RunStats,
) -> int | None:
    """Read, score and append the next chunk of logged records: how many (None when there are no more). Its
    objects are freed as this returns: were they alive when the GC is on again, its first collection would walk
    every one of them."""
    chunk = next(chunks, None)
    if chunk is None:
        return None
    task, records = chunk
    scored = await score_records(task, [answered_from_record(r, samples[task.name]) for r in records])
    writer.write_lines([encode(record) for record in scored])
    for record in scored:
        model_error = next((e for e in record.get("response_errors") or [] if e), None)
        evaluator_error = None if model_error is not None else verdict_error(record["filters"])
        if model_error is not None or evaluator_error is not None:
            stats.count_errors(f"{task.name}/{record.get('sample_id')}", model_error, evaluator_error)
    return len(records)


async def _rescore_in_processes(
    source: Path,
    writer: SampleWriter,
    by_name: dict[str, Task],
    chunks: Iterator[tuple[Task, list[LoggedLine]]],
    processes: int,
    stats: RunStats,
) -> int:
    from assay.runner.executors.processes import Done, ProcessPool
    from assay.runner.executors.shards import OfflineShard

    count = 0

    def write(chunk: OfflineShard, done: Done) -> None:
        nonlocal count
        writer.write_lines(done.scored.lines)
        count += len(done.scored.lines)
        _count(stats, chunk.task.name, [_name(chunk, i) for i in range(len(chunk.items))], done.scored)

    with ProcessPool(processes, list(by_name.values())) as pool:
        await pool.score((OfflineShard(task, lines, source=str(source)) for task, lines in chunks), write)
    return count


async def _rescore_on_ray(
    source: Path,
    writer: SampleWriter,
    by_name: dict[str, Task],
    samples: dict[str, Sequence[Sample]],
    options: RayOptions,
    stats: RunStats,
) -> int:
    from assay.runner.executors.ray_offline import OFFLINE_SHARD, OfflinePool
    from assay.runner.executors.shards import OfflineShard

    size = options.shard_size or OFFLINE_SHARD
    shards = (
        OfflineShard(task, lines, source=str(source)) for task, lines in _logged_lines(source, by_name, samples, size)
    )
    count = 0

    def write(shard: OfflineShard, scored: Any) -> None:
        nonlocal count
        writer.write_lines(scored.lines)
        count += len(scored.lines)
        _count(stats, shard.task.name, [_name(shard, i) for i in range(len(shard.items))], scored)

    async with OfflinePool(options, list(by_name.values()), max_response_chars=None, renders=False) as pool:
        await pool.score(shards, write)
    return count


def _name(shard: Any, i: int) -> str:
    """A logged line's sample id (as the task has it), else where the line is."""
    sample, _, lineno = shard.items[i]
    return str(sample.id) if sample is not None else f"line {lineno}"


def _tasks_for(run_dir: Path, manifest: RunManifest, tasks: list[Task] | None) -> dict[str, Task]:
    from assay.tasks.importers import task_from_config

    by_name: dict[str, Task] = {info.name: task_from_config(info.config) for info in manifest.tasks}
    given = {task.name for task in tasks or []}
    for info in manifest.tasks:
        if info.redacted and info.name not in given:  # its judge would call a URL whose key was never written
            raise ConfigError(
                f"{run_dir}/run.json records task {info.name!r} without the credentials in {', '.join(info.redacted)}; "
                f"give the task file again: assay score {run_dir} --task TASK.yaml"
            )
    for task in tasks or []:
        original = by_name.get(task.name)
        if original is None:
            raise ConfigError(f"task {task.name!r} is not part of the run {run_dir} (tasks: {', '.join(by_name)})")
        if task.request_hash != original.request_hash:
            raise ConfigError(
                f"task {task.name!r} asks different requests than the run {run_dir} did (its dataset, prompt, "
                "few-shot, generation parameters, tools or repeats changed); `assay score` only re-applies filters "
                "and evaluators to the logged answers: run the changed task again instead"
            )
        by_name[task.name] = task
    return by_name


def _updated(manifest: RunManifest, by_name: dict[str, Task]) -> RunManifest:
    updated = manifest.model_copy(deep=True)
    updated.tasks = [
        by_name[info.name].info(info.n_selected).model_copy(update={"n_docs": info.n_docs}) for info in manifest.tasks
    ]
    updated.judges = [judge for task in by_name.values() for judge in task_judges(task)]
    updated.config = {**manifest.config, "rescored": True}
    return updated


async def rescore(
    run_dir: Path,
    tasks: list[Task] | None = None,
    *,
    output_dir: Path | None = None,
    in_place: bool = False,
    executor: str = "local",
    ray: RayOptions | dict[str, Any] | None = None,
    processes: int | None = None,
    **results_options: Any,
) -> Rescored:
    """Re-score every sample of ``run_dir`` (with ``tasks`` replacing same-named ones) into a new run folder under
    ``output_dir`` (default: next to ``run_dir``), or with ``in_place`` into ``run_dir`` itself.

    ``executor="ray"`` scores shards of the records on Ray workers (``ray``: where and with what, as for a run);
    this process still reads and writes the run folders, so the records and results are the local executor's.
    Locally, ``processes`` forked worker processes score chunks of them (None: one per CPU, at most 8).

    A replacement task may change filters and evaluators only: one whose requests differ (dataset, prompt,
    few-shot, generation parameters, tools, repeats) is refused, since the logged answers are not answers to it.
    A re-score that fails leaves the original run untouched (and removes its half-written new folder).
    """
    if executor not in EXECUTORS:
        raise ConfigError(f"unknown executor {executor!r}; known: {', '.join(EXECUTORS)}")
    on_ray = RayOptions.model_validate(ray or {}) if executor == "ray" else None
    if on_ray is not None:
        require_ray()
    how = _How(on_ray, processes or default_processes())
    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir)
    by_name = _tasks_for(run_dir, manifest, tasks)
    options: dict[str, Any] = {k: v for k, v in manifest.config.items() if k in RESULTS_OPTIONS}
    options.update(results_options)
    try:
        if in_place:
            return await _in_place(run_dir, manifest, by_name, options, how)
        return await _new_folder(run_dir, manifest, by_name, options, output_dir, how)
    finally:
        await close_evaluators(list(by_name.values()))


async def _in_place(
    run_dir: Path, manifest: RunManifest, by_name: dict[str, Task], options: dict[str, Any], how: _How
) -> Rescored:
    from assay.results import write_results

    partial = run_dir / _PARTIAL
    stats = RunStats()
    with run_lock(run_dir, action="re-score"):
        remove_leftovers(run_dir)
        try:
            partial.unlink(missing_ok=True)
            with SampleWriter(partial) as writer:
                count = await _rescore_into(run_dir / SAMPLES, writer, by_name, how, stats)
            os.replace(partial, run_dir / SAMPLES)  # the old records stay whole until the new ones are complete
        finally:
            partial.unlink(missing_ok=True)
        write_manifest(run_dir, _updated(manifest, by_name))
        write_results(run_dir, processes=how.processes, **options)
    return _rescored(run_dir, count, True, stats)


async def _new_folder(
    run_dir: Path,
    manifest: RunManifest,
    by_name: dict[str, Task],
    options: dict[str, Any],
    output_dir: Path | None,
    how: _How,
) -> Rescored:
    from assay.results import write_results
    from assay.version import __version__

    target = new_run_dir(output_dir if output_dir is not None else run_dir.parent, list(by_name.values()))
    started = time.perf_counter()
    stats = RunStats()
    try:
        with run_lock(target, action="re-score into"):
            fresh = _updated(manifest, by_name)
            fresh.run_id, fresh.assay_version, fresh.created_at = target.name, __version__, time.time()
            fresh.status, fresh.finished_at, fresh.rescored_from = "running", None, str(run_dir.resolve())
            write_manifest(target, fresh)
            with SampleWriter(target / SAMPLES) as writer:
                count = await _rescore_into(run_dir / SAMPLES, writer, by_name, how, stats)
            fresh.status, fresh.finished_at = "finished", time.time()
            fresh.total_seconds = time.perf_counter() - started
            write_manifest(target, fresh)
            write_results(target, processes=how.processes, **options)
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)  # a half-written re-score is of no use; the original is intact
        raise
    return _rescored(target, count, False, stats)


def _rescored(run_dir: Path, count: int, in_place: bool, stats: RunStats) -> Rescored:
    return Rescored(
        run_dir, count, in_place, stats.errors, stats.evaluator_errors, stats.first_error, stats.first_evaluator_error
    )
