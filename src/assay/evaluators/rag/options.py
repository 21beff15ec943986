"""The options the RAG metrics share: one judge model, where the retrieved context is, the pass threshold."""

from __future__ import annotations

from pydantic import Field, field_validator

from assay.evaluators.judge.client import ModelSpec
from assay.evaluators.judge.options import JudgeCallOptions


class RagOptions(JudgeCallOptions):
    """Options of every RAG metric: the judge (one model) and how it is called, the pass threshold, the question."""

    model: ModelSpec = Field(  # one judge: the metrics count its per-claim verdicts
        description="the judge model spec (e.g. 'openai:gpt-4o' or {provider: openai, model: ..., base_url: ...}); "
        "never a secret (name an environment variable: api_key_env)"
    )
    pass_threshold: float = Field(
        default=0.5, ge=0.0, le=1.0, description="the score a verdict needs to pass (at least this)"
    )
    include_input: bool = Field(
        default=True, description="show the judge the task's input (the question) beside the material it checks"
    )


class ContextOptions(RagOptions):
    """Options of the RAG metrics that read the retrieved context."""

    context: str = Field(
        default="doc.contexts",
        description="where the retrieved context is: 'doc.FIELD' (a field of the dataset row) or 'metadata.FIELD' "
        "(of the sample's metadata); a list of chunks (strings, or objects shown as JSON) or one string. The judge "
        "reads it as its own delimited block, one per chunk, never as a reference answer",
    )

    @field_validator("context")
    @classmethod
    def _valid_context(cls, value: str) -> str:
        source, _, name = value.partition(".")
        if source in ("doc", "metadata") and name:
            return value
        raise ValueError("must be 'doc.<field>' or 'metadata.<field>', e.g. doc.contexts")
