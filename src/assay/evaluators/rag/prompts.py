"""The RAG judges' prompts: every piece of material in its own boundary-delimited block (the answer, the question,
each retrieved chunk, the reference, the extracted claims), the judge's standing rules from
:func:`assay.evaluators.judge.prompt.system_message`, and a JSON reply asked for every item at once (one call)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from assay.evaluators.judge.prompt import canonical, delimit, new_boundary, system_message
from assay.models.base import Message


@dataclass(frozen=True)
class Prompt:
    """The messages of one judge call and the boundary they use (replaced by a placeholder in cache keys)."""

    messages: list[Message]
    boundary: str

    @property
    def cache_messages(self) -> list[Message]:
        """The messages with the random boundary replaced, so identical judgements share a cache key."""
        return canonical(self.messages, self.boundary)


def _prompt(texts: Sequence[str], build: list[str | tuple[str, str, str]]) -> Prompt:
    """A prompt from instruction strings and ``(heading, block name, text)`` material, delimited by a fresh tag."""
    boundary = new_boundary(texts)
    parts: list[str] = []
    for part in build:
        if isinstance(part, str):
            parts.append(part)
        else:
            heading, name, text = part
            parts.append(f"## {heading}\n" + delimit(text, boundary, name))
    return Prompt([system_message(boundary), {"role": "user", "content": "\n\n".join(parts)}], boundary)


def numbered(items: Sequence[str]) -> str:
    """Items as ``1. …`` lines, each on one line."""
    return "\n".join(f"{i}. {' '.join(item.split())}" for i, item in enumerate(items, 1))


def _question(question: str | None) -> list[str | tuple[str, str, str]]:
    return [("The question the response answers", "question", question)] if question else []


def _chunks(contexts: Sequence[str]) -> list[str | tuple[str, str, str]]:
    return [(f"Retrieved context, chunk {k}", f"context {k}", text) for k, text in enumerate(contexts, 1)]


VERDICTS_REPLY = (
    'Reply with one JSON object and nothing else: {"verdicts": [{"index": <item number>, "verdict": <verdict>, '
    '"reason": "<one sentence>"}, ...]}, with exactly one verdict for every numbered item, in order.'
)


def extract_messages(what: str, answer: str, question: str | None) -> Prompt:
    """Ask for the atomic claims (faithfulness) or statements (answer relevancy) the response makes."""
    ask = (
        f"## Your task\nBreak the response into its {what}: short, self-contained sentences, each making one "
        "point, with pronouns replaced by what they stand for, so that each can be checked on its own. Keep only "
        "what the response itself asserts; leave out greetings, filler and questions. Do not add anything."
    )
    reply = f'## Your answer\nReply with one JSON object and nothing else: {{"{what}": ["<one>", "<two>", ...]}}.'
    return _prompt([answer, question or ""], [ask, *_question(question), ("The response", "response", answer), reply])


def faithfulness_messages(claims: Sequence[str], contexts: Sequence[str], question: str | None) -> Prompt:
    """Ask whether each claim can be inferred from the retrieved context (ragas' and DeepEval's claim verdicts)."""
    ask = (
        "## Your task\nFor each numbered claim, decide from the retrieved context alone (not from your own "
        'knowledge) whether the claim can be inferred from it: "yes" if the context supports it, "no" if the '
        'context contradicts it, "idk" if the context does not say. Give the reason in one sentence.'
    )
    material = [*_question(question), *_chunks(contexts), ("The claims to check", "claims", numbered(claims))]
    return _prompt([*claims, *contexts, question or ""], [ask, *material, "## Your answer\n" + VERDICTS_REPLY])


def relevancy_messages(statements: Sequence[str], question: str) -> Prompt:
    """Ask whether each statement of the response addresses the question (DeepEval's answer relevancy)."""
    ask = (
        "## Your task\nFor each numbered statement of a response, decide whether it is relevant to answering the "
        'question: "yes" if it helps answer it, "no" if it is irrelevant to it, "idk" if it is ambiguous '
        "(supporting information that is neither). Give the reason in one sentence."
    )
    material = [*_question(question), ("The statements to judge", "statements", numbered(statements))]
    return _prompt([*statements, question], [ask, *material, "## Your answer\n" + VERDICTS_REPLY])


def precision_messages(contexts: Sequence[str], question: str | None, target: str, against: str) -> Prompt:
    """Ask whether each retrieved chunk was useful in arriving at ``target`` (the reference, or the response)."""
    name = "reference answer" if against == "reference" else "response"
    ask = (
        "## Your task\nFor each numbered chunk of retrieved context, decide whether it was useful in arriving at "
        f'the {name} to the question: "yes" if it holds information the {name} uses, "no" if it does not. '
        "Judge each chunk on its own. Give the reason in one sentence."
    )
    material = [*_question(question), *_chunks(contexts), (f"The {name}", name, target)]
    return _prompt([*contexts, question or "", target], [ask, *material, "## Your answer\n" + VERDICTS_REPLY])


def recall_messages(reference: str, contexts: Sequence[str], question: str | None) -> Prompt:
    """Ask to split the reference into statements and say of each whether the context supports it (ragas)."""
    ask = (
        "## Your task\nBreak the reference answer into its statements (short, self-contained sentences, one point "
        "each), and for each decide whether it can be attributed to the retrieved context: "
        '"yes" if the context contains the information, "no" if it does not. Give the reason in one sentence.'
    )
    reply = (
        '## Your answer\nReply with one JSON object and nothing else: {"statements": [{"statement": "<text>", '
        '"verdict": "yes" | "no", "reason": "<one sentence>"}, ...]}, covering the whole reference answer.'
    )
    material = [*_question(question), *_chunks(contexts), ("The reference answer", "reference answer", reference)]
    return _prompt([reference, *contexts, question or ""], [ask, *material, reply])


def contradiction_messages(answer: str, contexts: Sequence[str], question: str | None) -> Prompt:
    """Ask whether the response agrees with or contradicts each context (DeepEval's hallucination verdicts)."""
    ask = (
        "## Your task\nFor each numbered context, decide whether the response agrees with it: "
        '"yes" if the response agrees with the context or does not speak of it, "no" if the response contradicts '
        "it. Missing detail is not a contradiction. Give the reason in one sentence."
    )
    material = [*_question(question), *_chunks(contexts), ("The response", "response", answer)]
    return _prompt([answer, *contexts, question or ""], [ask, *material, "## Your answer\n" + VERDICTS_REPLY])
