"""Where a continuation's tokens start, as lm-evaluation-harness decides it, for any Hugging Face tokenizer.

lm-eval never encodes a continuation on its own: it moves the context's trailing whitespace to the continuation
(the leading-space rule), encodes the context and the whole text, and takes the whole text's tokens past the
context's count as the continuation's. An empty context becomes the prefix token (BOS, else EOS). A whole text
scored by ``loglikelihood_rolling`` is cut into disjoint windows of the model's length, each conditioned on the
tokens before it (lm-eval's ``get_rolling_token_windows`` + ``make_disjoint_window``, ported here).

Encoding is batched (the fast tokenizer encodes a list in one call); the figures are lm-eval's token for token.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

Tokens = list[int]


class TokenSplitter:
    """lm-eval's token boundary split for one Hugging Face tokenizer.

    ``add_bos_token`` is lm-eval's option of that name: None keeps the tokenizer's own habit (its
    ``add_special_tokens`` default), True/False forces it. A text that already starts with the prefix token's text
    is encoded without special tokens, as lm-eval does. ``prefix_token_id`` conditions an empty context (default:
    the tokenizer's BOS, else its EOS).
    """

    def __init__(self, tokenizer: Any, *, add_bos_token: bool | None = None, prefix_token_id: int | None = None):
        self.tokenizer = tokenizer
        self.add_bos_token = add_bos_token
        if prefix_token_id is None:
            prefix_token_id = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
        if prefix_token_id is None:
            raise ValueError("the tokenizer has neither a BOS nor an EOS token: set prefix_token_id")
        self.prefix_token_id = int(prefix_token_id)
        self._prefix_text = tokenizer.decode([self.prefix_token_id])

    def encode(self, texts: Sequence[str], add_special_tokens: bool | None = None) -> list[Tokens]:
        """Each text's token ids (lm-eval's ``tok_encode``), encoded in batched calls."""
        if not texts:
            return []
        if add_special_tokens is not None:
            return self._batch(list(texts), add_special_tokens)
        default = self.add_bos_token
        plain = [i for i, t in enumerate(texts) if self._prefix_text and t.startswith(self._prefix_text)]
        if not plain:
            return self._batch(list(texts), default)
        out: list[Tokens] = [[] for _ in texts]
        plain_set = set(plain)
        rest = [i for i in range(len(texts)) if i not in plain_set]
        for i, ids in zip(plain, self._batch([texts[i] for i in plain], False), strict=True):
            out[i] = ids
        for i, ids in zip(rest, self._batch([texts[i] for i in rest], default), strict=True):
            out[i] = ids
        return out

    def _batch(self, texts: list[str], add_special_tokens: bool | None) -> list[Tokens]:
        kwargs = {} if add_special_tokens is None else {"add_special_tokens": add_special_tokens}
        return [list(ids) for ids in self.tokenizer(texts, **kwargs)["input_ids"]]

    def pairs(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[Tokens, Tokens]]:
        """(context tokens, continuation tokens) of each pair, split as lm-eval's ``loglikelihood`` splits them."""
        out: list[tuple[Tokens, Tokens] | None] = [None] * len(pairs)
        empty = [i for i, (context, _) in enumerate(pairs) if context == ""]
        for i, cont in zip(empty, self.encode([pairs[i][1] for i in empty], add_special_tokens=False), strict=True):
            out[i] = (
                ([self.prefix_token_id], cont) if not cont or cont[0] != self.prefix_token_id else (cont[:1], cont[1:])
            )
        rest = [i for i, (context, _) in enumerate(pairs) if context != ""]
        contexts: list[str] = []
        wholes: list[str] = []
        for i in rest:
            context, continuation = pairs[i]
            stripped = context.rstrip()
            contexts.append(stripped)
            wholes.append(stripped + context[len(stripped) :] + continuation)  # trailing spaces go to the continuation
        unique = list(dict.fromkeys(contexts))  # a context shared by several choices is encoded once
        encoded = dict(zip(unique, self.encode(unique), strict=True))
        for i, context, whole in zip(rest, contexts, self.encode(wholes), strict=True):
            context_enc = encoded[context]
            out[i] = (context_enc, whole[len(context_enc) :])
        return [pair for pair in out if pair is not None]

    def rolling(self, texts: Sequence[str], max_length: int) -> list[list[tuple[Tokens, Tokens]]]:
        """Each text's disjoint rolling windows (context tokens, scored tokens) for a model of ``max_length``."""
        return [
            [disjoint(window) for window in rolling_windows(tokens, self.prefix_token_id, max_length, 1)]
            for tokens in self.encode(texts)
        ]


def rolling_windows(
    tokens: Tokens, prefix_token: int, max_seq_len: int, context_len: int
) -> Iterator[tuple[Tokens, Tokens]]:
    """lm-eval's ``get_rolling_token_windows``: (input tokens, predicted tokens) windows covering ``tokens``; the
    first window is conditioned on ``prefix_token``, each later one on up to ``max_seq_len`` earlier tokens."""
    if not 1 <= context_len <= max_seq_len:
        raise ValueError(f"context_len must be in [1, {max_seq_len}], got {context_len}")
    if not tokens:
        return
    pred_len = max_seq_len - context_len + 1
    first = min(max_seq_len, len(tokens))
    yield [prefix_token, *tokens[: first - 1]], tokens[:first]
    predicted = first
    while predicted < len(tokens):
        window_pred_len = min(len(tokens) - predicted, pred_len)
        end = predicted + window_pred_len
        yield tokens[max(0, end - max_seq_len - 1) : end - 1], tokens[end - window_pred_len : end]
        predicted += window_pred_len


def disjoint(window: tuple[Tokens, Tokens]) -> tuple[Tokens, Tokens]:
    """lm-eval's ``make_disjoint_window``: the window's context without the tokens it predicts."""
    context, predicted = window
    return context[: len(context) - (len(predicted) - 1)], predicted
