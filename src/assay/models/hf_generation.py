"""Generation with a local ``transformers`` causal LM: batched, left-padded, greedy unless asked otherwise.

As lm-eval's ``hf`` backend generates (``generate_until``): the prompt is cut from the left to leave room for the new
tokens, decoding stops at the first ``stop`` string (cut from the text) or the end-of-text token, and at most
``max_tokens`` (default ``max_gen_toks``) tokens are made. Prompts with the same parameters share a batch.
"""

from __future__ import annotations

import json
import time
from typing import Any

from assay.models.base import ModelError, Request, Response, Usage

SAMPLING = ("temperature", "top_p", "top_k")
KNOWN = frozenset({"temperature", "top_p", "top_k", "max_tokens", "max_completion_tokens", "stop", "seed"})


def prompt_of(request: Request, chat_template: bool, tokenizer: Any) -> str:
    """The text to continue: a lone user message's content; a chat through the tokenizer's chat template when asked
    (and it has one), else its messages' contents joined by blank lines."""
    if request.tools:
        raise ModelError("hf: a local model does not call tools; this task sends tools")
    messages = request.messages
    if chat_template and getattr(tokenizer, "chat_template", None):
        return str(tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))
    if len(messages) == 1 and isinstance(messages[0].get("content"), str):
        return str(messages[0]["content"])
    return "\n\n".join(str(m.get("content") or "") for m in messages)


def _stops(params: dict[str, Any]) -> list[str]:
    stop = params.get("stop")
    if stop is None:
        return []
    return [stop] if isinstance(stop, str) else [s for s in stop if isinstance(s, str) and s]


def generate_batch(
    model: Any,
    tokenizer: Any,
    jobs: list[tuple[str, dict[str, Any]]],
    *,
    device: str | None,
    max_length: int,
    max_gen_toks: int,
    batch_rows: int,
    name: str,
) -> list[Any]:
    """A Response (or ModelError) per (prompt, params) job; jobs with equal parameters are generated together."""
    out: list[Any] = [None] * len(jobs)
    groups: dict[str, list[int]] = {}
    for i, (_, params) in enumerate(jobs):
        unknown = sorted(set(params) - KNOWN)
        if unknown:
            out[i] = ModelError(f"hf: generation parameter {unknown[0]!r} is not supported (known: {sorted(KNOWN)})")
            continue
        groups.setdefault(json.dumps(params, sort_keys=True, default=str), []).append(i)
    for members in groups.values():
        members.sort(key=lambda i: -len(jobs[i][0]))
        for start in range(0, len(members), max(1, batch_rows)):
            chunk = members[start : start + max(1, batch_rows)]
            made: list[Any]
            try:
                made = _generate(model, tokenizer, [jobs[i][0] for i in chunk], jobs[chunk[0]][1], device=device,
                                 max_length=max_length, max_gen_toks=max_gen_toks, name=name)  # fmt: skip
            except ValueError as err:  # e.g. a bad parameter value for transformers
                made = [ModelError(f"hf: {err}")] * len(chunk)
            for i, response in zip(chunk, made, strict=True):
                out[i] = response
    return out


def _generate(
    model: Any,
    tokenizer: Any,
    prompts: list[str],
    params: dict[str, Any],
    *,
    device: str | None,
    max_length: int,
    max_gen_toks: int,
    name: str,
) -> list[Response]:
    import torch

    started = time.perf_counter()
    new_tokens = int(params.get("max_tokens") or params.get("max_completion_tokens") or max_gen_toks)
    stops = _stops(params)
    room = max(1, max_length - new_tokens)
    encoded = [ids[-room:] for ids in tokenizer(prompts)["input_ids"]]  # the prompt cut from the left, as lm-eval
    width = max(len(ids) for ids in encoded)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    ids = torch.full((len(encoded), width), int(pad or 0), dtype=torch.long)
    mask = torch.zeros((len(encoded), width), dtype=torch.long)
    for j, row in enumerate(encoded):
        if row:
            ids[j, width - len(row) :] = torch.tensor(row, dtype=torch.long)
            mask[j, width - len(row) :] = 1
    temperature = params.get("temperature")
    sample = isinstance(temperature, int | float) and temperature > 0
    kwargs: dict[str, Any] = {"max_new_tokens": new_tokens, "do_sample": sample, "pad_token_id": int(pad or 0)}
    if sample:
        kwargs.update({k: params[k] for k in SAMPLING if params.get(k) is not None})
        if isinstance(params.get("seed"), int):
            torch.manual_seed(params["seed"])
    else:
        kwargs.update(temperature=None, top_p=None, top_k=None)
    if stops:
        kwargs.update(stop_strings=stops, tokenizer=tokenizer)
    with torch.inference_mode():
        generated = model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), **kwargs)
    latency = time.perf_counter() - started
    eos = tokenizer.eos_token_id
    out = []
    for j, row in enumerate(generated.tolist()):
        made = row[width:]
        ended = eos is not None and eos in made
        if ended:
            made = made[: made.index(eos)]
        text = tokenizer.decode(made, skip_special_tokens=True)
        cut = min((text.find(s) for s in stops if s in text), default=-1)
        if cut >= 0:
            text = text[:cut]
        finish = "stop" if ended or cut >= 0 else "length" if len(made) >= new_tokens else "stop"
        usage = Usage(input_tokens=len(encoded[j]), output_tokens=len(made))
        out.append(Response(text=text, usage=usage, latency_s=latency, finish_reason=finish, model=name))
    return out
