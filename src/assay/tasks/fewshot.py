"""Few-shot examples: fixed rows in order, or ``n`` drawn per sample with a seed that depends only on the
sample (so the same sample gets the same examples whatever the limit, order or process)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from assay.tasks.config import FewshotConfig
from assay.tasks.sample import Sample


class FewshotSampler:
    """Chooses the examples shown before each sample. With ``same=True`` the pool is the task's own samples
    (indexed by ``doc_id``) and a sample is never its own example."""

    def __init__(self, config: FewshotConfig, pool: Sequence[Sample], *, same: bool) -> None:
        self.config = config
        self.pool = pool
        self.same = same
        self.n = config.shots

    def available(self) -> int:
        """How many distinct examples one sample can draw from."""
        return len(self.pool) - 1 if self.same else len(self.pool)

    def select(self, sample: Sample) -> list[Sample]:
        """The examples for ``sample``: the first ``n`` fixed ones, or ``n`` drawn by ``Random(f"{seed}:{doc_id}")``."""
        if self.n == 0:
            return []
        if self.config.fixed is not None:
            return list(self.pool[: self.n])
        rng = random.Random(f"{self.config.seed}:{sample.doc_id}")
        size = len(self.pool)
        if not self.same:
            return [self.pool[i] for i in rng.sample(range(size), self.n)]
        drawn = rng.sample(range(size), min(self.n + 1, size))
        return [self.pool[i] for i in drawn if i != sample.doc_id][: self.n]


def shot_target(example: Sample) -> str:
    """The answer shown after a few-shot example: its target (the first one when it is a list), as text.

    Raises ValueError when the example has no target."""
    target = example.target
    if isinstance(target, list | tuple):
        target = target[0] if target else None
    if target is None:
        raise ValueError("a few-shot example needs a target, and this row has none")
    return target if isinstance(target, str) else str(target)


def example_context(example: Sample) -> dict[str, Any]:
    """The template variables of a few-shot example (as for a sample, with an empty ``fewshot``)."""
    return {
        **example.doc,
        "doc": example.doc,
        "input": example.input,
        "target": example.target,
        "metadata": example.metadata,
        "fewshot": [],
    }
