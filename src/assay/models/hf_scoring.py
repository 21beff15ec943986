"""The log-likelihood of token continuations under a causal LM (torch): lm-eval's figures, fewer forward passes.

Each (context, continuation) pair is scored as lm-eval's ``hf`` backend scores it: the input is
``(context + continuation)[-(max_length + 1):][:-1]`` (a context too long for the model is cut from the left), the
log-softmax at the continuation's positions gives its log-probability, and it is greedy when every continuation
token is the argmax there. Two things make it cheaper:

* A context shared by several continuations (a multiple-choice question) runs through the model once; its key/value
  cache is repeated for each choice, and only the choices' own tokens run again. A one-token choice costs nothing
  past the context pass (lm-eval reuses logits only for one-token choices).
* Sequences are left-padded with explicit positions, so every row's scored positions sit at the end and only they
  go through the output layer (``logits_to_keep``), where lm-eval log-softmaxes every position of the batch.

:func:`self_check` compares both paths with a plain unpadded forward pass on the loaded model; a model whose cache or
positions do not behave (remote code, unusual attention) is scored one unpadded sequence at a time instead.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from assay.models.loglikelihood import LoglikelihoodResult

Tokens = list[int]
Outcome = LoglikelihoodResult | Exception


class CausalScorer:
    """Scores token pairs with a loaded ``transformers`` causal LM on ``device``; ``max_length`` is the model's."""

    def __init__(self, model: Any, *, device: Any, max_length: int, share_contexts: bool = True) -> None:
        import torch

        self.torch = torch
        self.model = model
        self.device = device
        self.max_length = max_length
        params = inspect.signature(model.forward).parameters
        self._keep = "logits_to_keep" in params
        self._positions = "position_ids" in params
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        self.share_contexts = share_contexts
        self.padded = self._positions  # left padding needs explicit positions
        self.forward_passes = 0
        self.tokens_run = 0

    # -- one forward pass -------------------------------------------------------------------------------------------

    def _forward(
        self, ids: Any, mask: Any, positions: Any, keep: int, cache: Any = None, want_cache: bool = False
    ) -> tuple[Any, Any]:
        kwargs: dict[str, Any] = {"input_ids": ids, "attention_mask": mask, "use_cache": want_cache}
        if self._positions:
            kwargs["position_ids"] = positions
        if cache is not None:
            kwargs[self._cache_arg] = cache
        if self._keep and keep:
            kwargs["logits_to_keep"] = keep
        self.forward_passes += 1
        self.tokens_run += int(mask[:, -ids.shape[1] :].sum())  # the new positions (a cached context is not rerun)
        out = self.model(**kwargs)
        logits = out.logits
        if keep and logits.shape[1] > keep:
            logits = logits[:, -keep:]
        made = (out.get("cache") or out.get("past_key_values")) if want_cache else None
        return logits.float(), made

    # -- scoring ----------------------------------------------------------------------------------------------------

    def score(self, pairs: Sequence[tuple[Tokens, Tokens]], batch_rows: int) -> list[Outcome]:
        """Each pair's (log-probability, greedy, tokens), or the error that pair alone raises (too long, empty)."""
        out: list[Outcome | None] = [None] * len(pairs)
        groups: dict[tuple[int, ...], list[tuple[int, Tokens]]] = {}
        limit = self.max_length
        for i, (context, continuation) in enumerate(pairs):
            if not continuation:
                out[i] = ValueError("the continuation has no tokens")
                continue
            if len(continuation) > limit:
                out[i] = ValueError(
                    f"the continuation has {len(continuation)} tokens, more than the model's max_length {limit}"
                )
                continue
            if not context:
                out[i] = ValueError("the context has no tokens (a context of whitespace only)")
                continue
            room = limit + 1 - len(continuation)
            kept = context[-room:] if len(context) > room else context  # lm-eval: cut from the left to fit
            groups.setdefault(tuple(kept), []).append((i, continuation))
        singles: list[tuple[int, Tokens, Tokens]] = []
        shared: list[tuple[Tokens, list[tuple[int, Tokens]]]] = []
        for key, members in groups.items():
            if self.share_contexts and self.padded and len(members) > 1:
                shared.append((list(key), members))
            else:
                singles.extend((i, list(key), continuation) for i, continuation in members)
        with self.torch.inference_mode():
            singles.sort(key=lambda s: -(len(s[1]) + len(s[2])))  # longest first, as lm-eval orders them
            for start in range(0, len(singles), max(1, batch_rows)):
                chunk = singles[start : start + max(1, batch_rows)]
                scored = self._singles([(c, k) for _, c, k in chunk]) if self.padded else self._unpadded(chunk)
                for (i, _, _), result in zip(chunk, scored, strict=True):
                    out[i] = result
            shared.sort(key=lambda g: -(len(g[0]) + max(len(k) for _, k in g[1])))
            for chunk_groups in _chunks(shared, max(1, batch_rows)):
                for members, results in zip((m for _, m in chunk_groups), self._shared(chunk_groups), strict=True):
                    for (i, _), result in zip(members, results, strict=True):
                        out[i] = result
        assert all(o is not None for o in out)
        return [o for o in out if o is not None]

    def _unpadded(self, chunk: list[tuple[int, Tokens, Tokens]]) -> list[Outcome]:
        """One sequence per forward pass, no padding (a model that takes no positions)."""
        return [self._singles([(context, continuation)])[0] for _, context, continuation in chunk]

    def _left_padded(self, rows: list[Tokens]) -> tuple[Any, Any, Any]:
        torch = self.torch
        width = max(len(r) for r in rows)
        ids = torch.zeros((len(rows), width), dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for j, row in enumerate(rows):
            ids[j, width - len(row) :] = torch.tensor(row, dtype=torch.long)
            mask[j, width - len(row) :] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        return ids.to(self.device), mask.to(self.device), positions.to(self.device)

    def _singles(self, rows: list[tuple[Tokens, Tokens]]) -> list[Outcome]:
        """Pairs scored one row each: the continuation's positions are the last of every left-padded row."""
        torch = self.torch
        inputs = [(context + continuation)[:-1] for context, continuation in rows]
        keep = max(len(continuation) for _, continuation in rows)
        ids, mask, positions = self._left_padded(inputs)
        logits, _ = self._forward(ids, mask, positions, keep)
        logprobs = torch.log_softmax(logits, dim=-1)
        return [_result(logprobs[j, keep - len(k) :], k, torch) for j, (_, k) in enumerate(rows)]

    def _shared(self, groups: list[tuple[Tokens, list[tuple[int, Tokens]]]]) -> list[list[Outcome]]:
        """Groups of continuations after one context each: the contexts run once, the choices on their cache."""
        torch = self.torch
        contexts = [context for context, _ in groups]
        ids, mask, positions = self._left_padded(contexts)
        logits, cache = self._forward(ids, mask, positions, 1, want_cache=True)
        first = torch.log_softmax(logits[:, -1], dim=-1)  # scores every continuation's first token
        rows: list[tuple[int, Tokens]] = [(g, k) for g, (_, members) in enumerate(groups) for _, k in members]
        longer = [(r, g, k) for r, (g, k) in enumerate(rows) if len(k) > 1]
        rest: Any = None
        if longer:
            index = torch.tensor([g for _, g, _ in longer], device=self.device)
            cache.batch_select_indices(index)  # each choice continues its own context's cache
            width = max(len(k) - 1 for _, _, k in longer)
            cont_ids = torch.zeros((len(longer), width), dtype=torch.long)
            cont_mask = torch.zeros((len(longer), width), dtype=torch.long)
            for j, (_, _, k) in enumerate(longer):
                cont_ids[j, : len(k) - 1] = torch.tensor(k[:-1], dtype=torch.long)
                cont_mask[j, : len(k) - 1] = 1
            cont_mask = cont_mask.to(self.device)
            lengths = torch.tensor([len(contexts[g]) for _, g, _ in longer], device=self.device)
            cont_positions = lengths[:, None] + torch.arange(width, device=self.device)[None, :]
            cont_positions = cont_positions.clamp(max=self.max_length - 1)  # padding past a short row's end
            full_mask = torch.cat([mask[index], cont_mask], dim=1)
            cont_logits, _ = self._forward(cont_ids.to(self.device), full_mask, cont_positions, 0, cache=cache)
            rest = torch.log_softmax(cont_logits, dim=-1)
        where = {r: j for j, (r, _, _) in enumerate(longer)}
        results: list[list[Outcome]] = [[] for _ in groups]
        for r, (g, k) in enumerate(rows):
            first_row = first[g : g + 1]
            scored = first_row if len(k) == 1 else torch.cat([first_row, rest[where[r], : len(k) - 1]], dim=0)
            results[g].append(_result(scored, k, torch))
        return results


def _chunks(
    groups: list[tuple[Tokens, list[tuple[int, Tokens]]]], rows: int
) -> list[list[tuple[Tokens, list[tuple[int, Tokens]]]]]:
    """Consecutive groups with at most ``rows`` continuations a chunk (a larger group is a chunk of its own)."""
    out: list[list[tuple[Tokens, list[tuple[int, Tokens]]]]] = []
    current: list[tuple[Tokens, list[tuple[int, Tokens]]]] = []
    count = 0
    for group in groups:
        if current and count + len(group[1]) > rows:
            out.append(current)
            current, count = [], 0
        current.append(group)
        count += len(group[1])
    if current:
        out.append(current)
    return out


def _result(logprobs: Any, continuation: Tokens, torch: Any) -> LoglikelihoodResult:
    """A continuation's figures from the log-softmax rows at its positions (one row per token)."""
    target = torch.tensor(continuation, dtype=torch.long, device=logprobs.device)
    picked = logprobs.gather(1, target[:, None]).squeeze(1)
    greedy = bool((logprobs.argmax(dim=-1) == target).all())
    return LoglikelihoodResult(float(picked.sum()), greedy, len(continuation))


def self_check(scorer: CausalScorer, vocab: int, seed: int = 0) -> str | None:
    """Compare the padded and shared-context paths with plain unpadded forward passes on a few random pairs; on a
    mismatch switch the scorer to what agrees and say why (None when everything agreed)."""
    import random

    torch = scorer.torch
    rng = random.Random(seed)
    top = max(2, min(vocab, 1000))
    length = max(4, min(12, scorer.max_length // 2))
    context = [rng.randrange(1, top) for _ in range(length)]
    pairs = [(context, [rng.randrange(1, top) for _ in range(n)]) for n in (1, 3, 2)]
    pairs.append(([rng.randrange(1, top) for _ in range(length // 2)], [rng.randrange(1, top) for _ in range(2)]))
    expected = []
    with torch.inference_mode():
        for c, k in pairs:
            ids = torch.tensor([(c + k)[:-1]], device=scorer.device)
            logits = scorer.model(input_ids=ids).logits.float()
            expected.append(_result(torch.log_softmax(logits[0, len(c) - 1 :], dim=-1), k, torch).logprob)

    def agrees() -> bool:
        got = scorer.score(pairs, 8)
        return all(
            isinstance(g, LoglikelihoodResult) and abs(g.logprob - e) <= 1e-3 * max(1.0, abs(e))
            for g, e in zip(got, expected, strict=True)
        )

    problems = []
    for attempt in ("shared", "padded"):
        try:
            if agrees():
                break
            problems.append(f"{attempt} scoring disagreed with a plain forward pass")
        except Exception as err:  # an unusual cache or attention: fall back to what the model supports
            problems.append(f"{attempt} scoring failed ({type(err).__name__}: {err})")
        if attempt == "shared":
            scorer.share_contexts = False
        else:
            scorer.padded = False
    return "; ".join(problems) or None
