"""Evaluators: ``get(name, **options)`` builds one; ``register(name)`` adds your own."""

from assay.evaluators.base import BatchResult, Evaluator, Options
from assay.evaluators.registry import ENTRY_POINT_GROUP, get, get_class, names, register

__all__ = [
    "ENTRY_POINT_GROUP",
    "BatchResult",
    "Evaluator",
    "Options",
    "get",
    "get_class",
    "names",
    "register",
]
