"""Tasks: datasets, field mapping, prompt templates, few-shot, filters and metrics, from YAML or Python.

Names load lazily so that importing one submodule (e.g. ``assay.tasks.template``) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay.lazyexports import lazy_exports

_EXPORTS: dict[str, str] = {
    "Task": "assay.tasks.task",
    "Sample": "assay.tasks.sample",
    "FieldMap": "assay.tasks.fields",
    "MetricSpec": "assay.tasks.metrics",
    "FilterPipeline": "assay.tasks.filters",
    "FilterStep": "assay.tasks.filters",
    "register_step": "assay.tasks.filters",
    "build_step": "assay.tasks.filters",
    "load_task": "assay.tasks.loader",
    "ConfigContext": "assay.tasks.taskfile",
    "DatasetSpec": "assay.data.spec",
}

__all__ = [
    "ConfigContext",
    "DatasetSpec",
    "FieldMap",
    "FilterPipeline",
    "FilterStep",
    "MetricSpec",
    "Sample",
    "Task",
    "build_step",
    "load_task",
    "register_step",
]

if TYPE_CHECKING:
    from assay.data.spec import DatasetSpec
    from assay.tasks.fields import FieldMap
    from assay.tasks.filters import FilterPipeline, FilterStep, build_step, register_step
    from assay.tasks.loader import load_task
    from assay.tasks.metrics import MetricSpec
    from assay.tasks.sample import Sample
    from assay.tasks.task import Task
    from assay.tasks.taskfile import ConfigContext

__getattr__ = lazy_exports(__name__, _EXPORTS)
