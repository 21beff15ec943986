"""What a RAG metric reads for one sample: the answer, the question, the retrieved chunks and the reference."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from assay.errors import EvaluationInputError
from assay.evaluators.base import as_text
from assay.evaluators.judge.prompt import render_input


@dataclass(frozen=True)
class Material:
    """One sample as the judge sees it (every piece is untrusted text, delimited in the prompts)."""

    answer: str
    question: str | None
    contexts: list[str]
    reference: str | None

    def quoted(self, *more: str) -> list[str]:
        """Every text shown to the judge, so that a grade-like JSON copied from it is not read as the judge's."""
        return [self.answer, self.question or "", *self.contexts, self.reference or "", *more]


def question_of(context: Mapping[str, Any] | None, include: bool) -> str | None:
    """The task's input (the question) from the runner's sample context, when it is to be shown."""
    if not include or not context:
        return None
    value = context.get("input")
    if value is None:
        value = context.get("prompt")
    return render_input(value) or None


def contexts_of(context: Mapping[str, Any] | None, where: str, metric: str) -> list[str]:
    """The retrieved chunks at ``where`` (``doc.FIELD`` or ``metadata.FIELD``) of the sample, in retrieval order."""
    source, _, name = where.partition(".")
    container = (context or {}).get(source) or {}
    if not isinstance(container, Mapping) or name not in container:
        raise EvaluationInputError(f"{metric}: option context={where!r}, but the sample's {source} has no {name!r}")
    value = container[name]
    chunks = [value] if isinstance(value, str) else value
    if not isinstance(chunks, list | tuple):
        raise EvaluationInputError(
            f"{metric}: context {where!r} must be a list of chunks or a string, got {type(value).__name__}"
        )
    texts = [render_input(chunk) for chunk in chunks if chunk is not None]
    texts = [text for text in texts if text.strip()]
    if not texts:
        raise EvaluationInputError(f"{metric}: context {where!r} is empty: there is no retrieved context to judge with")
    return texts


def reference_of(expected: Any, metric: str) -> str:
    """The reference answer (``expected``, or its ``reference`` key); a metric that needs one errors without it."""
    value = expected.get("reference") if isinstance(expected, Mapping) else expected
    if isinstance(value, list | tuple):
        value = "\n".join(render_input(v) for v in value)
    text = render_input(value) if value is not None else ""
    if not text.strip():
        raise EvaluationInputError(
            f"{metric}: no reference answer to compare with (the metric's expected value is empty; set "
            "`expected: target` or `expected: doc.FIELD` on the metric)"
        )
    return text


def answer_of(actual: Any, metric: str) -> str:
    """The output under review as text."""
    return as_text(actual, metric)
