"""Importers: another tool's task files read into the same :class:`assay.tasks.Task` (nothing downstream knows
where a task came from)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.tasks import Task


def task_from_config(config: dict[str, Any]) -> Task:
    """A task rebuilt from the config run.json records: an lm-eval task from its lm-eval settings (lm-eval builds
    it again), any other through :meth:`Task.from_config`."""
    if "lmeval" in config:
        from assay.tasks.importers.lmeval.rebuild import rebuild

        return rebuild(config)
    from assay.tasks import Task

    return Task.from_config(config)
