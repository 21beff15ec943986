"""assay: evaluate the outputs of language models and agents.

The public API is re-exported here and loaded lazily, so ``import assay`` (and ``assay --help``) stays quick.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay.lazyexports import lazy_exports
from assay.version import __version__

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "Verdict": "assay.verdict",
    "Evaluator": "assay.evaluators.base",
    "BatchResult": "assay.evaluators.base",
    "Options": "assay.evaluators.base",
    "register": "assay.evaluators.registry",
    "ConfigError": "assay.errors",
    "DataError": "assay.errors",
    "AssayError": "assay.errors",
    "Request": "assay.models.base",
    "Response": "assay.models.base",
    "ToolCall": "assay.models.base",
    "Usage": "assay.models.base",
    "Model": "assay.models.base",
    "ModelError": "assay.models.base",
    "SampleRecord": "assay.record",
    "run": "assay.api",
    "arun": "assay.api",
    "RunFailed": "assay.api",
    "Task": "assay.tasks.task",
    "Sample": "assay.tasks.sample",
    "load_task": "assay.tasks.loader",
    "Run": "assay.results.loader",
    "load_run": "assay.results.loader",
    "compare_runs": "assay.results.compare",
    "load_model": "assay.models.registry",
    "optimize": "assay.optimize",
    "aoptimize": "assay.optimize",
    "OptimizationResult": "assay.optimize",
}

__all__ = ["__version__", "evaluators", *_EXPORTS]

if TYPE_CHECKING:
    from assay import evaluators
    from assay.api import RunFailed, arun, run
    from assay.errors import AssayError, ConfigError, DataError
    from assay.evaluators.base import BatchResult, Evaluator, Options
    from assay.evaluators.registry import register
    from assay.models.base import Model, ModelError, Request, Response, ToolCall, Usage
    from assay.models.registry import load_model
    from assay.optimize import OptimizationResult, aoptimize, optimize
    from assay.record import SampleRecord
    from assay.results.compare import compare_runs
    from assay.results.loader import Run, load_run
    from assay.tasks.loader import load_task
    from assay.tasks.sample import Sample
    from assay.tasks.task import Task
    from assay.verdict import Verdict

__getattr__ = lazy_exports(__name__, _EXPORTS, submodules={"evaluators"})
