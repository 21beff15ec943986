"""The ``vllm`` provider: vLLM's offline engine in this process, for GPU machines (``pip install 'assay[vllm]'``).

``vllm:PATH`` scores text from the prompt's log-probabilities (``prompt_logprobs``), as lm-eval's ``vllm`` backend
does, and generates. The engine batches and caches shared prefixes itself (``enable_prefix_caching``); requests from
the scheduler are handed to it in batches (:mod:`assay.models.batching`) from one worker thread. Raise
``--concurrency`` (e.g. 512) to give it more to batch.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar, Literal

from assay.errors import ConfigError
from assay.models.base import Model, ModelError, Request, Response, Usage
from assay.models.batching import MicroBatcher
from assay.models.loglikelihood import LoglikelihoodModel, LoglikelihoodResult

INSTALL_HINT = "pip install 'assay[vllm]' (needs a CUDA GPU)"
BATCH = 4096  # pairs handed to the engine at a time: it schedules them itself


class VLLMModel(LoglikelihoodModel, Model):
    """A checkpoint served by vLLM's offline ``LLM`` engine. ``max_length`` is vLLM's ``max_model_len`` (default:
    the model's); ``add_bos_token`` and ``prefix_token_id`` are lm-eval's options; other engine arguments go in
    ``engine`` (e.g. ``{"quantization": "awq"}``)."""

    provider: ClassVar[str] = "vllm"

    def __init__(
        self,
        pretrained: str,
        *,
        dtype: Literal["auto", "float32", "float16", "bfloat16"] = "auto",
        tensor_parallel_size: int = 1,
        gpu_memory_utilization: float = 0.9,
        max_length: int | None = None,
        tokenizer: str | None = None,
        revision: str | None = None,
        trust_remote_code: bool = False,
        add_bos_token: bool | None = None,
        prefix_token_id: int | None = None,
        enable_prefix_caching: bool = True,
        max_gen_toks: int = 256,
        seed: int = 1234,
        engine: dict[str, Any] | None = None,
        timeout_s: float = 3600.0,
        name: str | None = None,
    ) -> None:
        if max_length is not None and max_length < 3:  # a rolling window predicts max_length - 2 tokens
            raise ConfigError(f"vllm: 'max_length' must be >= 3, got {max_length!r}")
        local = Path(pretrained).expanduser()
        self.pretrained = str(local.resolve()) if local.is_dir() else pretrained
        self.tokenizer_name = tokenizer
        self.dtype = dtype
        self.tensor_parallel_size = tensor_parallel_size
        self.gpu_memory_utilization = gpu_memory_utilization
        self._max_length = max_length
        self.revision = revision
        self.trust_remote_code = trust_remote_code
        self.add_bos_token = add_bos_token
        self.prefix_token_id = prefix_token_id
        self.enable_prefix_caching = enable_prefix_caching
        self.max_gen_toks = max_gen_toks
        self.seed = seed
        self.engine = dict(engine or {})
        self.timeout_s = float(timeout_s)
        self.name = name or (local.name if local.is_dir() else pretrained)
        self._lock = threading.Lock()
        self._loaded: Any = None
        self._pool: ThreadPoolExecutor | None = None
        self._scoring: MicroBatcher[Any] | None = None
        self._generating: MicroBatcher[Any] | None = None

    def identity(self) -> dict[str, Any]:
        """What changes the figures: checkpoint, revision, dtype, tokenizer options, context length."""
        return {
            "provider": self.provider,
            "pretrained": self.pretrained,
            "revision": self.revision,
            "dtype": self.dtype,
            "tokenizer": self.tokenizer_name,
            "add_bos_token": self.add_bos_token,
            "prefix_token_id": self.prefix_token_id,
            "max_length": self._max_length,
        }

    def describe(self) -> dict[str, Any]:
        return {**self.identity(), "name": self.name, "tensor_parallel_size": self.tensor_parallel_size}

    def check(self) -> None:
        """Start the engine now, so a missing GPU or extra fails before the run writes anything."""
        self.loaded()

    def loaded(self) -> tuple[Any, Any, int]:
        """(engine, splitter, max_length), started on first use."""
        with self._lock:
            if self._loaded is None:
                self._loaded = self._load()
            loaded: tuple[Any, Any, int] = self._loaded
            return loaded

    def _load(self) -> tuple[Any, Any, int]:
        try:
            import vllm
        except ImportError:
            raise ConfigError(f"vllm models need vLLM: {INSTALL_HINT}") from None
        from assay.models.tokens import TokenSplitter

        options: dict[str, Any] = {
            "model": self.pretrained,
            "tokenizer": self.tokenizer_name or self.pretrained,
            "dtype": self.dtype,
            "tensor_parallel_size": self.tensor_parallel_size,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "trust_remote_code": self.trust_remote_code,
            "revision": self.revision,
            "seed": self.seed,
            "enable_prefix_caching": self.enable_prefix_caching,
            **self.engine,
        }
        if self._max_length is not None:
            options["max_model_len"] = self._max_length
        try:
            llm = vllm.LLM(**options)
        except Exception as err:  # no GPU, a bad path, an unsupported model: vLLM's own words
            raise ConfigError(
                f"vllm: cannot start the engine for {self.pretrained!r}: {type(err).__name__}: {err}"
            ) from None
        tokenizer = llm.get_tokenizer()
        splitter = TokenSplitter(tokenizer, add_bos_token=self.add_bos_token, prefix_token_id=self.prefix_token_id)
        max_length = int(self._max_length or llm.llm_engine.model_config.max_model_len)
        return llm, splitter, max_length

    def _batchers(self) -> tuple[MicroBatcher[Any], MicroBatcher[Any]]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="assay-vllm")
        if self._scoring is None or self._generating is None:
            self._scoring = MicroBatcher(
                self._score_jobs, size=lambda j: 0, rows=lambda j: len(j[1]), max_rows=lambda: BATCH, pool=self._pool
            )
            self._generating = MicroBatcher(
                self._generate_jobs, size=lambda j: 0, rows=lambda j: 1, max_rows=lambda: BATCH, pool=self._pool
            )
        return self._scoring, self._generating

    async def aclose(self) -> None:
        pool, self._pool = self._pool, None
        self._scoring = self._generating = None
        if pool is not None:
            pool.shutdown(wait=False)

    async def generate(self, request: Request) -> Response:
        """Score a log-likelihood query, else generate (a chat's messages joined by blank lines)."""
        if request.loglikelihood is not None:
            return await self.answer_loglikelihood(request)
        if request.tools:
            raise ModelError("vllm: tools are not supported by the offline engine provider")
        messages = request.messages
        prompt = "\n\n".join(str(m.get("content") or "") for m in messages)
        self.loaded()
        response: Response = await self._batchers()[1].submit((prompt, dict(request.params)))
        return response

    async def loglikelihood(self, pairs: Sequence[tuple[str, str]]) -> list[LoglikelihoodResult]:
        self.loaded()
        return list(await self._batchers()[0].submit(("pairs", list(pairs))))

    async def loglikelihood_rolling(self, texts: Sequence[str]) -> list[LoglikelihoodResult]:
        self.loaded()
        return list(await self._batchers()[0].submit(("rolling", list(texts))))

    def _score_jobs(self, jobs: list[tuple[str, list[Any]]]) -> list[Any]:
        """Every job's windows scored in one engine call from the prompts' log-probabilities (lm-eval's vllm)."""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        llm, splitter, max_length = self.loaded()
        whole_prompts, bounds, spans = scoring_prompts(jobs, splitter, max_length)
        prompts = [TokensPrompt(prompt_token_ids=whole) for whole in whole_prompts]
        params = SamplingParams(temperature=0, prompt_logprobs=1, max_tokens=1, detokenize=False)
        outputs = llm.generate(prompts, params, use_tqdm=False) if prompts else []
        scored = [
            _parse(output.prompt_logprobs, ctxlen, whole)
            for output, (ctxlen, whole) in zip(outputs, bounds, strict=True)
        ]
        out: list[Any] = []
        for job_spans in spans:
            parts = [scored[start : start + count] for start, count, _ in job_spans]
            if any(not p for p in parts):
                out.append(ModelError("vllm: a text to score has no tokens"))
                continue
            out.append(
                [
                    LoglikelihoodResult(sum(r.logprob for r in p), all(r.greedy for r in p), sum(r.tokens for r in p))
                    for p in parts
                ]
            )
        return out

    def _generate_jobs(self, jobs: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        from vllm import SamplingParams

        llm, _, _ = self.loaded()
        out = []
        for prompt, params in jobs:
            started = time.perf_counter()
            stop = params.get("stop")
            sampling = SamplingParams(
                temperature=float(params.get("temperature") or 0.0),
                top_p=float(params.get("top_p") or 1.0),
                max_tokens=int(params.get("max_tokens") or self.max_gen_toks),
                stop=[stop] if isinstance(stop, str) else stop,
                seed=params.get("seed"),
            )
            made = llm.generate([prompt], sampling, use_tqdm=False)[0]
            completion = made.outputs[0]
            out.append(
                Response(
                    text=completion.text,
                    usage=Usage(input_tokens=len(made.prompt_token_ids or ()), output_tokens=len(completion.token_ids)),
                    latency_s=time.perf_counter() - started,
                    finish_reason=completion.finish_reason,
                    model=self.name,
                )
            )
        return out


def scoring_prompts(
    jobs: list[tuple[str, list[Any]]], splitter: Any, max_length: int
) -> tuple[list[list[int]], list[tuple[int, list[int]]], list[list[tuple[int, int, int]]]]:
    """The engine's prompts for scoring jobs, as lm-eval's ``vllm`` cuts them: a prompt holds at most
    ``max_length - 1`` tokens (the engine makes one more), a pair's context is cut from the left to fit, and a rolling
    window predicts ``max_length - 2`` tokens after one of context. Returns (prompts, (context tokens, prompt) per
    prompt, per job and result (first prompt, prompts, 0))."""
    limit = max_length - 1
    prompts: list[list[int]] = []
    bounds: list[tuple[int, list[int]]] = []
    spans: list[list[tuple[int, int, int]]] = []
    for kind, items in jobs:
        job_spans = []
        groups = [[pair] for pair in splitter.pairs(items)] if kind == "pairs" else splitter.rolling(items, limit - 1)
        for windows in groups:
            job_spans.append((len(prompts), len(windows), 0))
            for context, continuation in windows:
                whole = (context + continuation)[-limit:]
                ctxlen = len(context) - max(0, len(context) + len(continuation) - limit)
                prompts.append(whole)
                bounds.append((ctxlen, whole))
        spans.append(job_spans)
    return prompts, bounds, spans


def _parse(prompt_logprobs: Any, ctxlen: int, tokens: list[int]) -> LoglikelihoodResult:
    """lm-eval's ``_parse_logprobs``: the continuation's log-probability and whether each token was the top one."""
    total, greedy = 0.0, True
    for token, by_id in zip(tokens[ctxlen:], prompt_logprobs[ctxlen:], strict=True):
        values = {k: getattr(v, "logprob", v) for k, v in (by_id or {}).items()}
        total += float(values[token])
        if values and max(values, key=values.__getitem__) != token:
            greedy = False
    return LoglikelihoodResult(total, greedy, len(tokens) - ctxlen)
