"""Scripted log-probabilities for the test server's ``/v1/completions``: what vLLM sends for ``echo`` + ``logprobs``.

:func:`logprob_reply` makes a completion reply from a tokenizer and a scoring function (e.g. a local model's
forward pass), so a log-likelihood client can be checked over real HTTP against figures computed independently.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

Rows = Sequence[Sequence[float]]  # rows[t]: log-probabilities of the token after the prompt's first t + 1 tokens


def logprob_reply(tokenizer: Any, score: Callable[[list[int]], Rows]) -> Callable[[Any, dict[str, Any]], Any]:
    """A ``completion`` reply for :class:`~assay.testing.server.OpenAITestServer`: a prompt (text or token ids) is
    echoed (with ``echo``) with each token's log-probability under ``score`` and its position's top token
    (``logprobs: 1``), then ``max_tokens`` greedy tokens are made (at most one, as log-likelihood clients ask)."""

    def reply(prompt: str | list[int], body: dict[str, Any]) -> dict[str, Any]:
        if isinstance(prompt, str):
            encoded = tokenizer(prompt, return_offsets_mapping=True, add_special_tokens=False)
            ids = list(encoded["input_ids"])
            offsets = [int(start) for start, _ in encoded["offset_mapping"]]
            text = prompt
        else:
            ids = list(prompt)
            pieces = [tokenizer.decode([i]) for i in ids]
            offsets, at = [], 0
            for piece in pieces:
                offsets.append(at)
                at += len(piece)
            text = "".join(pieces)
        rows = score(ids)
        tokens = [tokenizer.decode([i]) for i in ids]
        values: list[float | None] = [None]
        tops: list[dict[str, float] | None] = [None]
        for t in range(1, len(ids)):
            values.append(float(rows[t - 1][ids[t]]))
            tops.append(_top(rows[t - 1], tokenizer))
        made = ""
        if int(body.get("max_tokens") or 0) >= 1:
            row = rows[len(ids) - 1]
            best = max(range(len(row)), key=lambda i: row[i])
            made = tokenizer.decode([best])
            tokens.append(made)
            values.append(float(row[best]))
            tops.append(_top(row, tokenizer))
            offsets.append(len(text))
        if not body.get("echo"):
            keep = len(ids)
            tokens, values, tops, offsets = tokens[keep:], values[keep:], tops[keep:], offsets[keep:]
        logprobs = {"tokens": tokens, "token_logprobs": values, "top_logprobs": tops, "text_offset": offsets}
        return {
            "text": (text if body.get("echo") else "") + made,
            "logprobs": logprobs if body.get("logprobs") is not None else None,
            "prompt_tokens": len(ids),
            "completion_tokens": 1 if made else 0,
        }

    return reply


def _top(row: Sequence[float], tokenizer: Any) -> dict[str, float]:
    best = max(range(len(row)), key=lambda i: row[i])
    return {tokenizer.decode([best]): float(row[best])}
