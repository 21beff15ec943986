"""Re-score a run's logged responses with (possibly changed) evaluators, without calling any model."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.errors import ConfigError
from assay.record import RunManifest, SampleRecord
from assay.runner.rundir import SAMPLES, atomic_write_text, read_manifest, read_records, write_manifest
from assay.runner.scoring import score_sample
from assay.runner.session import RESULTS_OPTIONS, close_evaluators, task_judges

if TYPE_CHECKING:
    from assay.tasks import Sample, Task


def _sample_for(task: Task, record: SampleRecord, by_id: dict[str, Sample]) -> Sample:
    from assay.tasks import Sample

    found = by_id.get(record.sample_id)
    if found is not None:
        return found
    return Sample(
        doc_id=record.doc_id,
        id=record.sample_id,
        doc=record.doc,
        input=None,
        target=record.target,
        metadata=record.metadata,
    )


async def rescore(run_dir: Path, tasks: list[Task] | None = None, **results_options: Any) -> int:
    """Re-score every sample of ``run_dir`` (with ``tasks`` replacing same-named ones); returns the count.

    A replacement task may change filters and evaluators only: one whose requests differ (dataset, prompt,
    few-shot, generation parameters, tools, repeats) is refused, since the logged answers are not answers to it.
    Nothing is written until every sample is re-scored.
    """
    from assay.tasks import Task

    manifest = read_manifest(run_dir)
    by_name: dict[str, Task] = {info.name: Task.from_config(info.config) for info in manifest.tasks}
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
    try:
        return await _rescore(run_dir, manifest, by_name, results_options)
    finally:
        await close_evaluators(list(by_name.values()))


async def _rescore(
    run_dir: Path, manifest: RunManifest, by_name: dict[str, Task], results_options: dict[str, Any]
) -> int:
    from assay.results import write_results

    records = read_records(run_dir)
    samples_by_task: dict[str, dict[str, Sample]] = {
        name: {s.id: s for s in t.samples()} for name, t in by_name.items()
    }
    lines = []
    for record in records:
        task = by_name[record.task]
        sample = _sample_for(task, record, samples_by_task[record.task])
        filters, eval_seconds = await score_sample(
            task, sample, list(record.responses), list(record.response_errors), record.prompt
        )
        updated = record.model_copy(update={"filters": filters, "eval_seconds": eval_seconds, "task_hash": task.hash})
        lines.append(updated.model_dump_json())
    atomic_write_text(run_dir / SAMPLES, "".join(line + "\n" for line in lines))
    manifest.tasks = [
        by_name[info.name].info(info.n_selected).model_copy(update={"n_docs": info.n_docs}) for info in manifest.tasks
    ]
    manifest.judges = [judge for task in by_name.values() for judge in task_judges(task)]
    manifest.config = {**manifest.config, "rescored": True}
    write_manifest(run_dir, manifest)
    options: dict[str, Any] = {k: v for k, v in manifest.config.items() if k in RESULTS_OPTIONS}
    options.update(results_options)
    write_results(run_dir, **options)
    return len(records)
