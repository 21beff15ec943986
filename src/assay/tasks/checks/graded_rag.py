"""answer-relevance and the context checks as promptfoo 0.123.1 judges them (``src/matchers/rag.ts``,
``src/assertions/context*.ts``, ragas' prompts): the same prompts, reply reading, scores (shares of statements,
sentences and context units; the mean cosine similarity of generated questions), thresholds (0.5) and reasons.

The context is the test's ``context`` var (a text, or a list of texts joined by blank lines), or what the check's
``contextTransform`` made of the output when the caller put that in ``vars["context"]``; context-recall falls back
to the prompt, as promptfoo does. A reply promptfoo marks a grader error (no statements, no verdicts, no
classifications, extracted sentences that quote nothing of the context) is an error verdict here.
"""

from __future__ import annotations

import math
import re
import sys
from typing import Any

from assay.tasks.checks.graded_job import GradedError, Job, Joined
from assay.tasks.checks.graded_prompts import (
    ANSWER_RELEVANCY_GENERATE,
    CONTEXT_FAITHFULNESS_LONGFORM,
    CONTEXT_FAITHFULNESS_NLI_STATEMENTS,
    CONTEXT_RECALL,
    CONTEXT_RECALL_ATTRIBUTED_TOKEN,
    CONTEXT_RECALL_NOT_ATTRIBUTED_TOKEN,
    CONTEXT_RELEVANCE,
    CONTEXT_RELEVANCE_BAD,
)
from assay.tasks.checks.graded_render import js_number, try_parse
from assay.verdict import Verdict

EPSILON = sys.float_info.epsilon  # JavaScript's Number.EPSILON
QUESTIONS = 3  # promptfoo generates three questions per answer
FINAL = "final verdict for each statement in order:"
CONTEXT_REQUIRED = (
    'Context is required for context-based assertions. Provide either a "context" variable (string or array of '
    'strings) in your test case or use "contextTransform" to extract context from the provider response.'
)


def to_fixed(x: float, digits: int = 2) -> str:
    """JavaScript's ``x.toFixed(digits)`` (a tie on the exact binary value rounds away from zero)."""
    from decimal import ROUND_HALF_UP, Decimal

    return str(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def _truthy(value: Any) -> bool:
    """JavaScript truthiness (an empty list or mapping is true there)."""
    return isinstance(value, list | dict) or bool(value)


def lines(text: str) -> list[str]:
    """promptfoo's ``splitIntoSentences``: the non-blank lines, as they are."""
    return [line for line in text.split("\n") if line.strip()]


def sentences(text: str) -> list[str]:
    """promptfoo's ``splitTextIntoSentences``: lines when there are several, else sentences; bare list markers
    dropped."""
    found = lines(text)
    parts = found if len(found) > 1 else re.split(r"(?<=[.!?])\s+", text)
    out = [p.strip() for p in parts]
    return [p for p in out if p and not re.fullmatch(r"\d+[.)]", p)]


def resolve_context(job: Job, fallback: str | None) -> str | list[str]:
    """promptfoo's ``resolveContext`` (the ``context`` var, else ``fallback``), checked as it checks it."""
    value: Any = None
    given = job.vars.get("context")
    if _truthy(given):
        if isinstance(given, str):
            value = given
        elif isinstance(given, list):
            for i, item in enumerate(given):
                if not isinstance(item, str):
                    kind = "object" if isinstance(item, dict | list) or item is None else type(item).__name__
                    raise GradedError(f"Invalid context: expected an array of strings, but found {kind} at index {i}")
            value = given
    elif fallback:
        value = fallback
    ok = (isinstance(value, str) and value) or (isinstance(value, list) and value and all(value))
    if not ok:
        raise GradedError(CONTEXT_REQUIRED)
    job.details["context"] = value
    return value


def _joined(context: str | list[str]) -> str:
    return "\n\n".join(context) if isinstance(context, list) else context


def _query(job: Job) -> str:
    query = job.vars.get("query")
    if not isinstance(query, str):
        raise GradedError(f'{job.kind} assertion requires a "query" variable with the user question')
    return query


def _share(job: Job, what: str, score: float, threshold: float, **extra: Any) -> Verdict:
    passed = score >= threshold - EPSILON
    reason = f"{what} {to_fixed(score)} is {'>=' if passed else '<'} {js_number(threshold)}"
    return job.verdict(score, passed, reason, threshold=threshold, **extra)


async def answer_relevance(job: Job) -> Verdict:
    """``matchesAnswerRelevance``: three questions generated from the output, each embedded beside the query (the
    ``query`` var, else the prompt); the score is their mean cosine similarity."""
    if not job.ctx.prompt:
        raise GradedError("answer-relevance assertion type must have a prompt")
    query = job.vars.get("query")
    source = query if isinstance(query, str) else job.ctx.prompt
    threshold = job.threshold(0.5)
    assert threshold is not None
    embedder = job.embedding_grader()
    grader = job.text_grader()
    template = job.rubric_prompt(ANSWER_RELEVANCY_GENERATE)
    answer = {"answer": try_parse(job.output)}
    questions = [
        await job.ask(grader, template, {}, answer, purpose="answer-relevance", repeat=i) for i in range(QUESTIONS)
    ]
    job.accept()
    vectors = []
    for i, text in enumerate([source, *questions]):
        vector, record = await job.graders.embed(embedder, text, repeat=0)
        job.calls.append(record)
        if vector is None:
            raise GradedError(f"the embedding of {'the query' if i == 0 else f'question {i}'} failed: {record.error}")
        vectors.append(vector)
    similarities = [_cosine(vectors[0], v) for v in vectors[1:]]
    score = sum(similarities) / len(similarities)
    passed = score >= threshold - EPSILON
    relation = "greater" if passed else "less"
    reason = f"Relevance {to_fixed(score)} is {relation} than threshold {js_number(threshold)}"
    scored = [{"question": q, "similarity": s} for q, s in zip(questions, similarities, strict=True)]
    return job.verdict(score, passed, reason, threshold=threshold, generated_questions=scored)


def _cosine(a: list[float], b: list[float]) -> float:
    if len(a) != len(b):
        raise GradedError("Vectors must be of equal length")
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return 0.0 if na == 0 or nb == 0 else dot / (na * nb)


async def context_faithfulness(job: Job) -> Verdict:
    """``matchesContextFaithfulness``: the grader writes the output's statements, then says of each whether the
    context supports it; the score is the supported share."""
    query = _query(job)
    context = resolve_context(job, None)
    threshold = job.threshold(0.5)
    assert threshold is not None
    rubric = job.grading.get("rubricPrompt")
    if rubric and not isinstance(rubric, list):
        raise GradedError("rubricPrompt must be an array")
    own = [r if isinstance(r, str) else (r or {}).get("content") for r in (rubric or [])]
    grader = job.text_grader()
    longform = job.rubric_prompt(CONTEXT_FAITHFULNESS_LONGFORM, (own[0] if own else None) or {})
    values = {**job.vars, "question": query}
    untrusted: dict[str, Any] = {"answer": try_parse(job.output)}
    reply = await job.ask(grader, longform, values, untrusted, purpose="context-faithfulness-longform")
    statements = lines(reply)
    if not statements:
        raise job.fail_reply("Could not extract context-faithfulness statements", reply)
    job.accept()
    nli = job.rubric_prompt(CONTEXT_FAITHFULNESS_NLI_STATEMENTS, (own[1] if len(own) > 1 else None) or {})
    untrusted = {"context": _joined(context), "statements": Joined(statements)}
    reply = await job.ask(grader, nli, dict(job.vars), untrusted, purpose="context-faithfulness-nli")
    verdicts = reply.lower().strip()
    score, parsed, n = 0.0, False, len(statements)
    if FINAL in verdicts:
        answers = [a for a in verdicts[verdicts.index(FINAL) + len(FINAL) :].split(".") if a.strip()]
        if answers and all(re.search(r"\b(?:yes|no)\b", a, re.ASCII) for a in answers):
            parsed = True
            score = 1 - (sum(1 for a in answers if "yes" not in a) + max(0, n - len(answers))) / n
    else:
        no, yes = verdicts.count("verdict: no"), verdicts.count("verdict: yes")
        if no + yes > 0:
            parsed = True
            score = 1 - (no + max(0, n - no - yes)) / n
    if not parsed:
        raise job.fail_reply("Could not parse context-faithfulness verdicts", reply)
    score = min(1.0, max(0.0, score))
    return _share(job, "Faithfulness", score, threshold, statements=statements)


async def context_recall(job: Job) -> Verdict:
    """``matchesContextRecall``: each sentence of the expected value classified as attributable to the context
    (the ``context`` var, else the prompt) or not; the score is the attributed share."""
    truth = job.value()
    if not isinstance(truth, str):
        raise GradedError("context-recall assertion requires a string value (expected answer or fact to verify)")
    if not job.ctx.prompt:
        raise GradedError("context-recall assertion requires a prompt")
    context = resolve_context(job, job.ctx.prompt)
    threshold = job.threshold(0.5)
    assert threshold is not None
    grader = job.text_grader()
    template = job.rubric_prompt(CONTEXT_RECALL)
    values = {**job.vars, "groundTruth": truth}
    reply = await job.ask(grader, template, values, {"context": _joined(context)}, purpose="context-recall")
    yes, no = CONTEXT_RECALL_ATTRIBUTED_TOKEN.lower(), CONTEXT_RECALL_NOT_ATTRIBUTED_TOKEN.lower()
    classified = [s for s in lines(reply) if yes in s.lower() or no in s.lower()]
    if not classified:
        raise job.fail_reply("Grader returned no [Attributed]/[Not Attributed] classifications", reply)
    attributions = []
    for sentence in classified:
        low = sentence.lower()
        attributed = no not in low and yes in low
        found = re.match(r"^\d+\.\s*([^\.]+\.)", sentence)
        clean = found.group(1).strip() if found else sentence.split(".")[0].strip()
        attributions.append({"sentence": clean, "attributed": attributed})
    score = sum(1 for a in attributions if a["attributed"]) / len(attributions)
    return _share(job, "Recall", score, threshold, sentence_attributions=attributions)


async def context_relevance(job: Job) -> Verdict:
    """``matchesContextRelevance``: the grader extracts the context's sentences needed for the query; the score is
    their share of the context's units (its lines, or its sentences when it is one block)."""
    query = _query(job)
    context = resolve_context(job, None)
    threshold = job.threshold(0.5)
    assert threshold is not None
    grader = job.text_grader()
    template = job.rubric_prompt(CONTEXT_RELEVANCE)
    text = _joined(context)
    reply = await job.ask(grader, template, {"query": query}, {"context": text}, purpose="context-relevance")
    segmented = isinstance(context, list) or len(lines(context)) > 1
    units = [c for c in context if c.strip()] if isinstance(context, list) else sentences(context)
    insufficient = CONTEXT_RELEVANCE_BAD in reply
    relevant = [] if insufficient else list(dict.fromkeys((lines if segmented else sentences)(reply)))
    numerator = min(len(relevant), len(units))
    score = numerator / len(units) if units else 0.0

    def normal(value: str) -> str:
        return re.sub(r"\s+", " ", value.lower()).strip()

    whole = normal(text)
    quoted = any(normal(re.sub(r"^\s*(?:\d+[.)]|[-*])\s*", "", s)) in whole for s in relevant)
    if not insufficient and relevant and not quoted:
        raise job.fail_reply("Grader output does not quote the provided context", reply)
    extra = {"extracted_sentences": relevant, "context_units": len(units), "insufficient_information": insufficient}
    return _share(job, "Context relevance", score, threshold, **extra)


__all__ = ["answer_relevance", "context_faithfulness", "context_recall", "context_relevance"]
