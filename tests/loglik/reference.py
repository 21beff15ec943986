"""An independent computation of lm-eval's log-likelihoods: the tokenizer and one plain forward pass per pair,
no batching, padding or cache (what the backends must equal)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class Reference:
    """lm-eval's split and scoring, one unpadded sequence at a time."""

    def __init__(self, folder: Path) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModelForCausalLM.from_pretrained(folder).eval()
        self.max_length = int(self.model.config.max_position_embeddings)

    def split(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        tok = self.tokenizer
        if context == "":
            return [tok.bos_token_id], tok.encode(continuation, add_special_tokens=False)
        spaces = len(context) - len(context.rstrip())
        if spaces:
            continuation = context[-spaces:] + continuation
            context = context[:-spaces]
        whole = tok.encode(context + continuation)
        ctx = tok.encode(context)
        return ctx, whole[len(ctx) :]

    def tokens(self, ctx: list[int], cont: list[int]) -> tuple[float, bool]:
        torch = self.torch
        inp = (ctx + cont)[-(self.max_length + 1) :][:-1]
        with torch.no_grad():
            logits = self.model(torch.tensor([inp])).logits[0].float()
        logprobs = torch.log_softmax(logits, dim=-1)[len(inp) - len(cont) :]
        target = torch.tensor(cont)
        picked = logprobs.gather(1, target[:, None]).squeeze(1)
        return float(picked.sum()), bool((logprobs.argmax(-1) == target).all())

    def pair(self, context: str, continuation: str) -> tuple[float, bool, int]:
        ctx, cont = self.split(context, continuation)
        return (*self.tokens(ctx, cont), len(cont))

    def text(self, text: str) -> tuple[float, int]:
        """A text shorter than the model: log p(text | BOS), summed over its tokens."""
        ids = self.tokenizer.encode(text)
        assert len(ids) <= self.max_length, "the reference scores one window"
        return self.tokens([self.tokenizer.bos_token_id], ids)[0], len(ids)

    def rows(self, ids: list[int]) -> Any:
        """Log-softmax rows of a prompt: rows[t] is the distribution after ids[: t + 1] (the test server's script)."""
        torch = self.torch
        with torch.no_grad():
            logits = self.model(torch.tensor([ids])).logits[0].float()
        return torch.log_softmax(logits, dim=-1).tolist()
