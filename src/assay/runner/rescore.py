"""Re-score a run's logged responses with (possibly changed) evaluators, without calling any model."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.errors import ConfigError
from assay.record import SampleRecord
from assay.runner.rundir import SAMPLES, atomic_write_text, read_manifest, read_records, write_manifest
from assay.runner.scoring import score_sample
from assay.runner.session import RESULTS_OPTIONS

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
    """Re-score every sample of ``run_dir`` (with ``tasks`` replacing same-named ones); returns the count."""
    from assay.results import write_results
    from assay.tasks import Task

    manifest = read_manifest(run_dir)
    by_name: dict[str, Task] = {info.name: Task.from_config(info.config) for info in manifest.tasks}
    for task in tasks or []:
        if task.name not in by_name:
            raise ConfigError(f"task {task.name!r} is not part of the run {run_dir} (tasks: {', '.join(by_name)})")
        by_name[task.name] = task
    records = read_records(run_dir)
    samples_by_task: dict[str, dict[str, Sample]] = {}
    for name, task in by_name.items():
        try:
            samples_by_task[name] = {s.id: s for s in task.samples()}
        except Exception:  # the dataset may have moved since the run: fall back to the logged rows
            samples_by_task[name] = {}
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
    manifest.config = {**manifest.config, "rescored": True}
    write_manifest(run_dir, manifest)
    options: dict[str, Any] = {k: v for k, v in manifest.config.items() if k in RESULTS_OPTIONS}
    options.update(results_options)
    write_results(run_dir, **options)
    return len(records)
