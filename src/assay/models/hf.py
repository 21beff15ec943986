"""The ``hf`` provider: a local Hugging Face causal LM through ``transformers``, no server needed.

``hf:PATH_OR_NAME`` scores text (``multiple_choice``, ``loglikelihood``, ``loglikelihood_rolling`` tasks, with
lm-eval's ``hf`` backend's figures) and generates (``generate_until`` tasks such as gsm8k). Requests from the
scheduler are gathered into batches (:mod:`assay.models.batching`) and computed in one worker thread on the CPU or,
where present, CUDA. Nothing is downloaded when ``HF_HUB_OFFLINE`` is set; ``trust_remote_code`` is off unless
asked. Needs ``assay[hf]`` (transformers and torch).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar, Literal

from assay.errors import ConfigError
from assay.models.base import Model, ModelError, Request, Response
from assay.models.batching import MicroBatcher
from assay.models.loglikelihood import LoglikelihoodModel, LoglikelihoodResult

INSTALL_HINT = "pip install 'assay[hf]'"
DEFAULT_MAX_LENGTH = 2048  # lm-eval's, for a model whose config names no length
TOKENIZER_INFINITY = 1000000000000000019884624838656  # transformers' "no limit" model_max_length
CPU_BATCH = 32  # pairs a batch on the CPU (``batch_size: auto``); larger batches only add padding there
CUDA_BATCH = 64  # lm-eval's largest automatic batch; halved on an out-of-memory error
DTYPES = ("auto", "float32", "float16", "bfloat16")


def offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) forbids downloads."""
    return any(
        os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
        for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def checkpoint_digest(path: Path) -> str | None:
    """A short hash of a local checkpoint folder's file names, sizes and modification times (None for a hub name):
    a checkpoint overwritten in place gets new cache keys."""
    if not path.is_dir():
        return None
    parts = []
    for file in sorted(path.rglob("*")):
        if file.is_file():
            stat = file.stat()
            parts.append(f"{file.relative_to(path)}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def resolve_max_length(config: Any, tokenizer: Any) -> int:
    """The model's context length as lm-eval resolves it: the (text) config, the tokenizer, else 2048."""
    cfg = getattr(config, "text_config", None) or config
    for attr in ("n_positions", "max_position_embeddings", "n_ctx"):
        value = getattr(cfg, attr, None)
        if value is not None:
            return int(value)
    limit = getattr(tokenizer, "model_max_length", None)
    if limit is not None and limit != TOKENIZER_INFINITY:
        return int(limit)
    return DEFAULT_MAX_LENGTH


class HFModel(LoglikelihoodModel, Model):
    """A causal LM loaded with ``transformers``: ``pretrained`` is a local folder or a hub name (read from the local
    cache when ``HF_HUB_OFFLINE`` is set).

    ``batch_size`` counts (context, continuation) pairs or prompts per forward pass; ``auto`` takes 32 on the CPU and
    64 on CUDA, halved whenever the accelerator runs out of memory. ``max_length`` defaults to the model's own (as
    lm-eval resolves it); ``add_bos_token`` and ``prefix_token_id`` are lm-eval's options of those names.
    ``share_contexts`` runs a context shared by several choices once (the figures are the same either way).
    Generation is greedy unless ``temperature`` > 0, stops at ``stop`` strings, and makes at most ``max_tokens``
    (default ``max_gen_toks``, 256 as lm-eval) new tokens; a chat is joined into one prompt unless
    ``apply_chat_template`` applies the tokenizer's chat template.
    """

    provider: ClassVar[str] = "hf"

    def __init__(
        self,
        pretrained: str,
        *,
        dtype: Literal["auto", "float32", "float16", "bfloat16"] = "auto",
        device: str | None = None,
        batch_size: int | Literal["auto"] = "auto",
        max_length: int | None = None,
        tokenizer: str | None = None,
        revision: str | None = None,
        trust_remote_code: bool = False,
        use_fast_tokenizer: bool = True,
        add_bos_token: bool | None = None,
        prefix_token_id: int | None = None,
        share_contexts: bool = True,
        max_gen_toks: int = 256,
        apply_chat_template: bool = False,
        timeout_s: float = 3600.0,
        name: str | None = None,
    ) -> None:
        if not isinstance(pretrained, str) or not pretrained:
            raise ConfigError(f"hf: 'pretrained' must be a folder or a model name, got {pretrained!r}")
        if isinstance(batch_size, int) and batch_size < 1:
            raise ConfigError(f"hf: 'batch_size' must be >= 1 or 'auto', got {batch_size!r}")
        if max_length is not None and max_length < 2:
            raise ConfigError(f"hf: 'max_length' must be >= 2, got {max_length!r}")
        if max_gen_toks < 1:
            raise ConfigError(f"hf: 'max_gen_toks' must be >= 1, got {max_gen_toks!r}")
        local = Path(pretrained).expanduser()
        looks_local = local.exists() or pretrained.startswith((".", "/", "~")) or pretrained.count("/") > 1
        if looks_local and not local.is_dir():
            raise ConfigError(f"hf: checkpoint folder not found: {local}")
        self.pretrained = str(local.resolve()) if local.is_dir() else pretrained
        self.tokenizer_name = (
            str(Path(tokenizer).expanduser().resolve())
            if tokenizer and Path(tokenizer).expanduser().is_dir()
            else tokenizer
        )
        self.dtype = dtype
        self.device_name = device
        self.batch_size = batch_size
        self.revision = revision
        self.trust_remote_code = trust_remote_code
        self.use_fast_tokenizer = use_fast_tokenizer
        self.add_bos_token = add_bos_token
        self.prefix_token_id = prefix_token_id
        self.share_contexts = share_contexts
        self.max_gen_toks = max_gen_toks
        self.apply_chat_template = apply_chat_template
        self.timeout_s = float(timeout_s)
        self._max_length = max_length
        self.name = name or (Path(self.pretrained).name if local.is_dir() else pretrained)
        self._digest = checkpoint_digest(local) if local.is_dir() else None
        self._lock = threading.Lock()
        self._loaded: Any = None  # (model, tokenizer, splitter, scorer) once loaded
        self._pool: ThreadPoolExecutor | None = None
        self._batch_rows = batch_size if isinstance(batch_size, int) else 0
        self.check_note: str | None = None  # what the self-check changed, if anything
        self._scoring: MicroBatcher[Any] | None = None
        self._generating: MicroBatcher[Any] | None = None

    def __repr__(self) -> str:
        return f"HFModel({self.pretrained!r})"

    def identity(self) -> dict[str, Any]:
        """What changes the figures: the checkpoint (and its files' fingerprint), revision, dtype, tokenizer options
        and the context length."""
        return {
            "provider": self.provider,
            "pretrained": self.pretrained,
            "revision": self.revision,
            "checkpoint": self._digest,
            "dtype": self.dtype,
            "tokenizer": self.tokenizer_name,
            "add_bos_token": self.add_bos_token,
            "prefix_token_id": self.prefix_token_id,
            "max_length": self._max_length,
            "apply_chat_template": self.apply_chat_template,
        }

    def describe(self) -> dict[str, Any]:
        """The identity plus how it runs (a ``load_model`` spec)."""
        out = {**self.identity(), "name": self.name, "batch_size": self.batch_size, "device": self.device_name}
        out.pop("checkpoint")
        if self.check_note:
            out["self_check"] = self.check_note
        return out

    # -- loading ----------------------------------------------------------------------------------------------------

    def check(self) -> None:
        """Load the checkpoint now (before the run writes anything), so a bad path or a missing extra fails early."""
        self.loaded()

    def loaded(self) -> tuple[Any, Any, Any, Any]:
        """(model, tokenizer, splitter, scorer), loading them on first use."""
        with self._lock:
            if self._loaded is None:
                self._loaded = self._load()
            return self._loaded

    def _load(self) -> tuple[Any, Any, Any, Any]:
        try:
            import torch
            import transformers
        except ImportError:
            raise ConfigError(f"hf models need transformers and torch: {INSTALL_HINT}") from None
        from assay.models.hf_scoring import CausalScorer, self_check
        from assay.models.tokens import TokenSplitter

        device = self.device_name or ("cuda" if torch.cuda.is_available() else "cpu")
        self.device_name = device
        common: dict[str, Any] = {"revision": self.revision, "trust_remote_code": self.trust_remote_code}
        if offline():
            common["local_files_only"] = True
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(
                self.tokenizer_name or self.pretrained, use_fast=self.use_fast_tokenizer, **common
            )
            dtype: Any = self.dtype if self.dtype == "auto" else getattr(torch, self.dtype)
            model: Any = transformers.AutoModelForCausalLM.from_pretrained(self.pretrained, dtype=dtype, **common)
        except (OSError, ValueError) as err:
            where = " (HF_HUB_OFFLINE is set: only local folders and the local cache are read)" if offline() else ""
            raise ConfigError(f"hf: cannot load {self.pretrained!r}{where}: {err}") from None
        model.to(device)
        model.eval()
        if self._max_length is None:
            self._max_length_resolved = resolve_max_length(model.config, tokenizer)
        else:
            self._max_length_resolved = self._max_length
        if self._batch_rows == 0:
            self._batch_rows = CUDA_BATCH if device.startswith("cuda") else CPU_BATCH
        try:
            splitter = TokenSplitter(tokenizer, add_bos_token=self.add_bos_token, prefix_token_id=self.prefix_token_id)
        except ValueError as err:
            raise ConfigError(f"hf: {err}") from None
        scorer = CausalScorer(
            model, device=device, max_length=self._max_length_resolved, share_contexts=self.share_contexts
        )
        self.check_note = self_check(scorer, int(getattr(model.config, "vocab_size", 0) or len(tokenizer)))
        return model, tokenizer, splitter, scorer

    @property
    def max_length(self) -> int:
        """The context length in tokens (loads the model)."""
        self.loaded()
        return int(self._max_length_resolved)

    def _batchers(self) -> tuple[MicroBatcher[Any], MicroBatcher[Any]]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="assay-hf")
        if self._scoring is None or self._generating is None:
            rows = lambda: self._batch_rows or CPU_BATCH  # noqa: E731
            self._scoring = MicroBatcher(
                self._score_jobs, size=_job_size, rows=_job_rows, max_rows=rows, pool=self._pool
            )
            self._generating = MicroBatcher(
                self._generate_jobs, size=lambda j: len(j[0]), rows=lambda j: 1, max_rows=rows, pool=self._pool
            )
        return self._scoring, self._generating

    async def aclose(self) -> None:
        """Stop the worker thread (the weights stay loaded for another run)."""
        pool, self._pool = self._pool, None
        self._scoring = self._generating = None
        if pool is not None:
            pool.shutdown(wait=False)

    # -- log-likelihoods --------------------------------------------------------------------------------------------

    async def generate(self, request: Request) -> Response:
        """Score a log-likelihood query, else generate a completion of the prompt."""
        if request.loglikelihood is not None:
            return await self.answer_loglikelihood(request)
        from assay.models.hf_generation import prompt_of

        prompt = prompt_of(request, self.apply_chat_template, self.loaded()[1])
        response: Response = await self._batchers()[1].submit((prompt, dict(request.params)))
        return response

    async def loglikelihood(self, pairs: Sequence[tuple[str, str]]) -> list[LoglikelihoodResult]:
        """Score one sample's pairs together (its shared context runs once)."""
        return await self._submit(("pairs", list(pairs)))

    async def loglikelihood_rolling(self, texts: Sequence[str]) -> list[LoglikelihoodResult]:
        """Score whole texts in disjoint windows of the model's length, summed per text."""
        return await self._submit(("rolling", list(texts)))

    async def _submit(self, job: tuple[str, list[Any]]) -> list[LoglikelihoodResult]:
        self.loaded()
        result = await self._batchers()[0].submit(job)
        return list(result)

    def _score_jobs(self, jobs: list[tuple[str, list[Any]]]) -> list[Any]:
        """Tokenize and score a batch of jobs in the worker thread (lm-eval's splits, this model's batches)."""
        _, _, splitter, scorer = self.loaded()
        units: list[tuple[list[int], list[int]]] = []
        spans: list[list[tuple[int, int]]] = []  # per job, per result: the units it sums
        for kind, items in jobs:
            job_spans = []
            if kind == "pairs":
                for pair in splitter.pairs(items):
                    job_spans.append((len(units), len(units) + 1))
                    units.append(pair)
            else:
                for windows in splitter.rolling(items, scorer.max_length):
                    job_spans.append((len(units), len(units) + len(windows)))
                    units.extend(windows)
            spans.append(job_spans)
        outcomes = self._with_memory_retry(lambda: scorer.score(units, self._batch_rows))
        out: list[Any] = []
        for job_spans in spans:
            results: list[LoglikelihoodResult] = []
            failed: Exception | None = None
            for start, stop in job_spans:
                parts = outcomes[start:stop]
                bad = next((p for p in parts if isinstance(p, Exception)), None)
                if bad is not None:
                    failed = failed or bad
                    continue
                if start == stop:  # a rolling text of no tokens
                    failed = failed or ValueError("the text has no tokens")
                    continue
                ok = [p for p in parts if isinstance(p, LoglikelihoodResult)]
                results.append(
                    LoglikelihoodResult(
                        sum(p.logprob for p in ok), all(p.greedy for p in ok), sum(p.tokens for p in ok)
                    )
                )
            out.append(ModelError(f"hf: {failed}") if failed is not None else results)
        return out

    def _with_memory_retry(self, compute: Any) -> Any:
        """Run ``compute``; on an accelerator out-of-memory error halve the batch and try again (down to 1)."""
        import torch

        while True:
            try:
                return compute()
            except torch.OutOfMemoryError:
                if self._batch_rows <= 1:
                    raise ModelError("hf: out of memory with a batch of one; lower max_length") from None
                self._batch_rows = max(1, self._batch_rows // 2)
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()

    # -- generation -------------------------------------------------------------------------------------------------

    def _generate_jobs(self, jobs: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        from assay.models.hf_generation import generate_batch

        model, tokenizer, _, scorer = self.loaded()
        return self._with_memory_retry(
            lambda: generate_batch(
                model,
                tokenizer,
                jobs,
                device=self.device_name,
                max_length=scorer.max_length,
                max_gen_toks=self.max_gen_toks,
                batch_rows=self._batch_rows,
                name=self.name,
            )
        )


def _job_size(job: tuple[str, list[Any]]) -> int:
    """A job's length in characters (the longest pending are batched first)."""
    kind, items = job
    if kind == "pairs":
        return max((len(c) + len(k) for c, k in items), default=0)
    return max((len(t) for t in items), default=0)


def _job_rows(job: tuple[str, list[Any]]) -> int:
    """Rows a job adds to a batch: its pairs (a long rolling text: about one row per 2000 characters)."""
    kind, items = job
    return len(items) if kind == "pairs" else sum(1 + len(t) // 2000 for t in items)
