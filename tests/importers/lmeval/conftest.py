"""Fixtures for the lm-eval importer tests: a tiny causal LM made offline (nothing is downloaded)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def tiny_lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer GPT-2 with random weights and a locally trained tokenizer (assay.testing.tiny_lm)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import torch

    torch.set_num_threads(1)
    from assay.testing.tiny_lm import make_tiny_lm

    return make_tiny_lm(tmp_path_factory.mktemp("tiny") / "gpt2")
