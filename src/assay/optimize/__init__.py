"""``assay optimize``: turn verdicts and their feedback into a better prompt, few-shot set or configuration.

Strategies (``reflective``, ``fewshot``, ``search``) propose candidate tasks; each candidate is evaluated as an
ordinary run on fixed, seeded splits; the best one on validation is compared with the original on the held-out
test split with ``assay compare``'s paired test. ``assay.optimize(...)`` is callable as a function too.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from assay.optimize.candidate import Candidate
from assay.optimize.driver import aoptimize, optimize
from assay.optimize.result import OptimizationResult
from assay.optimize.spec import OptimizeSpec

__all__ = ["Candidate", "OptimizationResult", "OptimizeSpec", "aoptimize", "optimize"]


class _CallableModule(types.ModuleType):
    """Lets ``assay.optimize(...)`` call :func:`optimize` even once the package itself is ``assay.optimize``."""

    def __call__(self, *args: Any, **kwargs: Any) -> OptimizationResult:
        return optimize(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
