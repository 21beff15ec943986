"""``hallucination``: the share of the given contexts that the answer contradicts (lower is better).

Follows DeepEval's HallucinationMetric (deepeval.com/docs/metrics-hallucination): in one call the judge says of
every context whether the answer agrees with it (``yes``) or contradicts it (``no``); leaving a context's detail out
is no contradiction. The score is

    contradicted contexts / all contexts,

and a verdict passes when the score is at most ``pass_threshold`` (DeepEval's threshold, 0.5 by default). The
metric's figures are lower-is-better (``higher_is_better`` is false), which compare and the reports follow.
"""

from __future__ import annotations

from pydantic import Field

from assay.evaluators.rag.base import Asker, Measured, RagJudge
from assay.evaluators.rag.inputs import Material
from assay.evaluators.rag.options import ContextOptions
from assay.evaluators.rag.parse import read_verdicts, verdicts_schema
from assay.evaluators.rag.prompts import contradiction_messages
from assay.evaluators.registry import register
from assay.evaluators.text.common import clip, cut, listing

VERDICTS = ("yes", "no")


class HallucinationOptions(ContextOptions):
    """Options of hallucination."""

    pass_threshold: float = Field(
        default=0.5, ge=0.0, le=1.0, description="the highest share of contradicted contexts that passes (at most this)"
    )


@register("hallucination")
class Hallucination(RagJudge):
    """The share of the contexts the answer contradicts (DeepEval's hallucination); lower is better."""

    Options = HallucinationOptions
    options: HallucinationOptions
    definition = "DeepEval hallucination: contexts the answer contradicts / contexts"
    item_key = "contexts"
    higher_is_better = False

    def passes(self, score: float) -> bool:
        """At most the threshold passes: the score counts contradictions."""
        return score <= self.options.pass_threshold

    async def measure(self, ask: Asker, material: Material) -> Measured:
        """Judge the answer against every context in one call and count the contradicted ones."""
        verdicts = await ask(
            "judge_contradictions",
            contradiction_messages(material.answer, material.contexts, material.question),
            verdicts_schema(VERDICTS),
            lambda reply: read_verdicts(reply, len(material.contexts), VERDICTS, material.quoted()),
        )
        items = [
            {"rank": k, "context": cut(text, 300), "verdict": v.verdict, "contradicted": v.verdict == "no"}
            | {"reason": v.reason}
            for k, (text, v) in enumerate(zip(material.contexts, verdicts, strict=True), 1)
        ]
        failing = [item for item, v in zip(items, verdicts, strict=True) if v.verdict == "no"]
        figures = {"contradicted": len(failing), "total": len(items)}
        return Measured(len(failing) / len(items), items, failing, figures)

    def describe(self, measured: Measured) -> tuple[str, str]:
        """Name the contradicted contexts and why."""
        shown = [f"{item['rank']} ({clip(str(item['reason']), 160)})" for item in measured.failing]
        named = listing(shown, "and", 5)
        reason = (
            f"the answer contradicts {len(measured.failing)} of {len(measured.items)} contexts: {named} "
            f"({self.threshold_text(measured.score)})"
        )
        return reason, f"Correct what contradicts the given context: context {named}."
