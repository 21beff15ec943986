"""``faithfulness``: the share of the answer's claims that the retrieved context supports.

Follows ragas' Faithfulness (docs.ragas.io, "Faithfulness"): the judge breaks the answer into claims (one call), then
checks every claim against the retrieved context (one call for all of them), and the score is

    supported claims / all claims.

Each claim gets ``yes`` (the context supports it), ``no`` (it contradicts it) or ``idk`` (it does not say), as in
DeepEval's FaithfulnessMetric. ragas counts only supported claims; DeepEval counts every claim that is not
contradicted (an ``idk`` is faithful unless ``penalize_ambiguous_claims``): ``not_in_context: faithful`` gives
DeepEval's figure. An answer that makes no claim scores 1 (nothing in it is unfaithful), as DeepEval scores it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from assay.evaluators.rag.base import Measured
from assay.evaluators.rag.inputs import Material
from assay.evaluators.rag.options import ContextOptions
from assay.evaluators.rag.prompts import Prompt, faithfulness_messages
from assay.evaluators.rag.statements import StatementJudge
from assay.evaluators.registry import register


class FaithfulnessOptions(ContextOptions):
    """Options of faithfulness."""

    not_in_context: Literal["unsupported", "faithful"] = Field(
        default="unsupported",
        description="a claim the context neither supports nor contradicts: 'unsupported' counts it against the "
        "answer (ragas), 'faithful' counts only contradicted claims against it (DeepEval's default)",
    )


@register("faithfulness")
class Faithfulness(StatementJudge):
    """The share of the answer's claims that the retrieved context supports (ragas Faithfulness)."""

    Options = FaithfulnessOptions
    options: FaithfulnessOptions
    definition = "ragas faithfulness: claims supported by the retrieved context / claims in the answer"
    item_key = "claims"
    judge_purpose = "verify_claims"
    flag = "supported"

    def judge_prompt(self, items: list[str], material: Material) -> Prompt:
        """Every claim checked against the retrieved chunks."""
        return faithfulness_messages(items, material.contexts, material.question)

    def lenient(self) -> bool:
        """DeepEval counts a claim the context does not speak of as faithful."""
        return self.options.not_in_context == "faithful"

    def describe(self, measured: Measured) -> tuple[str, str]:
        """Name the unsupported claims in the reason and the feedback."""
        reason, named = self.counted(measured, "claims are not supported by the retrieved context", "claim")
        feedback = (
            f"Remove or correct the claims the retrieved context does not support: {named}. State only what the "
            "context says."
        )
        return reason, feedback
