"""Loading a task: the one call that turns a YAML task file or a config dict into a validated :class:`Task`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.tasks.task import Task


def load_task(source: str | Path | dict[str, Any]) -> Task:
    """A validated :class:`Task` from a YAML file path or a config dict (the dataset is read and checked)."""
    task = Task.from_config(source) if isinstance(source, dict) else Task.from_yaml(source)
    return task
