"""Fixtures for log-likelihood tests: tiny causal LMs made offline once per session (nothing is downloaded)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


@pytest.fixture(scope="session", autouse=True)
def one_torch_thread() -> None:
    """One intra-op thread: the tiny models gain nothing from more, and on a busy machine two threads spin-wait
    on each other at every op (a 5 ms forward pass takes 300 ms)."""
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A GPT-2 of 2 layers and random weights with a BPE tokenizer trained locally, saved with save_pretrained."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from assay.testing.tiny_lm import make_tiny_lm

    return make_tiny_lm(tmp_path_factory.mktemp("tiny") / "gpt2")


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same, as a Llama (rotary positions, grouped-query attention)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from assay.testing.tiny_lm import make_tiny_lm

    return make_tiny_lm(tmp_path_factory.mktemp("tiny") / "llama", arch="llama")
