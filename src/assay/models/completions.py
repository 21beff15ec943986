"""The ``openai-completions`` provider: log-likelihoods (and text) from any server offering ``/v1/completions``.

For a scoring request the prompt (context and continuation) is sent with ``echo: true, logprobs: 1, max_tokens: 1,
temperature: 0``, as lm-eval's ``local-completions`` sends it, and the echoed prompt's per-token log-probabilities
give each continuation's log-likelihood; it is greedy when every token's log-probability is its position's top one.
One HTTP request carries a sample's pairs (a list prompt). vLLM's and llama.cpp's servers answer this.

With ``tokenizer`` (a local folder or hub name, read with ``transformers``), prompts are sent as token ids split at
lm-eval's token boundary, so the figures are lm-eval's; empty contexts and ``loglikelihood_rolling`` need it. Without
one, prompts are sent as text and the continuation starts at the first echoed token whose ``text_offset`` is at or
past the context's end (a token straddling the boundary counts with the context).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from assay.errors import ConfigError
from assay.models.base import ModelError, Request, Response, Usage
from assay.models.loglikelihood import LoglikelihoodModel, LoglikelihoodResult
from assay.models.openai_compat import OpenAIModel, _decode, _encode, _endpoint, split_credentials
from assay.secrets import redact_url

DEFAULT_MAX_LENGTH = 2048  # lm-eval's for API models


class CompletionsModel(LoglikelihoodModel, OpenAIModel):
    """A model behind an OpenAI-compatible ``/completions`` endpoint (the legacy, non-chat one).

    Options as the ``openai`` provider's, plus ``tokenizer`` (token-id prompts, lm-eval's exact split) and
    ``max_length`` (the server's context, default 2048, with lm-eval's API-model meaning: a scoring prompt holds at
    most ``max_length - 1`` tokens, as the server makes one more; a pair's context is cut from the left to fit, and a
    rolling window predicts ``max_length - 2`` tokens after one of context).
    """

    provider: ClassVar[str] = "openai-completions"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "http://127.0.0.1:8000/v1",
        api_key_env: str = "OPENAI_API_KEY",
        api_key: str | None = None,
        params: dict[str, Any] | None = None,
        timeout_s: float = 60.0,
        max_connections: int = 256,
        headers: dict[str, str] | None = None,
        tokenizer: str | None = None,
        max_length: int = DEFAULT_MAX_LENGTH,
        add_bos_token: bool | None = None,
        prefix_token_id: int | None = None,
    ) -> None:
        super().__init__(
            model,
            base_url=base_url,
            api_key_env=api_key_env,
            api_key=api_key,
            params=params,
            timeout_s=timeout_s,
            max_connections=max_connections,
            headers=headers,
        )
        if max_length < 3:  # a rolling window predicts max_length - 2 tokens: at least one
            raise ConfigError(f"openai-completions: 'max_length' must be >= 3, got {max_length!r}")
        local = Path(tokenizer).expanduser() if tokenizer else None
        self.tokenizer = str(local.resolve()) if local is not None and local.is_dir() else tokenizer
        self.max_length = max_length
        self.add_bos_token = add_bos_token
        self.prefix_token_id = prefix_token_id
        self._url, _ = split_credentials(_endpoint(self.base_url, "completions"))
        self._shown_url = redact_url(self._url)
        self._splitter: Any = None

    def __repr__(self) -> str:
        return f"CompletionsModel(model={self.model!r}, base_url={redact_url(self.base_url)!r})"

    def identity(self) -> dict[str, Any]:
        """The ``openai`` identity plus what changes the split: the tokenizer and its options, the window length."""
        return {
            **super().identity(),
            "tokenizer": self.tokenizer,
            "max_length": self.max_length,
            "add_bos_token": self.add_bos_token,
            "prefix_token_id": self.prefix_token_id,
        }

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), **self.identity()}

    @property
    def prompt_limit(self) -> int:
        """The most tokens a scoring prompt holds: ``max_length - 1``, one position kept for the generated token."""
        return self.max_length - 1

    def splitter(self) -> Any:
        """lm-eval's token splitter over ``tokenizer`` (loaded on first use), or None without one."""
        if self.tokenizer is None:
            return None
        if self._splitter is None:
            try:
                import transformers
            except ImportError:
                raise ConfigError(
                    "openai-completions: 'tokenizer' needs transformers: pip install 'assay[hf]'"
                ) from None
            from assay.models.hf import offline
            from assay.models.tokens import TokenSplitter

            try:
                loaded = transformers.AutoTokenizer.from_pretrained(self.tokenizer, local_files_only=offline())
                self._splitter = TokenSplitter(
                    loaded, add_bos_token=self.add_bos_token, prefix_token_id=self.prefix_token_id
                )
            except (OSError, ValueError) as err:
                raise ConfigError(f"openai-completions: cannot load tokenizer {self.tokenizer!r}: {err}") from None
        return self._splitter

    def check(self) -> None:
        """The API key (as ``openai``), and the tokenizer loads."""
        super().check()
        self.splitter()

    # -- requests ---------------------------------------------------------------------------------------------------

    async def _post(self, body: dict[str, Any]) -> Any:
        """POST ``body`` to the completions endpoint; the parsed JSON, or ModelError (retryable as ``openai``)."""
        import aiohttp

        loop = asyncio.get_running_loop()
        session = self._session if self._session_loop is loop and self._session is not None else self._open(loop)
        try:
            async with session.post(self._url, data=_encode(body).encode(), headers=self._headers) as resp:
                raw, status, headers = await resp.read(), resp.status, resp.headers
        except aiohttp.ServerDisconnectedError as err:
            msg = f"{self._shown_url}: the server closed the connection without a response"
            raise ModelError(msg, retryable=True) from err
        except TimeoutError as err:
            raise ModelError(f"{self._shown_url}: no response within {self.timeout_s:g}s", retryable=True) from err
        except aiohttp.ClientError as err:
            permanent = isinstance(err, aiohttp.InvalidURL | aiohttp.ClientSSLError)
            msg = self._redact(f"{self._shown_url}: {type(err).__name__}: {err}")
            raise ModelError(msg, retryable=not permanent) from err
        if not 200 <= status < 300:
            raise self._http_error(status, headers, raw)
        try:
            obj = _decode(raw)
        except ValueError:
            obj = None
        try:
            choices = sorted(obj["choices"], key=lambda c: c.get("index", 0))
        except (KeyError, TypeError, AttributeError) as err:
            raise self._not_a_completion(obj, raw, err) from None
        return obj, choices

    async def generate(self, request: Request) -> Response:
        """Score a log-likelihood query, else complete the prompt (a chat's messages joined by blank lines)."""
        if request.loglikelihood is not None:
            return await self.answer_loglikelihood(request)
        if request.tools:
            raise ModelError("openai-completions: the completions endpoint does not call tools; this task sends tools")
        messages = request.messages
        prompt = "\n\n".join(str(m.get("content") or "") for m in messages)
        body: dict[str, Any] = {"model": self.model, "prompt": prompt, **self.params}
        body.update({k: v for k, v in request.params.items() if v is not None})
        started = time.perf_counter()
        obj, choices = await self._post(body)
        try:
            choice = choices[0]
            usage = obj.get("usage") or {}
            return Response(
                text=choice.get("text"),
                usage=Usage(
                    input_tokens=usage.get("prompt_tokens") or 0, output_tokens=usage.get("completion_tokens") or 0
                ),
                latency_s=time.perf_counter() - started,
                finish_reason=choice.get("finish_reason"),
                model=obj.get("model"),
            )
        except (IndexError, AttributeError, ValidationError) as err:
            raise self._not_a_completion(obj, b"", err) from None

    def _scoring_body(self, prompts: list[Any]) -> dict[str, Any]:
        return {
            "model": self.model,
            "prompt": prompts,
            "temperature": 0,
            "max_tokens": 1,
            "logprobs": 1,
            "echo": True,
        }

    async def loglikelihood(self, pairs: Sequence[tuple[str, str]]) -> list[LoglikelihoodResult]:
        """Score one sample's pairs in one request: token ids with a tokenizer, else text and text offsets."""
        splitter = self.splitter()
        if splitter is None:
            return await self._by_text(pairs)
        split = splitter.pairs(pairs)
        for context, continuation in split:
            if not continuation:
                raise ModelError("openai-completions: a continuation has no tokens")
            over = len(context) + len(continuation) - self.prompt_limit
            if over > 0:  # lm-eval: the context is cut from the left
                context[:] = context[over:]
        return await self._by_tokens(split)

    async def loglikelihood_rolling(self, texts: Sequence[str]) -> list[LoglikelihoodResult]:
        """Score whole texts in lm-eval's disjoint rolling windows (token ids: needs ``tokenizer``)."""
        splitter = self.splitter()
        if splitter is None:
            raise ModelError(
                "openai-completions: loglikelihood_rolling cuts texts into windows of tokens; give the model's "
                "tokenizer (tokenizer: a folder or hub name)"
            )
        out = []
        for windows in splitter.rolling(texts, self.prompt_limit - 1):  # lm-eval: one position for the context
            if not windows:
                raise ModelError("openai-completions: a text to score has no tokens")
            scored = await self._by_tokens(windows)
            out.append(
                LoglikelihoodResult(
                    sum(r.logprob for r in scored), all(r.greedy for r in scored), sum(r.tokens for r in scored)
                )
            )
        return out

    async def _by_tokens(self, split: list[tuple[list[int], list[int]]]) -> list[LoglikelihoodResult]:
        _, choices = await self._post(self._scoring_body([c + k for c, k in split]))
        if len(choices) != len(split):
            raise ModelError(f"openai-completions: {len(choices)} choices answered {len(split)} prompts")
        return [self._figures(choice, len(c), len(k)) for choice, (c, k) in zip(choices, split, strict=True)]

    async def _by_text(self, pairs: Sequence[tuple[str, str]]) -> list[LoglikelihoodResult]:
        prompts, bounds = [], []
        for context, continuation in pairs:
            stripped = context.rstrip()
            if not stripped:
                raise ModelError(
                    "openai-completions: an empty context is scored after the prefix token; give the model's "
                    "tokenizer (tokenizer: a folder or hub name)"
                )
            prompts.append(context + continuation)
            bounds.append(len(stripped))
        _, choices = await self._post(self._scoring_body(prompts))
        if len(choices) != len(prompts):
            raise ModelError(f"openai-completions: {len(choices)} choices answered {len(prompts)} prompts")
        out = []
        for choice, prompt, bound in zip(choices, prompts, bounds, strict=True):
            offsets = (choice.get("logprobs") or {}).get("text_offset")
            if not isinstance(offsets, list):
                raise ModelError("openai-completions: the server sent no text_offset; give the model's tokenizer")
            start = next((i for i, o in enumerate(offsets) if o >= bound), len(offsets))
            stop = next((i for i, o in enumerate(offsets) if o >= len(prompt)), len(offsets))
            if stop <= start:
                raise ModelError("openai-completions: the continuation has no tokens of its own in the server's echo")
            out.append(self._figures(choice, start, stop - start))
        return out

    def _figures(self, choice: dict[str, Any], start: int, n: int) -> LoglikelihoodResult:
        """The continuation's figures from an echoed choice: tokens ``start`` to ``start + n``."""
        logprobs = choice.get("logprobs") or {}
        values = logprobs.get("token_logprobs")
        tops = logprobs.get("top_logprobs") or []
        if not isinstance(values, list) or len(values) < start + n:
            got = len(values) if isinstance(values, list) else 0
            raise ModelError(
                f"openai-completions: the server echoed log-probabilities for {got} tokens, fewer than the prompt's "
                f"{start + n} (does it support echo with logprobs?)"
            )
        scored = values[start : start + n]
        if any(not isinstance(v, int | float) for v in scored):
            raise ModelError("openai-completions: a continuation token has no log-probability in the echo")
        greedy = True
        for i, value in enumerate(scored):
            top = tops[start + i] if start + i < len(tops) else None
            if isinstance(top, dict) and top and value < max(top.values()):
                greedy = False
                break
        return LoglikelihoodResult(float(sum(scored)), greedy, n)
