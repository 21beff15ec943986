"""Every assertion type promptfoo 0.123.1 knows, and what assay does with each: judged here (deterministic and
code checks), judged by the model-graded family (:mod:`assay.tasks.checks.graded`), or refused by name.

``PROMPTFOO_TYPES`` is promptfoo's ``BaseAssertionTypesSchema`` (the ``type`` enum of an assertion in its config
schema, vendored at tests/importers/promptfoo/config-schema-0.123.1.json) plus its special types; a test keeps
this list and the schema equal, and every type in one of the three tables."""

from __future__ import annotations

from functools import lru_cache

PROMPTFOO_TYPES: tuple[str, ...] = (
    "agent-rubric", "answer-relevance", "bleu", "classifier", "contains", "contains-all", "contains-any",
    "contains-html", "contains-json", "contains-sql", "contains-xml", "context-faithfulness", "context-recall",
    "context-relevance", "conversation-relevance", "cost", "equals", "factuality", "finish-reason", "g-eval", "gleu",
    "guardrails", "icontains", "icontains-all", "icontains-any", "is-html", "is-json", "is-refusal", "is-sql",
    "is-valid-function-call", "is-valid-openai-function-call", "is-valid-openai-tools-call", "is-xml", "javascript",
    "latency", "levenshtein", "llm-rubric", "pi", "meteor", "model-graded-closedqa", "model-graded-factuality",
    "moderation", "perplexity", "perplexity-score", "python", "regex", "rouge-n", "ruby", "similar", "similar:cosine",
    "similar:dot", "similar:euclidean", "starts-with", "tool-call-f1", "skill-used", "trajectory:goal-success",
    "trajectory:tool-args-match", "trajectory:step-count", "trajectory:tool-sequence", "trajectory:tool-used",
    "trace-error-spans", "trace-span-count", "trace-span-duration", "search-rubric", "webhook", "word-count",
)  # fmt: skip
SPECIAL_TYPES = ("select-best", "human", "max-score")  # compare a test's outputs across prompts/providers
ASSERT_SET = "assert-set"

# judged here (assay.tasks.checks.handlers): deterministic, text metrics, code, embeddings
DETERMINISTIC: frozenset[str] = frozenset(
    {
        "equals", "contains", "icontains", "contains-any", "icontains-any", "contains-all", "icontains-all",
        "starts-with", "regex", "is-json", "contains-json", "is-xml", "contains-xml", "is-sql", "contains-sql",
        "is-html", "contains-html", "levenshtein", "rouge-n", "bleu", "gleu", "word-count", "finish-reason",
        "is-refusal", "is-valid-openai-tools-call", "is-valid-openai-function-call", "tool-call-f1", "latency",
        "cost", "perplexity", "perplexity-score", "javascript", "python", "similar", "similar:cosine", "similar:dot",
        "similar:euclidean", "guardrails",
    }
)  # fmt: skip

_NO_TRACES = "promptfoo reads OpenTelemetry spans of the provider call; assay records no traces"
REFUSED: dict[str, str] = {
    "classifier": "runs a Hugging Face classification model through promptfoo's HF inference provider",
    "moderation": "calls OpenAI's (or Replicate's LlamaGuard) moderation API",
    "webhook": "posts each output to an HTTP endpoint the config names (a network call assay does not make)",
    "pi": "calls the Pi Labs hosted scorer",
    "ruby": "runs Ruby code; assay runs python and javascript checks only",
    "meteor": "needs the npm package 'natural' with WordNet, and promptfoo 0.123.1 itself fails on it "
    "('Invariant failed: PorterStemmer should be loaded'); use bleu, gleu or rouge-n",
    "is-valid-function-call": "asks the provider object to validate its own function call (Google/Vertex); use "
    "is-valid-openai-tools-call",
    "skill-used": "reads the skill calls of an agent SDK provider (Claude Agent SDK metadata)",
    "trajectory:goal-success": _NO_TRACES,
    "trajectory:tool-args-match": _NO_TRACES,
    "trajectory:step-count": _NO_TRACES,
    "trajectory:tool-sequence": _NO_TRACES,
    "trajectory:tool-used": _NO_TRACES,
    "trace-error-spans": _NO_TRACES,
    "trace-span-count": _NO_TRACES,
    "trace-span-duration": _NO_TRACES,
    "agent-rubric": "grades an agent's trajectory from the OpenTelemetry trace of the provider call; assay records "
    "no traces (use llm-rubric on the output)",
    "conversation-relevance": "grades each turn of a multi-turn conversation (the _conversation var), which assay's "
    "promptfoo tests do not keep",
    "search-rubric": "needs a grader with live web search",
    "max-score": "picks the best output among a test's prompts and providers; assay judges each output alone",
    "human": "is a human rating given in promptfoo's web viewer (use 'assay view --label')",
}


@lru_cache(maxsize=1)
def graded_types() -> frozenset[str]:
    """The model-graded types (:data:`assay.tasks.checks.graded.GRADED_TYPES`), or llm-rubric alone before that
    module exists (then judged by ``llm_judge``)."""
    try:
        from assay.tasks.checks.graded import GRADED_TYPES
    except ImportError:
        return frozenset({"llm-rubric"})
    return frozenset(GRADED_TYPES)


def base_type(kind: str) -> tuple[str, bool]:
    """``(base type, inverse)``: ``not-contains`` is ``contains`` inverted."""
    return (kind[4:], True) if kind.startswith("not-") else (kind, False)


def known_type(kind: str) -> bool:
    """True when assay judges this promptfoo assertion type (with or without ``not-``)."""
    base, _ = base_type(kind)
    return base == ASSERT_SET or base in DETERMINISTIC or base in graded_types()


def refusal(kind: str) -> str | None:
    """Why assay refuses this type, or None when it judges it (an unknown type says so)."""
    base, _ = base_type(kind)
    if known_type(kind):
        return None
    if base in REFUSED:
        return f"promptfoo's {base!r} assertion {REFUSED[base]}"
    if base in PROMPTFOO_TYPES or base in SPECIAL_TYPES:
        return f"promptfoo's {base!r} assertion is model-graded and not yet judged by assay"
    return f"{base!r} is not an assertion type of promptfoo 0.123.1"


UNSUPPORTED: tuple[str, ...] = tuple(REFUSED)  # the reader's CSV shorthands name these too
