"""``answer_relevancy``: the share of the answer's statements that address the question.

Follows DeepEval's AnswerRelevancyMetric (deepeval.com/docs/metrics-answer-relevancy): the judge breaks the answer
into statements (one call), then says of every statement whether it is relevant to the input (one call for all),
and the score is

    relevant statements / all statements,

where an ``idk`` (ambiguous, supporting) statement counts as relevant, as DeepEval counts it (``unsure:
irrelevant`` counts it against the answer). ragas' answer relevancy (questions generated from the answer, compared
with the question by embedding cosine) is not used: it needs an embedding model and its score is no share of
anything a reader can check claim by claim. An answer with no statements scores 1, as in DeepEval.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from assay.errors import EvaluationInputError
from assay.evaluators.rag.base import Measured
from assay.evaluators.rag.inputs import Material
from assay.evaluators.rag.options import RagOptions
from assay.evaluators.rag.prompts import Prompt, relevancy_messages
from assay.evaluators.rag.statements import StatementJudge
from assay.evaluators.registry import register


class AnswerRelevancyOptions(RagOptions):
    """Options of answer_relevancy."""

    unsure: Literal["relevant", "irrelevant"] = Field(
        default="relevant",
        description="a statement the judge finds ambiguous ('idk'): 'relevant' counts it for the answer "
        "(DeepEval), 'irrelevant' against it",
    )


@register("answer_relevancy")
class AnswerRelevancy(StatementJudge):
    """The share of the answer's statements relevant to the question (DeepEval's answer relevancy)."""

    Options = AnswerRelevancyOptions
    options: AnswerRelevancyOptions
    definition = "DeepEval answer relevancy: statements relevant to the input / statements in the answer"
    item_key = "statements"
    judge_purpose = "judge_statements"
    flag = "relevant"

    def question(self, material: Material) -> str:
        """The question the statements must address: without one there is nothing to judge them by."""
        if material.question is None:
            raise EvaluationInputError(
                "answer_relevancy needs the task's input (the question): the sample has none, or include_input is false"
            )
        return material.question

    def judge_prompt(self, items: list[str], material: Material) -> Prompt:
        """Every statement judged against the question."""
        return relevancy_messages(items, self.question(material))

    def lenient(self) -> bool:
        """DeepEval counts an ambiguous (supporting) statement as relevant."""
        return self.options.unsure == "relevant"

    def describe(self, measured: Measured) -> tuple[str, str]:
        """Name the irrelevant statements in the reason and the feedback."""
        reason, named = self.counted(measured, "statements do not address the question", "statement")
        return reason, f"Leave out what does not answer the question: {named}. Answer the question that was asked."
