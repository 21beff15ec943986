"""The graders of promptfoo's model-graded checks on assay's judge client: which model grades (promptfoo's provider
rules), with which settings, and the calls themselves (retried, counted and, when the run caches, answered from the
SQLite response cache, through :class:`~assay.evaluators.judge.client.JudgeModels`).

Which grader (promptfoo's ``getFinalTest`` and ``getGradingProvider``): the check's ``provider``, else the test's
``options.provider`` (``defaultTest.options`` merged in), else the default grader the caller passes. A provider is a
promptfoo id (``openai:[chat:]MODEL``, with ``apiBaseUrl``/``apiHost``/``OPENAI_BASE_URL`` as the reader maps it:
:func:`assay.tasks.importers.promptfoo.convert.model_spec`), ``{id, config}``, or a map by purpose (``{text: ...,
embedding: ...}``). Embeddings (answer-relevance) come from an embedding provider as in promptfoo:
``openai:embedding[s]:MODEL``, the map's ``embedding``, or, with no provider named at all, promptfoo's default
``text-embedding-3-large`` at the OpenAI base URL; a chat provider named for answer-relevance is refused as promptfoo
refuses it. Requests carry what promptfoo's OpenAI provider sends: ``temperature`` 0 and ``max_tokens`` 1024 (or
``OPENAI_TEMPERATURE``/``OPENAI_MAX_TOKENS``) unless the provider's config sets them; none of them for reasoning
models (``o1``/``o3``/``o4``/``gpt-5``); embeddings ``{input, model}``.
"""

from __future__ import annotations

import json
import math
import os
import threading
from dataclasses import dataclass, field
from typing import Any

from assay.errors import ConfigError
from assay.evaluators.judge.client import CallRecord, JudgeModels, LoopModels, check_spec
from assay.evaluators.judge.prompt import canonical
from assay.models.base import Message, Request, Response, Usage
from assay.models.cache import ResponseCache
from assay.models.openai_compat import OpenAIModel
from assay.models.retry import RetryPolicy
from assay.tasks.importers.promptfoo.providers import model_spec

DEFAULT_EMBEDDING = "openai:text-embedding-3-large"  # promptfoo's DefaultEmbeddingProvider
EMBEDDING_PREFIXES = ("openai:embedding:", "openai:embeddings:")
REASONING = ("o1", "o3", "o4", "gpt-5")
JSON_OBJECT: dict[str, Any] = {"type": "json_object"}


@dataclass(frozen=True)
class Grader:
    """One grading model: its assay spec, the params each request sends, and whether it embeds instead of chatting."""

    spec: Any
    params: dict[str, Any] = field(default_factory=dict)
    embedding: bool = False
    default: bool = False  # promptfoo's own default grader stands here (llm-rubric then asks for a JSON object)

    @property
    def key(self) -> str:
        """What tells graders apart (one set of judge models per key and event loop)."""
        return json.dumps([self.spec, self.embedding], sort_keys=True, default=str)

    @property
    def name(self) -> str:
        """The model's name, for messages and details."""
        if isinstance(self.spec, dict):
            return str(self.spec.get("model") or self.spec.get("name") or self.spec.get("provider"))
        return str(self.spec).partition(":")[2] or str(self.spec)

    def build(self) -> Any:
        """What :class:`JudgeModels` loads: the spec, or a fresh embeddings client."""
        if not self.embedding:
            return self.spec
        options = {k: v for k, v in self.spec.items() if k not in ("provider", "params")}
        return OpenAIEmbeddings(**options)


def _model_spec(provider: Any, where: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A promptfoo provider id or object as an assay model spec, by the reader's own rules."""
    return model_spec(provider, where)


def _params(model: str, generation: dict[str, Any], own: dict[str, Any] | None = None) -> dict[str, Any]:
    """What promptfoo's OpenAI chat provider sends besides the messages (the spec's own params win)."""
    own = own or {}
    params = {k: v for k, v in generation.items() if k not in own}
    if model.startswith(REASONING):
        params.pop("temperature", None)
        params.pop("max_tokens", None)
        return params
    if "temperature" not in own:
        params.setdefault("temperature", _env_number("OPENAI_TEMPERATURE", float, 0))
    if "max_tokens" not in own:
        params.setdefault("max_tokens", _env_number("OPENAI_MAX_TOKENS", int, 1024))
    return params


def _env_number(name: str, kind: type, default: Any) -> Any:
    raw = os.environ.get(name)
    try:
        return kind(raw) if raw not in (None, "") else default
    except ValueError:
        return default


def text_grader(provider: Any, default: Any, check_name: str) -> Grader:
    """The chat model that grades (``provider``: the check's or the test's, None for the default)."""
    if provider is None:
        if default is None:
            raise ConfigError(
                f"{check_name} needs a grader: set defaultTest.options.provider (or the check's provider)"
            )
        spec = check_spec(default, "judge")
        name = spec.get("model", "") if isinstance(spec, dict) else spec.partition(":")[2]
        own = spec.get("params") if isinstance(spec, dict) else None
        return Grader(spec, _params(str(name), {}, own), default=True)
    if isinstance(provider, dict) and provider.get("text"):  # a map by purpose (promptfoo looks here first)
        return text_grader(provider["text"], default, check_name)
    if isinstance(provider, dict) and not provider.get("id"):
        raise ConfigError(f"{check_name}: invalid provider definition for output type 'text': {provider!r}")
    if isinstance(provider, list):
        raise ConfigError(f"{check_name}: a provider is an object or a string, not a list: {provider!r}")
    spec, generation = _model_spec(provider, f"{check_name}: provider")
    if spec.get("provider") != "openai":
        raise ConfigError(f"{check_name}: provider {provider!r} cannot grade (it is no chat model)")
    return Grader(spec, _params(spec["model"], generation))


def embedding_grader(provider: Any, check_name: str) -> Grader:
    """The embedding model (promptfoo: an embedding provider, else its default one when none is named)."""
    if provider is None:
        spec, _ = _model_spec(DEFAULT_EMBEDDING, f"{check_name}: default embedding provider")
        return Grader(spec, embedding=True)
    if isinstance(provider, dict) and provider.get("embedding"):
        return embedding_grader(provider["embedding"], check_name)
    if isinstance(provider, dict) and not provider.get("id"):
        raise ConfigError(f"{check_name}: invalid provider definition for output type 'embedding': {provider!r}")
    ident = provider.get("id") if isinstance(provider, dict) else provider
    if not isinstance(ident, str) or not ident.startswith(EMBEDDING_PREFIXES):
        raise ConfigError(
            f"Provider {ident} is not a valid embedding provider for '{check_name}' (as promptfoo says: name one "
            "as openai:embedding:MODEL, or as {text: ..., embedding: ...})"
        )
    model = ident.split(":", 2)[2]
    renamed = {**provider, "id": f"openai:{model}"} if isinstance(provider, dict) else f"openai:{model}"
    spec, _ = _model_spec(renamed, f"{check_name}: embedding provider")
    return Grader(spec, embedding=True)


class OpenAIEmbeddings(OpenAIModel):
    """An OpenAI-compatible ``/embeddings`` endpoint as a model: the request's last message is embedded and the
    reply's text is the vector as JSON (so the response cache stores it like any reply)."""

    provider = "openai-embeddings"

    def __init__(self, model: str, **options: Any) -> None:
        super().__init__(model, **options)
        self._url = self._url.replace("/chat/completions", "/embeddings", 1)
        self._shown_url = self._shown_url.replace("/chat/completions", "/embeddings", 1)

    def payload(self, request: Request) -> dict[str, Any]:
        """promptfoo's body: ``{input, model}``."""
        return {"input": str(request.messages[-1].get("content", "")), "model": self.model}

    def _response(self, obj: Any, latency: float) -> Response:
        vector = obj["data"][0]["embedding"]
        if not isinstance(vector, list) or not all(isinstance(x, int | float) for x in vector):
            raise TypeError("the embedding is not a list of numbers")
        usage = obj.get("usage") or {}
        return Response(
            text=json.dumps(vector),
            usage=Usage(input_tokens=usage.get("prompt_tokens") or 0),
            latency_s=latency,
            model=obj.get("model"),
        )


class Graders:
    """Everything judge_graded builds, kept in the caller's cache dict: judge models per grader and event loop, the
    response cache (on when the run's cache switch is), and grading shared by several outputs (select-best)."""

    def __init__(self) -> None:
        self.policy = RetryPolicy(max_attempts=4, initial_backoff_s=0.5, timeout_s=60.0)
        self.run_cache: tuple[bool, str | None] = (False, None)
        self.shared: dict[str, Any] = {}  # select-best: one grading per test, whichever output asks first
        self._loops: dict[str, LoopModels] = {}
        self._formats: dict[str, dict[int, int]] = {}
        self._cache: ResponseCache | None = None
        self._lock = threading.Lock()

    def use_run_cache(self, enabled: bool, path: str | None) -> None:
        """Follow the run's cache switch (off by default) and its file."""
        wanted = (bool(enabled), None if path is None else str(path))
        if wanted != self.run_cache:
            self.close()
            self.run_cache = wanted

    def _response_cache(self) -> ResponseCache | None:
        if not self.run_cache[0]:
            return None
        with self._lock:
            if self._cache is None:
                self._cache = ResponseCache(self.run_cache[1])
            return self._cache

    async def models(self, grader: Grader) -> JudgeModels:
        """The grader's judge models in the running loop."""
        with self._lock:
            loops = self._loops.setdefault(grader.key, LoopModels())
            formats = self._formats.setdefault(grader.key, {})
        return await loops.get(lambda: JudgeModels([grader.build()], self.policy, self._response_cache(), formats))

    async def ask(
        self,
        grader: Grader,
        messages: list[Message],
        *,
        purpose: str,
        boundary: str | None,
        response_format: dict[str, Any] | None = None,
        repeat: int = 0,
    ) -> tuple[JudgeModels, CallRecord]:
        """One call (transport failures, after the retries, are the record's ``error``)."""
        models = await self.models(grader)
        record = await models.call(
            0,
            purpose=purpose,
            messages=messages,
            cache_messages=canonical(messages, boundary) if boundary else None,
            params=dict(grader.params),
            response_format=response_format,
            repeat=repeat,
        )
        return models, record

    async def embed(self, grader: Grader, text: str, repeat: int = 0) -> tuple[list[float] | None, CallRecord]:
        """The embedding of ``text`` (None when the call failed: the record says why)."""
        models, record = await self.ask(
            grader, [{"role": "user", "content": text}], purpose="embedding", boundary=None, repeat=repeat
        )
        if record.error is not None or not record.reply:
            record.error = record.error or "no embedding"
            return None, record
        try:
            vector = [float(x) for x in json.loads(record.reply)]
        except (ValueError, TypeError):
            record.error = f"the embedding is not a list of numbers: {record.reply[:80]!r}"
            return None, record
        if not all(math.isfinite(x) for x in vector):
            record.error = "the embedding holds a number that is not finite"
            return None, record
        models.commit(0, record)
        record.reply = f"<embedding of {len(vector)} numbers>"  # the vector stays out of the verdict's details
        return vector, record

    async def aclose(self) -> None:
        """Close the running loop's connections and the response cache."""
        for loops in list(self._loops.values()):
            await loops.aclose()
        self.close()

    def close(self) -> None:
        """Close the response cache."""
        with self._lock:
            cache, self._cache = self._cache, None
        if cache is not None:
            cache.close()
