"""Calling judge models: one model instance per event loop, retries, the response cache, and a record of each call.

An aiohttp session belongs to the loop that opened it, so each event loop (the runner's, or the private loop of a
synchronous ``evaluate``) gets its own judge models; the cache is shared, since it keeps one SQLite connection per
thread.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
import weakref
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.errors import ConfigError
from assay.models.base import Message, Model, ModelError, Request, Response
from assay.models.cache import ResponseCache
from assay.models.retry import RetryPolicy, call_with_retries
from assay.secrets import looks_secret

ModelSpec = str | dict[str, Any]
_REFUSED = re.compile(r"\bHTTP 4(?:00|22)\b")
JSON_MODE: dict[str, Any] = {"type": "json_object"}  # the middle level: any JSON object, no schema


def has_secret(spec: Any) -> bool:
    """True when a dict spec holds a key that looks like a secret (``api_key``, ``headers``, …; ``*_env`` is fine)."""
    return isinstance(spec, dict) and any(looks_secret(k) and not str(k).endswith("_env") for k in spec)


def check_spec(spec: Any, option: str) -> ModelSpec:
    """A judge model spec that is JSON-safe and holds no secret (an API key belongs in an environment variable)."""
    if isinstance(spec, str):
        if ":" not in spec:
            raise ConfigError(
                f"option {option!r}: model spec {spec!r} must look like 'provider:name', e.g. 'openai:gpt-4o'"
            )
        return spec
    if not isinstance(spec, dict) or not isinstance(spec.get("provider"), str):
        raise ConfigError(
            f"option {option!r}: a judge model is a spec string ('openai:gpt-4o') or a dict with a 'provider' key, "
            f"got {type(spec).__name__}"
        )
    for key in spec:
        if looks_secret(key) and not str(key).endswith("_env"):
            raise ConfigError(
                f"option {option!r}: the judge spec must not hold {key!r}; name an environment variable instead "
                "(e.g. api_key_env), so that no secret is written to configs or results"
            )
    return spec


@dataclass
class CallRecord:
    """One judge request and what came of it; kept in the verdict's details (never secrets)."""

    model: str
    purpose: str
    prompt: list[Message]
    reply: str | None = None
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 0, "output_tokens": 0})
    latency_s: float = 0.0
    cached: bool = False
    attempts: int = 0
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # grade, score, explanation, parse, order, …
    logprobs: Any = field(default=None, repr=False)  # the reply's token log-probabilities, when the server sent them
    pending: tuple[str, Response] | None = field(default=None, repr=False)  # cache key and response, until commit

    def to_dict(self) -> dict[str, Any]:
        """The JSON-safe form stored in ``details["judges"]``."""
        out: dict[str, Any] = {
            "model": self.model,
            "purpose": self.purpose,
            "usage": dict(self.usage),
            "latency_s": self.latency_s,
            "cached": self.cached,
            "attempts": self.attempts,
            **self.extra,
            "prompt": self.prompt,
            "reply": self.reply,
        }
        if self.error is not None:
            out["error"] = self.error
        return out


def summarize_calls(calls: Sequence[CallRecord]) -> dict[str, Any]:
    """``details["judge"]``: the judge model(s), summed usage and latency, and whether every call was cached."""
    names = list(dict.fromkeys(c.model for c in calls))
    return {
        "model": ", ".join(names),
        "usage": {
            "input_tokens": sum(c.usage["input_tokens"] for c in calls),
            "output_tokens": sum(c.usage["output_tokens"] for c in calls),
        },
        "latency_s": sum(c.latency_s for c in calls),
        "cached": bool(calls) and all(c.cached for c in calls),
        "calls": len(calls),
    }


class JudgeModels:
    """The judge models of one event loop, called with retries and the shared response cache."""

    def __init__(
        self,
        specs: Sequence[ModelSpec],
        policy: RetryPolicy,
        cache: ResponseCache | None,
        formats: dict[int, int] | None = None,
    ) -> None:
        from assay.models.registry import load_model

        self.models: list[Model] = [load_model(spec) for spec in specs]
        self.policy = policy
        self.cache = cache
        self.steps_lock = asyncio.Lock()
        self.closer: AsyncGenerator[None, None] | None = None
        # per judge, the first structured-output level its server took (see FORMAT_LEVELS); shared by the loops
        self.formats: dict[int, int] = formats if formats is not None else {}

    def name(self, index: int) -> str:
        """The judge model's name as recorded in details."""
        return str(getattr(self.models[index], "name", self.models[index].provider))

    def identity(self, index: int) -> dict[str, Any]:
        """What identifies the judge model (for memoised evaluation steps)."""
        return self.models[index].identity()

    async def call(
        self,
        index: int,
        *,
        purpose: str,
        messages: list[Message],
        cache_messages: list[Message] | None = None,
        params: dict[str, Any],
        response_format: dict[str, Any] | None,
        repeat: int = 0,
    ) -> CallRecord:
        """Ask judge ``index``; transport failures after the retries are recorded as the call's error.

        ``cache_messages`` key the cache in place of ``messages`` (the prompt with its random boundary replaced).
        Structured output degrades one level at a time: a server that refuses the JSON-schema ``response_format``
        (HTTP 400/422) is asked again in JSON mode (``{"type": "json_object"}``), and one that refuses that too is
        asked for plain text; the level that worked is remembered per judge, so later calls start there.
        """
        levels: list[dict[str, Any] | None] = [response_format, JSON_MODE, None] if response_format else [None]
        level = min(self.formats.get(index, 0), len(levels) - 1)
        refused: list[str] = []
        while True:
            fmt = levels[level]
            record = await self._call(index, purpose, messages, cache_messages, params, fmt, repeat)
            if fmt is None or record.error is None or not _REFUSED.search(record.error):
                break
            refused.append(record.error)
            level += 1
            self.formats[index] = max(self.formats.get(index, 0), level)
        record.extra["response_format"] = fmt["type"] if fmt is not None else "text"
        if refused:
            record.extra["response_format_refused"] = refused
        return record

    async def _call(
        self,
        index: int,
        purpose: str,
        messages: list[Message],
        cache_messages: list[Message] | None,
        params: dict[str, Any],
        response_format: dict[str, Any] | None,
        repeat: int,
    ) -> CallRecord:
        model = self.models[index]
        record = CallRecord(self.name(index), purpose, messages)
        request = Request(
            sample_id=f"judge:{purpose}",
            messages=messages,
            params=params,
            response_format=response_format,
            repeat=repeat,
        )
        key = None
        if self.cache is not None and model.cacheable:
            keyed = request.model_copy(update={"messages": cache_messages}) if cache_messages is not None else request
            key = self.cache.key(model, keyed)
            hit = self.cache.get(key)
            if hit is not None:
                record.reply, record.cached, record.latency_s = hit.text, True, 0.0
                record.logprobs = hit.metadata.get("logprobs")
                record.usage = {"input_tokens": hit.usage.input_tokens, "output_tokens": hit.usage.output_tokens}
                return record
        started = time.perf_counter()
        try:
            response, attempts = await call_with_retries(lambda: model.generate(request), self.policy)
        except ModelError as err:
            record.error = f"judge {record.model} failed: {err}"
            record.attempts = self.policy.max_attempts if err.retryable else 1
            record.latency_s = time.perf_counter() - started
            return record
        record.reply = response.text
        record.logprobs = response.metadata.get("logprobs")
        record.attempts = attempts
        record.latency_s = response.latency_s or (time.perf_counter() - started)
        record.usage = {"input_tokens": response.usage.input_tokens, "output_tokens": response.usage.output_tokens}
        if key is not None and response.text:
            record.pending = (key, response)
        return record

    def commit(self, index: int, record: CallRecord) -> None:
        """Cache a reply once it has been read successfully (an unreadable reply is asked again next time)."""
        if record.pending is not None and self.cache is not None:
            key, response = record.pending
            self.cache.put(key, response, model=self.models[index])
        record.pending = None

    async def aclose(self) -> None:
        """Close every judge model's connections."""
        for model in self.models:
            await model.aclose()


async def _close_at_loop_end(models: JudgeModels) -> AsyncGenerator[None, None]:
    """Suspended for the life of a loop; ``asyncio.run`` finalises it (``shutdown_asyncgens``) before the loop
    closes, which closes the judge models' connections even when nobody calls ``aclose``."""
    try:
        yield
    finally:
        await models.aclose()


class LoopModels:
    """Judge models per event loop: built on first use in a loop, closed by :meth:`aclose` or when the loop ends."""

    def __init__(self) -> None:
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, JudgeModels] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    async def get(self, build: Callable[[], JudgeModels]) -> JudgeModels:
        """The current loop's judge models, built with ``build()`` the first time."""
        loop = asyncio.get_running_loop()
        with self._lock:
            models = self._by_loop.get(loop)
            created = models is None
            if models is None:
                models = self._by_loop[loop] = build()
        if created:
            models.closer = _close_at_loop_end(models)
            await anext(models.closer)
        return models

    async def aclose(self) -> None:
        """Close and forget the current loop's judge models."""
        loop = asyncio.get_running_loop()
        with self._lock:
            models = self._by_loop.pop(loop, None)
        if models is None:
            return
        closer, models.closer = models.closer, None
        if closer is not None:
            await closer.aclose()  # runs its finally: closes the models
        else:
            await models.aclose()
