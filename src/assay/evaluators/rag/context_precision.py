"""``context_precision``: whether the retrieved chunks that matter are ranked first.

Follows ragas' Context Precision (docs.ragas.io, "Context Precision"; DeepEval's ContextualPrecisionMetric computes
the same): the judge says of every retrieved chunk, in one call, whether it was useful in arriving at the reference
answer (``v_k`` ∈ {0, 1} at rank k), and the score is the mean of precision@k over the relevant ranks,

    Σ_k (precision@k × v_k) / (number of relevant chunks),   precision@k = relevant chunks in the top k / k,

so a relevant chunk buried under irrelevant ones lowers it, and no relevant chunk at all scores 0. With ``against:
response`` the chunks are judged against the answer instead (ragas' context precision without reference).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from assay.evaluators.rag.base import Asker, Measured, RagJudge
from assay.evaluators.rag.inputs import Material
from assay.evaluators.rag.options import ContextOptions
from assay.evaluators.rag.parse import read_verdicts, verdicts_schema
from assay.evaluators.rag.prompts import precision_messages
from assay.evaluators.registry import register
from assay.evaluators.text.common import cut, listing

VERDICTS = ("yes", "no")


class ContextPrecisionOptions(ContextOptions):
    """Options of context_precision."""

    against: Literal["reference", "response"] = Field(
        default="reference",
        description="what a chunk must be useful for: 'reference', the metric's expected answer (ragas with "
        "reference, DeepEval), or 'response', the output under review (ragas without reference)",
    )


def precision_at_relevant(relevant: list[bool]) -> float:
    """ragas' context precision: the mean over relevant ranks k of precision@k (0 when no chunk is relevant)."""
    hits, total = 0, 0.0
    for k, flag in enumerate(relevant, 1):
        if flag:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


@register("context_precision")
class ContextPrecision(RagJudge):
    """Mean precision@k over the ranks of the relevant retrieved chunks (ragas context precision)."""

    Options = ContextPrecisionOptions
    options: ContextPrecisionOptions
    definition = "ragas context precision: mean of precision@k over the ranks k of relevant chunks"
    item_key = "contexts"
    default_expected = "target"

    def reads_reference(self) -> bool:
        """The reference is read only when chunks are judged against it."""
        return self.options.against == "reference"

    async def measure(self, ask: Asker, material: Material) -> Measured:
        """Judge every chunk in one call and weigh the relevant ones by rank."""
        target = material.reference if material.reference is not None else material.answer
        verdicts = await ask(
            "judge_contexts",
            precision_messages(material.contexts, material.question, target, self.options.against),
            verdicts_schema(VERDICTS),
            lambda reply: read_verdicts(reply, len(material.contexts), VERDICTS, material.quoted()),
        )
        flags = [v.verdict == "yes" for v in verdicts]
        items = [
            {"rank": k, "context": cut(text, 300), "verdict": v.verdict, "relevant": ok, "reason": v.reason}
            for k, (text, v, ok) in enumerate(zip(material.contexts, verdicts, flags, strict=True), 1)
        ]
        last = max((k for k, ok in enumerate(flags, 1) if ok), default=len(flags))
        failing = [item for k, (item, ok) in enumerate(zip(items, flags, strict=True), 1) if not ok and k < last]
        if not any(flags):
            failing = items
        figures = {"relevant": sum(flags), "total": len(items)}
        return Measured(precision_at_relevant(flags), items, failing, figures)

    def describe(self, measured: Measured) -> tuple[str, str]:
        """Name the irrelevant chunks that were ranked above relevant ones (or that no chunk was relevant)."""
        ranks = listing([str(item["rank"]) for item in measured.failing], "and", 10)
        target = "the reference answer" if self.options.against == "reference" else "the answer"
        if not measured.figures["relevant"]:
            reason = f"none of the {len(measured.items)} retrieved chunks is useful for {target}"
            return f"{reason} ({self.threshold_text(measured.score)})", (
                f"Retrieve passages that hold what {target} needs: none of the retrieved chunks does."
            )
        reason = (
            f"chunks at rank {ranks} are not useful for {target} but are ranked above useful ones "
            f"({self.threshold_text(measured.score)})"
        )
        return reason, f"Rank the useful chunks first: the chunks at rank {ranks} are not useful for {target}."
