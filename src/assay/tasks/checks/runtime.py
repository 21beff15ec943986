"""promptfoo 0.123.1's assertions on the response rather than its text: finish-reason, latency (ms, assay's recorded
latency), cost (USD from the response's tokens and the row_checks ``prices``), perplexity / perplexity-score (from
token logprobs, when a response records them), guardrails (a provider's content filter); and similar (cosine, dot or
euclidean of embeddings from promptfoo's embedding provider: the check's ``provider``, else the test's
``options.provider``, else promptfoo's default ``text-embedding-3-large`` at the OpenAI base URL; the calls go through
the model-graded family's graders, so they are retried, cached with the run and counted like judge calls; default
threshold 0.75)."""

from __future__ import annotations

import asyncio
import math
from typing import Any

from assay.tasks.checks.code import CheckError
from assay.tasks.checks.graded_rag import to_fixed
from assay.tasks.checks.jsmath import js_exp
from assay.tasks.checks.params import Params, result

PASSED = "Assertion passed"
EPSILON = 2.220446049250313e-16


def _num(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def finish_reason(p: Params) -> dict[str, Any]:
    value = p.value if p.value is not None else p.assertion.get("value")
    if not isinstance(value, str):
        raise CheckError('"finish-reason" assertion type must have a string value')
    got = p.row.response.finish_reason if p.row.response is not None else None
    if not got:
        passed = p.inverse
        return result(passed, PASSED if passed else "Provider did not supply stop/finish reason")
    passed = (value.lower() == got.lower()) != p.inverse
    neg = "not " if p.inverse else ""
    return result(passed, PASSED if passed else f'Expected finish reason {neg}"{value}" but got "{got}"')


def latency(p: Params) -> dict[str, Any]:
    if p.threshold is None:
        raise CheckError("Latency assertion must have a threshold in milliseconds")
    response = p.row.response
    if response is None or response.cached:
        raise CheckError(
            "Latency assertion does not support cached results (promptfoo's words: rerun with --no-cache); "
            + ("this output has no recorded request" if response is None else "this response came from the cache")
        )
    ms = round(response.latency_s * 1000)
    passed = (ms <= p.threshold) != p.inverse
    word = "less than or equal to" if p.inverse else "greater than"
    return result(passed, PASSED if passed else f"Latency {ms}ms is {word} threshold {_num(p.threshold)}ms")


def cost(p: Params) -> dict[str, Any]:
    """promptfoo's ``handleCost`` on the response's price: the run's ``--prices`` for the model first, then the
    provider config's ``cost``/``inputCost``/``outputCost`` (row_checks' ``prices``), then promptfoo's own table of
    OpenAI models (:mod:`assay.tasks.checks.openai_prices`), as promptfoo's OpenAI provider prices a call."""
    if p.threshold is None:
        raise CheckError("Cost assertion must have a threshold")
    response = p.row.response
    model = response.model if response is not None else None
    price = p.row.services.price(model, response.usage.input_tokens) if response is not None and model else None
    if response is None or price is None:
        known = ", ".join(sorted(p.row.services.prices or {})) or "none"
        raise CheckError(
            "Cost assertion does not support providers that do not return cost (promptfoo's words): no price for "
            f"model {model!r} in the run's --prices (or row_checks' 'prices'; priced: {known}), the provider's "
            "cost/inputCost/outputCost, or promptfoo's table of OpenAI models"
        )
    spent = (
        0.0
        if response.cached
        else response.usage.input_tokens * (float(price.get("input", 0)) / 1e6)
        + response.usage.output_tokens * (float(price.get("output", 0)) / 1e6)
    )  # promptfoo: inputCost * promptTokens + outputCost * completionTokens, the costs per token
    passed = (spent <= p.threshold) != p.inverse
    word = "less than or equal to" if p.inverse else "greater than"
    return result(passed, PASSED if passed else f"Cost {spent:.2g} is {word} threshold {_num(p.threshold)}")


def _logprobs(p: Params) -> list[float]:
    response = p.row.response
    values = response.metadata.get("logprobs") if response is not None else None
    if not isinstance(values, list) or not values:
        raise CheckError(
            f"{p.base} assertion does not support providers that do not return logProbs "
            "(this response records no token logprobs)"
        )
    return [float(v) for v in values]


def _js_sum(values: list[float]) -> float:
    total = 0.0
    for v in values:  # left to right, as reduce adds
        total += v
    return total


def perplexity(p: Params) -> dict[str, Any]:
    values = _logprobs(p)
    value = js_exp(-_js_sum(values) / len(values))
    passed = True if p.threshold is None else (value <= p.threshold) != p.inverse
    word = "less than or equal to" if p.inverse else "greater than"
    return result(passed, PASSED if passed else f"Perplexity {value:.2f} is {word} threshold {_num(p.threshold)}")


def perplexity_score(p: Params) -> dict[str, Any]:
    values = _logprobs(p)
    norm = 1 / (1 + js_exp(-(_js_sum(values) / len(values))))
    passed = True if p.threshold is None else (norm >= p.threshold) != p.inverse
    word = "greater than or equal to" if p.inverse else "less than"
    reason = PASSED if passed else f"Perplexity score {norm:.2f} is {word} threshold {_num(p.threshold)}"
    return {"pass": passed, "score": 1 - norm if p.inverse else norm, "reason": reason}


def guardrails(p: Params) -> dict[str, Any]:
    """A provider's content filter: assay's OpenAI-compatible models report it as finish reason content_filter."""
    response = p.row.response
    flagged = response is not None and (response.finish_reason or "").lower() == "content_filter"
    if flagged:
        passed = p.inverse
        why = "Content failed safety checks"
        return result(passed, f"Guardrail correctly blocked: {why}" if p.inverse else why)
    passed = not p.inverse
    why = (
        "Content was not blocked by guardrails (expected to be blocked)"
        if p.inverse
        else "Content passed safety checks"
    )
    return result(passed, why)


async def similar(p: Params) -> dict[str, Any]:
    value = p.value
    if not isinstance(value, str | list):
        raise CheckError("Similarity assertion type must have a string or array of strings value")
    if isinstance(value, list) and not value:
        raise CheckError("Similarity assertion must have at least one value to compare against")
    metric = p.base.split(":", 1)[1] if ":" in p.base else "cosine"
    if metric not in ("cosine", "dot", "euclidean"):
        raise CheckError(f"Unknown similarity metric: {metric}")
    threshold = 0.75 if p.threshold is None else float(p.threshold)
    refs = [str(v) for v in value] if isinstance(value, list) else [value]
    embedder = _Embedder(p)
    out = []
    for ref in refs:  # promptfoo's matchesSimilarity per value, in order: the value's and the output's embeddings
        expected, got = await asyncio.gather(embedder.embed(ref), embedder.embed(p.text))
        out.append(_similarity(metric, expected, got, threshold, p.inverse))
        if isinstance(value, list) and out[-1]["pass"] != p.inverse:
            break  # promptfoo stops at the first passing value (the first failing one, inverted)
    calls = embedder.judges()
    if not isinstance(value, list):
        return out[0] | calls
    if not isinstance(value, list):
        return out[0]
    if p.inverse:
        failing = next((r for r in out if not r["pass"]), None)
        return (failing or min(out, key=lambda r: r["score"])) | calls
    passing = next((r for r in out if r["pass"]), None)
    if passing is not None:
        return passing | calls
    return {
        "pass": False,
        "score": max(r["score"] for r in out),
        "reason": "None of the provided values met the similarity threshold",
    } | calls


class _Embedder:
    """promptfoo's embedding provider of one similar check (``getAndCheckProvider('embedding', ...)``), on the
    model-graded family's graders: each call is kept for the row's judge usage."""

    def __init__(self, p: Params) -> None:
        from assay.errors import ConfigError
        from assay.tasks.checks.graded import graders_of
        from assay.tasks.checks.graded_client import embedding_grader

        provider = p.assertion.get("provider") or p.row.options.get("provider")  # promptfoo's getFinalTest
        try:
            self.grader = embedding_grader(provider, "similarity check")
        except ConfigError as err:
            raise CheckError(str(err)) from None
        self.graders = graders_of(p.row.services.graded_cache)
        self.calls: list[Any] = []

    async def embed(self, text: str) -> list[float]:
        vector, record = await self.graders.embed(self.grader, text)
        self.calls.append(record)
        if vector is None:
            raise CheckError(f"the embedding from {record.model} failed: {record.error}")
        return vector

    def judges(self) -> dict[str, Any]:
        return {"judges": [c.to_dict() for c in self.calls]} if self.calls else {}


def _similarity(metric: str, a: list[float], b: list[float], threshold: float, inverse: bool) -> dict[str, Any]:
    """promptfoo's ``calculateSimilarityScore`` and ``buildSimilarityResult`` (a: the value's embedding, b: the
    output's)."""
    if len(a) != len(b):
        raise CheckError("Vectors must be of equal length")
    dot = _js_sum([x * y for x, y in zip(a, b, strict=True)])
    if metric == "euclidean":
        distance = math.sqrt(_js_sum([(x - y) * (x - y) for x, y in zip(a, b, strict=True)]))
        passed = distance >= threshold - EPSILON if inverse else distance <= threshold + EPSILON
        norm = 1 / (1 + distance)
        below = f"Distance {to_fixed(distance)} is less than or equal to threshold {_num(threshold)}"
        above = f"Distance {to_fixed(distance)} is greater than threshold {_num(threshold)}"
        reason = (above if inverse else below) if passed else (below if inverse else above)
        return {"pass": passed, "score": 1 - norm if inverse else norm, "reason": reason}
    if metric == "dot":
        similarity = dot
    else:
        na, nb = math.sqrt(_js_sum([x * x for x in a])), math.sqrt(_js_sum([y * y for y in b]))
        similarity = 0.0 if na == 0 or nb == 0 else dot / (na * nb)
    passed = similarity <= threshold + EPSILON if inverse else similarity >= threshold - EPSILON
    more = f"Similarity {to_fixed(similarity)} is greater than or equal to threshold {_num(threshold)}"
    less = f"Similarity {to_fixed(similarity)} is less than threshold {_num(threshold)}"
    reason = (less if inverse else more) if passed else (more if inverse else less)
    return {"pass": passed, "score": 1 - similarity if inverse else similarity, "reason": reason}
