"""``context_recall``: the share of the reference answer that the retrieved context supports.

Follows ragas' Context Recall (docs.ragas.io, "Context Recall", LLMContextRecall; DeepEval's ContextualRecallMetric
computes the same from the expected output): in one call the judge breaks the reference answer into statements and
says of each whether it can be attributed to the retrieved context, and the score is

    reference statements attributable to the context / statements in the reference.

The reference is the metric's expected value (``expected: target`` by default, or ``expected: doc.FIELD``); a
reference the judge finds no statement in is an error verdict (ragas gives NaN), never a zero.
"""

from __future__ import annotations

from assay.evaluators.judge.parse import JudgeReplyError
from assay.evaluators.rag.base import Asker, Measured, RagJudge
from assay.evaluators.rag.inputs import Material
from assay.evaluators.rag.options import ContextOptions
from assay.evaluators.rag.parse import Classified, classified_schema, read_classified
from assay.evaluators.rag.prompts import recall_messages
from assay.evaluators.registry import register

VERDICTS = ("yes", "no")


class ContextRecallOptions(ContextOptions):
    """Options of context_recall."""


@register("context_recall")
class ContextRecall(RagJudge):
    """The share of the reference answer's statements the retrieved context supports (ragas context recall)."""

    Options = ContextRecallOptions
    options: ContextRecallOptions
    definition = "ragas context recall: reference statements attributable to the retrieved context / statements"
    item_key = "statements"
    needs_reference = True
    default_expected = "target"

    async def measure(self, ask: Asker, material: Material) -> Measured:
        """Split the reference and attribute every statement in one call."""

        def read(reply: str | None) -> list[Classified]:
            found = read_classified(reply, VERDICTS, material.quoted())
            if not found:
                raise JudgeReplyError("the judge found no statement in the reference answer")
            return found

        statements = await ask(
            "attribute_reference",
            recall_messages(material.reference or "", material.contexts, material.question),
            classified_schema(VERDICTS),
            read,
        )
        items = [
            {"statement": s.statement, "verdict": s.verdict, "attributed": s.verdict == "yes", "reason": s.reason}
            for s in statements
        ]
        attributed = sum(s.verdict == "yes" for s in statements)
        failing = [item for item, s in zip(items, statements, strict=True) if s.verdict != "yes"]
        return Measured(attributed / len(items), items, failing, {"attributed": attributed, "total": len(items)})

    def describe(self, measured: Measured) -> tuple[str, str]:
        """Name the reference statements the retrieved context lacks."""
        reason, named = self.counted(measured, "statements of the reference answer are not in the context", "statement")
        return reason, f"Retrieve passages that hold what the reference answer says but the context lacks: {named}."
