"""A tiny causal LM made offline, for tests and benchmarks of log-likelihood tasks: nothing is downloaded.

A byte-level BPE tokenizer is trained with ``tokenizers`` on a few paragraphs (about 400 tokens), and a GPT-2 (or
Llama) model with random weights, 2 layers and a hidden size of 64, is saved with ``save_pretrained`` beside it, so
``hf:DIR``, lm-eval's ``hf`` backend and vLLM load the folder like any checkpoint. Same seed, same weights.
Needs ``assay[hf]``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

CORPUS = """\
The quick brown fox jumps over the lazy dog. A journey of a thousand miles begins with a single step.
Water boils at one hundred degrees Celsius at sea level, and freezes at zero. The sun rises in the east and sets
in the west. Plants need light, water and air to grow; animals need food, water and shelter.
Paris is the capital of France, Rome is the capital of Italy and Madrid is the capital of Spain.
The moon goes around the earth, and the earth goes around the sun once a year. A week has seven days.
Question: What do bees make? Answer: honey. Question: What colour is the sky on a clear day? Answer: blue.
Seven plus five is twelve. Three times four is twelve too. Ten minus two is eight, and half of ten is five.
"""
EOS = "<|endoftext|>"


def make_tiny_lm(
    directory: str | Path,
    *,
    arch: Literal["gpt2", "llama"] = "gpt2",
    vocab_size: int = 400,
    max_length: int = 128,
    hidden: int = 64,
    layers: int = 2,
    seed: int = 0,
) -> Path:
    """Train the tokenizer, build the model with random weights (seeded) and save both to ``directory``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=[EOS], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    bpe.train_from_iterator([CORPUS] * 4, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token=EOS, eos_token=EOS, unk_token=EOS)
    tokenizer.model_max_length = max_length
    torch.manual_seed(seed)
    ids = {"bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id}
    if arch == "gpt2":
        config = GPT2Config(
            vocab_size=len(tokenizer), n_positions=max_length, n_embd=hidden, n_layer=layers, n_head=2, **ids
        )
        model: Any = GPT2LMHeadModel(config)
    else:
        llama = LlamaConfig(
            vocab_size=len(tokenizer),
            hidden_size=hidden,
            intermediate_size=2 * hidden,
            num_hidden_layers=layers,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=max_length,
            **ids,
        )
        model = LlamaForCausalLM(llama)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
