"""One async interface for models and agents: ``generate(Request) -> Response``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

Message = dict[str, Any]  # an OpenAI-style chat message: {"role": ..., "content": ..., ...}
LoglikelihoodKind = Literal["multiple_choice", "loglikelihood", "loglikelihood_rolling"]


class ToolCall(BaseModel):
    """One tool call made by a model or agent: its name, arguments and (for agents) what it returned."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    result: Any = None  # the tool's message content once executed; None for a declared-only tool
    error: str | None = None  # why the tool failed (raised, timed out), sent to the model as its message
    truncated_from: int | None = None  # the full length in characters when the result was cut (assay.agents)


class Usage(BaseModel):
    """Token counts of one request."""

    input_tokens: int = 0
    output_tokens: int = 0


class LoglikelihoodQuery(BaseModel):
    """What one sample asks a model to score.

    ``multiple_choice``: each of ``continuations`` (the target delimiter and a choice) after ``context``;
    ``choices`` are the choices as written (``acc_norm`` divides by their length in characters) and
    ``unconditional`` the continuations scored again after an empty context (for ``acc_mutual_info``).
    ``loglikelihood``: one continuation after the context. ``loglikelihood_rolling``: one whole text (the
    single continuation, no context), scored in rolling windows of the model's length.
    ``contexts``, when given, is one context per continuation (lm-eval's requests as its task built them, e.g. a
    partial-evaluation multiple choice: several contexts, one continuation); ``context`` is then unused.
    """

    model_config = ConfigDict(frozen=True)

    kind: LoglikelihoodKind
    context: str = ""
    continuations: tuple[str, ...]
    choices: tuple[str, ...] | None = None
    unconditional: tuple[str, ...] | None = None
    contexts: tuple[str, ...] | None = None

    def pairs(self) -> list[tuple[str, str]]:
        """Every (context, continuation) pair to score, the unconditional ones (empty context) last."""
        if self.kind == "loglikelihood_rolling":
            raise ValueError("a rolling query scores whole texts, not (context, continuation) pairs")
        if self.contexts is not None:
            if len(self.contexts) != len(self.continuations):
                raise ValueError(f"{len(self.contexts)} contexts for {len(self.continuations)} continuations")
            out = list(zip(self.contexts, self.continuations, strict=True))
        else:
            out = [(self.context, c) for c in self.continuations]
        out.extend(("", c) for c in self.unconditional or ())
        return out


class Request(BaseModel):
    """Everything sent to a model for one sample and one repeat."""

    model_config = ConfigDict(frozen=True)

    sample_id: str
    messages: list[Message]
    params: dict[str, Any] = Field(default_factory=dict)  # temperature, max_tokens, seed, …
    tools: list[dict[str, Any]] | None = None  # OpenAI tool schema
    response_format: dict[str, Any] | None = None
    repeat: int = 0
    doc: dict[str, Any] = Field(default_factory=dict)  # the dataset row, for Python agents
    metadata: dict[str, Any] = Field(default_factory=dict)
    # set for a task whose output_type scores text instead of generating it (assay.models.loglikelihood)
    loglikelihood: LoglikelihoodQuery | None = None


class Response(BaseModel):
    """What came back: text, tool calls, usage, latency, finish reason."""

    text: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    finish_reason: str | None = None
    model: str | None = None
    cached: bool = False
    cached_at: float | None = None  # when a cached answer was first written (epoch seconds); None if fresh
    truncated_from: int | None = None  # the full length in characters when the stored text was cut
    metadata: dict[str, Any] = Field(default_factory=dict)
    # agents (assay.agents; format in the docs' transcript page): the whole conversation in OpenAI chat format,
    # why the loop stopped, and the transcript index of each user message that opens a turn
    transcript: list[Message] = Field(default_factory=list)
    stop_reason: str | None = None
    turns: list[int] = Field(default_factory=list)


def display_name(described: dict[str, Any]) -> str:
    """The name to show for a model from its ``describe()`` dict (providers name it ``name`` or ``model``)."""
    return str(described.get("name") or described.get("model") or described.get("provider") or "model")


class ModelError(Exception):
    """A request failed. ``retryable`` for 429/5xx/connection errors/timeouts; ``retry_after`` in seconds.

    ``fatal`` marks an error every later request would repeat (a rejected key, a model that does not exist): the
    runner stops the run at the first one instead of sending the rest, and the unsent samples stay pending.
    ``status`` is the HTTP status, when there was one.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        retry_after: float | None = None,
        fatal: bool = False,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable and not fatal
        self.retry_after = retry_after
        self.fatal = fatal
        self.status = status


class Model(ABC):
    """A model, an agent or a file of predictions, answering requests asynchronously."""

    provider: ClassVar[str] = "model"
    cacheable: ClassVar[bool] = True  # False where answers are already stored (predictions)

    name: str

    @abstractmethod
    async def generate(self, request: Request) -> Response:
        """Answer one request; raise ModelError on failure (retryable where a retry may succeed)."""

    def identity(self) -> dict[str, Any]:
        """Everything about this model that changes its answers (never secrets): keys the cache."""
        return {"provider": self.provider, "name": self.name}

    def describe(self) -> dict[str, Any]:
        """What to record about the model in results (never secrets)."""
        return self.identity()

    def check_params(self, params: dict[str, Any], where: str) -> None:
        """Raise ConfigError when generation ``params`` (from ``where``, e.g. a task) cannot be sent to this model;
        called by the runner before a run starts. Unknown parameters pass (servers differ)."""

    def check(self) -> None:
        """Raise ConfigError when this model cannot answer at all (e.g. a hosted API and no key); called by the
        runner before a run writes anything, so a setup mistake is not paid for with a folder of failed samples."""

    async def aclose(self) -> None:
        """Release connections; called once by the runner when the run ends."""
