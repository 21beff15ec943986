"""exact_match and token_f1 defer what only the verdict dicts need (the failing pairs' normalised texts, their
tokens as strings) to :meth:`BatchResult.to_dicts`, chunk by chunk, and the dicts built so equal the per-pair
verdicts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from assay import evaluators
from assay.evaluators.normalize import Normalizer
from assay.evaluators.text import common
from tests.evaluators.test_batch_dicts import pairs, per_pair


def _counting_many(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Patch Normalizer.many to record how many texts each call normalises."""
    calls: list[int] = []
    original = Normalizer.many

    def many(self: Normalizer, texts: Any) -> list[str]:
        calls.append(len(texts))
        return original(self, texts)

    monkeypatch.setattr(Normalizer, "many", many)
    return calls


@pytest.mark.parametrize(
    "options", [{}, {"ignore_case": True, "ignore_punctuation": True}, {"ignore_whitespace": True, "strip": True}]
)
def test_scores_do_not_normalise_failing_pairs_again(options: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common, "BATCH_CHUNK", 64)
    ev = evaluators.get("exact_match", **options)
    actuals, expecteds = pairs(1000, seed=11)
    calls = _counting_many(monkeypatch)
    batch = ev.evaluate_batch(actuals, expecteds)
    assert calls == []  # scores and passed only: no work for reasons
    failing = int((~batch.passed).sum())
    assert failing > 0
    got = [json.dumps(d, ensure_ascii=False) for d in batch.to_dicts()]
    assert got == per_pair(ev, actuals, expecteds)
    # one pass for the outputs and one for the answers per chunk, over that chunk's failing pairs only
    assert sum(calls) == 2 * failing and len(calls) <= 2 * -(-len(actuals) // 64)
    first, second = batch.to_dicts(), batch.to_dicts()
    assert [json.dumps(d, ensure_ascii=False) for d in second] == got  # built again, not from what the first left
    assert all(a is not b for a, b in zip(first, second, strict=True))  # no dict is shared between two callers


def test_deferred_dicts_with_nul_lists_and_non_text(monkeypatch: pytest.MonkeyPatch) -> None:
    # chunks of 4: some vectorised with failing pairs (NUL inside texts, non-ASCII), some judged pair by pair
    monkeypatch.setattr(common, "BATCH_CHUNK", 4)
    ev = evaluators.get("exact_match", ignore_case=True, ignore_punctuation=True)
    actuals, expecteds = pairs(60, seed=21)
    actuals[1], expecteds[1] = "A\x00b", "a\x00B!"  # passes through the NUL fallback
    actuals[2], expecteds[2] = "Zürich\x00", "zurich"  # fails, with NUL
    expecteds[9] = ["nope", actuals[9]]  # a list of answers: its chunk goes pair by pair
    actuals[17] = 42  # a non-text output: an error verdict, its chunk pair by pair
    actuals[26] = {"text": "Straße"}
    batch = ev.evaluate_batch(actuals, expecteds)
    assert batch._fast is not None and 0 < int(batch._fast.sum()) < len(actuals)
    assert not batch.passed[2] and batch.passed[1]
    got = [json.dumps(d, ensure_ascii=False) for d in batch.to_dicts()]
    assert got == per_pair(ev, actuals, expecteds)
    assert [json.dumps(batch[i].to_dict(), ensure_ascii=False) for i in range(len(batch))] == got


@pytest.mark.parametrize("threshold", [0.3, 0.5, 1.0])
@pytest.mark.parametrize("nul", [True, False])
def test_token_f1_keeps_failing_tokens_per_chunk(threshold: float, nul: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common, "BATCH_CHUNK", 64)
    ev = evaluators.get("token_f1", threshold=threshold)
    actuals, expecteds = pairs(1000, seed=13)  # some texts hold NUL: their chunks tokenise pair by pair
    if not nul:  # every chunk tokenised as one stream
        actuals = [a.replace("\x00", " ") for a in actuals]
    batch = ev.evaluate_batch(actuals, expecteds)
    assert int((~batch.passed).sum()) > 0
    got = [json.dumps(d, ensure_ascii=False) for d in batch.to_dicts()]
    assert got == per_pair(ev, actuals, expecteds)
    assert [json.dumps(d, ensure_ascii=False) for d in batch.to_dicts()] == got
