"""Reductions: how a batch of verdicts becomes one number, and a sentence saying what was aggregated."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:  # numpy loads when scores are reduced, not when evaluators are imported (start-up time)
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float64]
    BoolArray = npt.NDArray[np.bool_]


def __getattr__(name: str) -> Any:
    """``FloatArray`` and ``BoolArray`` at run time, for code that names them outside annotations."""
    if name in ("FloatArray", "BoolArray"):
        import numpy as np
        import numpy.typing as npt

        alias = npt.NDArray[np.float64] if name == "FloatArray" else npt.NDArray[np.bool_]
        globals()[name] = alias
        return alias
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _is_array(value: object) -> TypeGuard[FloatArray]:
    """True for a numpy array (without importing numpy: no array exists before it is imported)."""
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.ndarray)


@dataclass(frozen=True, slots=True)
class Reduction:
    """A named aggregation over per-sample scores (errors already excluded)."""

    name: str
    purpose: str
    fn: Callable[[FloatArray, BoolArray], float | FloatArray]

    def __call__(self, scores: FloatArray, passed: BoolArray) -> float | FloatArray:
        return self.fn(scores, passed)


@dataclass(frozen=True, slots=True)
class Aggregate:
    """The result of reducing a batch: the value and what it means."""

    metric: str
    reduction: str
    value: float | FloatArray
    n_total: int
    n_scored: int
    n_errored: int
    explanation: str

    def __float__(self) -> float:
        if _is_array(self.value):
            raise TypeError(f"reduction {self.reduction!r} has no single value")
        return float(self.value)


def _nan_if_empty(name: str) -> Callable[[FloatArray, BoolArray], float]:
    """The numpy function ``name`` of the scores (looked up when first called), NaN when there are none."""

    def reduce(scores: FloatArray, passed: BoolArray) -> float:
        import numpy as np

        return float(getattr(np, name)(scores)) if scores.size else float("nan")

    return reduce


def _sum(scores: FloatArray, passed: BoolArray) -> float:
    import numpy as np

    return float(np.sum(scores))


def _pass_rate(scores: FloatArray, passed: BoolArray) -> float:
    import numpy as np

    return float(np.mean(passed)) if passed.size else float("nan")


REDUCTIONS: dict[str, Reduction] = {
    r.name: r
    for r in (
        Reduction("mean", "mean", _nan_if_empty("mean")),
        Reduction("sum", "summation", _sum),
        Reduction("min", "minimum", _nan_if_empty("min")),
        Reduction("max", "maximum", _nan_if_empty("max")),
        Reduction("none", "per-sample values (no reduction)", lambda s, p: s.copy()),
        Reduction("pass_rate", "share passing", _pass_rate),
    )
}


def get_reduction(name: str) -> Reduction:
    """Look a reduction up by name; an unknown name lists the known ones."""
    try:
        return REDUCTIONS[name]
    except KeyError:
        raise ValueError(f"unknown reduction {name!r}; known: {', '.join(sorted(REDUCTIONS))}") from None


def _format_value(value: float | FloatArray) -> str:
    if _is_array(value):
        return f"{value.size} values"
    if value != value:  # NaN
        return "undefined (nothing scored)"
    return f"{value:.6g}"


def reduce_scores(metric: str, scores: FloatArray, passed: BoolArray, reduction: str | Reduction = "mean") -> Aggregate:
    """Reduce scores (NaN marks an error verdict, which is excluded and counted, never scored as 0)."""
    import numpy as np

    red = reduction if isinstance(reduction, Reduction) else get_reduction(reduction)
    errored = np.isnan(scores)
    n_errored = int(errored.sum())
    ok = ~errored
    value = red(scores[ok], passed[ok])
    n_scored = int(ok.sum())
    unit = "pass/fail outcomes" if red.name == "pass_rate" else "scores"
    text = f"{red.purpose} of {metric} {unit} over {n_scored} samples: {_format_value(value)}"
    if n_errored:
        text += f" ({n_errored} errored sample{'s' if n_errored != 1 else ''} excluded)"
    return Aggregate(metric, red.name, value, int(scores.size), n_scored, n_errored, text)
