"""Choosing the executor of a run by its name; each is imported only when chosen (Ray's only with ``ray``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay.runner.executors import EXECUTORS, RayOptions

if TYPE_CHECKING:
    from assay.models.base import Model
    from assay.models.cache import ResponseCache
    from assay.runner.progress import RunProgress
    from assay.runner.scheduler import Scheduler, SchedulerConfig
    from assay.store.rundir import SampleWriter


def make_executor(
    name: str,
    model: Model,
    writer: SampleWriter,
    config: SchedulerConfig,
    *,
    cache: ResponseCache | None,
    progress: RunProgress,
    ray: RayOptions | None = None,
    offline: bool = False,
    processes: int | None = None,
) -> Scheduler:
    """The executor called ``name``, with the scheduler's interface (``run(work)``, ``stats``, ``cache_failures``).

    ``offline`` (the answers exist: a predictions run) goes through the chunked batch scorer: here, in
    ``processes`` forked worker processes (None: one per CPU), or on Ray workers fed shards of answered samples."""
    if name == "local":
        if offline:
            from assay.forking import default_processes
            from assay.runner.executors.processes import ProcessOfflineExecutor

            return ProcessOfflineExecutor(
                model, writer, config, cache=cache, progress=progress, processes=processes or default_processes()
            )
        from assay.runner.executors.local import LocalExecutor

        return LocalExecutor(model, writer, config, cache=cache, progress=progress)
    if name == "ray":
        if offline:
            from assay.runner.executors.ray_offline import RayOfflineExecutor

            return RayOfflineExecutor(
                model, writer, config, cache=cache, progress=progress, options=ray or RayOptions()
            )
        from assay.runner.executors.ray import RayExecutor

        return RayExecutor(model, writer, config, cache=cache, progress=progress, options=ray or RayOptions())
    raise ValueError(f"unknown executor {name!r}; known: {', '.join(EXECUTORS)}")
