"""The metrics that split the answer into statements and judge each one: faithfulness and answer relevancy.

Two judge calls per output, whatever its length: one extracts the claims (or statements), one judges them all and
returns a verdict for each (``yes``, ``no`` or ``idk``). The score is the share of items counted for the output:
``yes``, and ``idk`` too where the metric's option says so (DeepEval's leniency).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar

from assay.evaluators.rag.base import Asker, Measured, RagJudge
from assay.evaluators.rag.inputs import Material
from assay.evaluators.rag.parse import read_texts, read_verdicts, texts_schema, verdicts_schema
from assay.evaluators.rag.prompts import Prompt, extract_messages

VERDICTS = ("yes", "no", "idk")


class StatementJudge(RagJudge):
    """Extracts the answer's items (``item_key``: claims or statements), judges them in one call, counts them."""

    judge_purpose: ClassVar[str] = "judge_items"
    flag: ClassVar[str] = "counted"  # the per-item key that says whether the item counts for the output

    @abstractmethod
    def judge_prompt(self, items: list[str], material: Material) -> Prompt:
        """The prompt asking for a verdict on every item."""

    @abstractmethod
    def lenient(self) -> bool:
        """Whether an ``idk`` verdict counts for the output."""

    def question(self, material: Material) -> str | None:
        """The question shown while extracting (a metric that needs one raises when there is none)."""
        return material.question

    async def measure(self, ask: Asker, material: Material) -> Measured:
        """Extract the items, judge them all in one call, and count the ones for the output."""
        key = self.item_key
        question = self.question(material)
        texts = await ask(
            key,
            extract_messages(key, material.answer, question),
            texts_schema(key),
            lambda reply: read_texts(reply, key, material.quoted()),
        )
        if not texts:
            return Measured(1.0, [], figures={self.flag: 0, "total": 0}, note=f"the answer makes no {key}")
        verdicts = await ask(
            self.judge_purpose,
            self.judge_prompt(texts, material),
            verdicts_schema(VERDICTS),
            lambda reply: read_verdicts(reply, len(texts), VERDICTS, material.quoted(*texts)),
        )
        lenient = self.lenient()
        flags = [v.verdict == "yes" or (lenient and v.verdict == "idk") for v in verdicts]
        items = [
            {key[:-1]: text, "verdict": v.verdict, self.flag: ok, "reason": v.reason}
            for text, v, ok in zip(texts, verdicts, flags, strict=True)
        ]
        failing = [item for item, ok in zip(items, flags, strict=True) if not ok]
        return Measured(sum(flags) / len(items), items, failing, {self.flag: sum(flags), "total": len(items)})
