"""Log-likelihood, the second model capability beside ``generate``: what a (context, continuation) pair costs.

A task whose ``output_type`` is ``multiple_choice``, ``loglikelihood`` or ``loglikelihood_rolling`` (lm-eval's
names and meanings) sends each sample as one :class:`~assay.models.base.Request` carrying a
:class:`~assay.models.base.LoglikelihoodQuery`; a :class:`LoglikelihoodModel` answers it with a Response whose
``metadata["loglikelihood"]`` holds one log-probability, greedy flag and token count per continuation
(:func:`scored_response`). The request goes through the scheduler, its retries, the response cache and resume like
any other, and the evaluators (``acc``, ``acc_norm``, perplexities: :mod:`assay.evaluators.loglikelihood`) read the
figures back from the logged response, so a run can be re-scored without the model.

A model without the capability (a chat endpoint returns text only) is refused before anything is sent
(:func:`check_capability`).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal, NamedTuple

from assay.errors import ConfigError, EvaluationInputError
from assay.models.base import LoglikelihoodQuery, Model, Request, Response, Usage

OutputType = Literal["generate_until", "multiple_choice", "loglikelihood", "loglikelihood_rolling"]
OUTPUT_TYPES: tuple[str, ...] = ("generate_until", "multiple_choice", "loglikelihood", "loglikelihood_rolling")
LOGLIKELIHOOD_KINDS: tuple[str, ...] = OUTPUT_TYPES[1:]
METADATA_KEY = "loglikelihood"
CAPABLE_PROVIDERS = (
    "hf:PATH_OR_NAME (a local checkpoint through transformers)",
    "vllm:PATH (vLLM's offline engine, assay[vllm])",
    "openai-completions:NAME (a server offering /v1/completions with echo and logprobs, e.g. vLLM or llama.cpp)",
)


class LoglikelihoodResult(NamedTuple):
    """One continuation's log-probability (natural log), whether every token was the greedy choice, its tokens."""

    logprob: float
    greedy: bool
    tokens: int


class LoglikelihoodModel:
    """A model that scores text as well as (or instead of) generating it.

    Mixed into a :class:`~assay.models.base.Model`: its ``generate`` answers a request carrying a query with
    :meth:`answer_loglikelihood`. One call scores one sample's pairs together, so a backend may compute their
    shared context once.
    """

    supports_loglikelihood: ClassVar[bool] = True

    @abstractmethod
    async def loglikelihood(self, pairs: Sequence[tuple[str, str]]) -> list[LoglikelihoodResult]:
        """Score each (context, continuation) pair, split at the token boundary as lm-eval does."""

    @abstractmethod
    async def loglikelihood_rolling(self, texts: Sequence[str]) -> list[LoglikelihoodResult]:
        """Score each whole text in disjoint rolling windows of the model's length (lm-eval's rolling windows)."""

    async def answer_loglikelihood(self, request: Request) -> Response:
        """The Response to a request carrying a query: the figures in ``metadata["loglikelihood"]``."""
        import time

        query = request.loglikelihood
        assert query is not None
        started = time.perf_counter()
        if query.kind == "loglikelihood_rolling":
            results = await self.loglikelihood_rolling(query.continuations)
        else:
            results = await self.loglikelihood(query.pairs())
        return scored_response(query, results, time.perf_counter() - started, model=getattr(self, "name", None))


def scored_response(
    query: LoglikelihoodQuery, results: Sequence[LoglikelihoodResult], latency_s: float = 0.0, model: str | None = None
) -> Response:
    """A Response holding ``results`` for ``query``: the text is the best-scored choice of a multiple-choice query."""
    n = len(query.continuations)
    if len(results) != n + len(query.unconditional or ()):
        raise ValueError(f"{len(results)} results for a query of {n} continuations")
    main = results[:n]
    figures: dict[str, Any] = {
        "kind": query.kind,
        "logprobs": [r.logprob for r in main],
        "greedy": [r.greedy for r in main],
        "tokens": [r.tokens for r in main],
    }
    text = None
    if query.kind == "multiple_choice":
        choices = list(query.choices if query.choices is not None else query.continuations)
        figures["choices"] = choices
        text = choices[first_argmax(figures["logprobs"])] if choices else None
        if query.unconditional is not None:
            figures["unconditional"] = [r.logprob for r in results[n:]]
    tokens = sum(r.tokens for r in results)
    return Response(
        text=text,
        usage=Usage(input_tokens=tokens),
        latency_s=latency_s,
        finish_reason="scored",
        model=model,
        metadata={METADATA_KEY: figures},
    )


def first_argmax(values: Sequence[float]) -> int:
    """The index of the largest value, the first on ties (numpy's argmax, as lm-eval picks)."""
    best = 0
    for i in range(1, len(values)):
        if values[i] > values[best]:
            best = i
    return best


def figures_of(value: Any) -> Mapping[str, Any]:
    """The log-likelihood figures of a scored Response (or its metadata dict); EvaluationInputError otherwise."""
    metadata = value.metadata if isinstance(value, Response) else value if isinstance(value, Mapping) else None
    if isinstance(metadata, Mapping) and METADATA_KEY not in metadata and isinstance(metadata.get("metadata"), Mapping):
        metadata = metadata["metadata"]  # a logged response read back as a dict
    figures = metadata.get(METADATA_KEY) if isinstance(metadata, Mapping) else None
    if not isinstance(figures, Mapping) or "logprobs" not in figures:
        raise EvaluationInputError(
            "no log-likelihoods to judge: this metric needs a task with output_type multiple_choice, loglikelihood "
            "or loglikelihood_rolling, answered by a model that scores text (hf, vllm, openai-completions)"
        )
    return figures


def can_score(model: Model) -> bool:
    """True when ``model`` answers log-likelihood queries."""
    return bool(getattr(model, "supports_loglikelihood", False))


def check_capability(model: Model, request: Request, where: str) -> None:
    """Raise ConfigError, before anything is sent, when ``request`` needs log-likelihoods ``model`` cannot give."""
    query = request.loglikelihood
    if query is None or can_score(model):
        return
    provider = getattr(model, "provider", type(model).__name__)
    raise ConfigError(
        f"{where}: output_type {query.kind} ranks text by its log-likelihood, which a {provider!r} model cannot give "
        "(a chat endpoint returns text only, without log-probabilities of a given text). Models that can: "
        + "; ".join(CAPABLE_PROVIDERS)
    )
