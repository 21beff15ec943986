"""An lm-eval task rebuilt from the config run.json records (``{"name", "lmeval": {"settings", "task"}}``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assay.errors import ConfigError
from assay.tasks.importers.lmeval.settings import LmevalSettings


def rebuild(config: Mapping[str, Any]) -> Any:
    """The :class:`~assay.tasks.importers.lmeval.task.LmevalTask` a recorded config describes."""
    from assay.tasks.importers.lmeval.task import LmevalTask

    lm = config.get("lmeval")
    if not isinstance(lm, Mapping) or "settings" not in lm or "task" not in lm:
        raise ConfigError("an lm-eval task's config holds lmeval: {settings, task}")
    try:
        settings = LmevalSettings.model_validate(lm["settings"])
    except ValueError as err:
        raise ConfigError(f"lm-eval task {lm.get('task')!r}: recorded settings: {err}") from None
    return LmevalTask(settings, str(lm["task"]))
