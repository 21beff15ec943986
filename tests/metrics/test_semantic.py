"""semantic_similarity: the cosine sentence-transformers gives, offline from the packaged model, cached, batched."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from assay import evaluators
from assay.errors import ConfigError
from assay.evaluators.semantic import SemanticSimilarity, resolve_model

PAIRS = [
    ("The cat sat on the mat.", "A cat was sitting on the mat."),
    ("Stocks fell sharply today.", "The market dropped."),
    ("Paris is the capital of France.", "The weather is nice."),
    ("", "An empty output."),
]


@pytest.fixture(scope="module")
def sim() -> SemanticSimilarity:
    ev = evaluators.get("semantic_similarity", device="cpu")
    assert isinstance(ev, SemanticSimilarity)
    return ev


def test_cosine_equals_sentence_transformers_directly(sim: SemanticSimilarity) -> None:
    from sentence_transformers import SentenceTransformer

    path, local = resolve_model("all-MiniLM-L6-v2")
    assert local and Path(path, "model.safetensors").exists()  # the packaged weights, not a download
    model = SentenceTransformer(path, device="cpu", local_files_only=True)
    for out, ref in PAIRS:
        a, b = model.encode([out, ref], normalize_embeddings=True)
        expected = float(np.dot(a, b))
        v = sim.evaluate(out, ref)
        assert v.details["cosine"] == pytest.approx(expected, abs=1e-5)
        assert v.score == pytest.approx(min(1.0, max(0.0, expected)), abs=1e-5)
    assert sim.evaluate(*PAIRS[0]).passed and not sim.evaluate(*PAIRS[2]).passed
    failing = sim.evaluate(*PAIRS[2])
    assert failing.reason is not None and "below the threshold 0.8" in failing.reason and failing.feedback


def test_best_reference_counts_and_missing_reference_is_an_error(sim: SemanticSimilarity) -> None:
    v = sim.evaluate("Stocks fell sharply today.", ["A cat on a mat.", "The market dropped."])
    assert v.details["reference"] == 1
    assert sim.evaluate("x", None).is_error


def test_encodings_are_cached_by_text_and_the_batch_path_matches(sim: SemanticSimilarity) -> None:
    outs = [f"sentence number {i} about cats" for i in range(40)]
    refs = [f"a sentence about cats, {i}" for i in range(40)]
    before = sim.encoded
    batch = sim.evaluate_batch(outs, refs)
    assert sim.encoded - before == 80  # every distinct text once
    single = [sim.evaluate(o, r) for o, r in zip(outs, refs, strict=True)]
    assert sim.encoded - before == 80  # the per-sample path found them all in the cache
    assert np.allclose(batch.scores, [v.score for v in single])
    assert list(batch.passed) == [v.passed for v in single]


def test_a_model_not_on_this_machine_is_never_downloaded(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="allow_download"):
        evaluators.get("semantic_similarity", model="sentence-transformers/no-such-model-xyz")
    with pytest.raises(ConfigError, match="cannot load model"):
        evaluators.get("semantic_similarity", model=str(tmp_path))  # a folder without a model


def test_a_model_folder_by_path(sim: SemanticSimilarity) -> None:
    path, _ = resolve_model("all-MiniLM-L6-v2")
    by_path = evaluators.get("semantic_similarity", model=path, device="cpu")
    assert by_path.evaluate(*PAIRS[0]).score == pytest.approx(sim.evaluate(*PAIRS[0]).score, abs=1e-6)


def test_cli_start_up_does_not_import_sentence_transformers() -> None:
    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom assay.cli import main\n"
        "from assay.evaluators import names\n"
        "assert CliRunner().invoke(main, ['--help']).exit_code == 0\nassert 'semantic_similarity' in names()\n"
        "heavy = [m for m in ('sentence_transformers', 'torch', 'sacrebleu', 'rouge_score') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_cpu_threads_sets_torchs_thread_count(sim: SemanticSimilarity) -> None:
    import torch

    before = torch.get_num_threads()
    try:
        ev = evaluators.get("semantic_similarity", device="cpu", cpu_threads=1)
        assert torch.get_num_threads() == 1
        assert ev.evaluate(*PAIRS[0]).score == pytest.approx(sim.evaluate(*PAIRS[0]).score, abs=1e-5)
    finally:
        torch.set_num_threads(before)
