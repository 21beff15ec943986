"""Whether a metric has anything to check on a row: an evaluator a row gives nothing to check is *not applicable*
there (counted apart in results, never an error, never in that metric's denominator)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assay.errors import DataError

if TYPE_CHECKING:
    from assay.evaluators.base import Evaluator
    from assay.tasks import Sample, Task
    from assay.tasks.metrics import MetricSpec

# built-in evaluators whose verdict is a comparison with the expected value: without one there is nothing to check
# (the others judge an output alone, or read the expected value only when it is there)
COMPARES_EXPECTED = frozenset(
    {
        "exact_match",
        "fuzzy_match",
        "token_f1",
        "numeric",
        "json_match",
        "bleu",
        "chrf",
        "ter",
        "rouge",
        "rouge1",
        "rouge2",
        "rougeL",
        "rougeLsum",
        "semantic_similarity",
        "row_checks",
    }
)


def needs_expected(evaluator: Evaluator) -> bool:
    """True when ``evaluator`` has nothing to judge without an expected value: its own ``needs_expected`` attribute
    (any evaluator may declare it), else the built-in table; ``contains`` without fixed substrings and ``regex``
    comparing a group need one too."""
    declared = getattr(evaluator, "needs_expected", None)
    if isinstance(declared, bool):
        return declared
    name = evaluator.name
    if name in COMPARES_EXPECTED:
        return True
    options = getattr(evaluator, "options", None)
    if name == "contains":
        return not getattr(options, "substrings", None)
    if name == "regex":
        return getattr(options, "group", None) is not None
    return False


def expected_or_absent(task: Task, sample: Sample, metric: MetricSpec) -> tuple[Any, str | None]:
    """What ``metric`` compares ``sample``'s answers with, and None; or (None, why the metric is not applicable to
    this row): the field it reads is missing, or it compares with the target and the row has none."""
    if metric.expected == "target":
        if sample.target is None and needs_expected(metric.evaluator):
            return None, f"sample {sample.id!r} has no target for {metric.name!r} to compare with"
        return sample.target, None
    try:
        return task.expected_for(sample, metric), None
    except DataError as err:
        return None, str(err)
