"""The ``hf`` backend's log-likelihoods equal a plain forward pass per pair (to 1e-5), whatever the batching,
padding, shared-context cache or architecture; the token boundary is lm-eval's."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from assay.models.base import LoglikelihoodQuery, Request
from assay.models.hf import HFModel
from tests.loglik.lldata import arc_rows, wiki_rows
from tests.loglik.reference import Reference

TOL = 1e-5
REL = 1e-6  # a sum of ~60 float32 log-probs (-66.7) differs by 2 ULPs (1.5e-5) as kernels order it


def _queries() -> list[LoglikelihoodQuery]:
    out = []
    for row in arc_rows(24):
        context = f"Question: {row['question']}\nAnswer:"
        choices = tuple(row["choices"]["text"])
        conts = tuple(" " + c for c in choices)
        out.append(LoglikelihoodQuery(kind="multiple_choice", context=context, continuations=conts,
                                      choices=choices, unconditional=conts))  # fmt: skip
    out.append(LoglikelihoodQuery(kind="loglikelihood", context="Paris is the capital of ", continuations=("France",)))
    out.append(LoglikelihoodQuery(kind="loglikelihood", context="The sun", continuations=(" rises in the east",)))
    return out


async def _score(model: HFModel, queries: list[LoglikelihoodQuery]) -> list[dict]:
    requests = [Request(sample_id=str(i), messages=[], loglikelihood=q) for i, q in enumerate(queries)]
    responses = await asyncio.gather(*(model.generate(r) for r in requests))  # concurrent: batches of several
    await model.aclose()
    return [r.metadata["loglikelihood"] for r in responses]


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
@pytest.mark.parametrize(("share", "batch"), [(True, "auto"), (False, "auto"), (True, 1), (True, 3)])
def test_pairs_equal_a_plain_forward_pass(arch: str, share: bool, batch: int | str, request: pytest.FixtureRequest):
    folder: Path = request.getfixturevalue("tiny_lm" if arch == "gpt2" else "tiny_llama")
    ref = Reference(folder)
    model = HFModel(str(folder), share_contexts=share, batch_size=batch)  # type: ignore[arg-type]
    queries = _queries()
    got = asyncio.run(_score(model, queries))
    assert model.check_note is None  # the self-check found both batched paths right
    compared = 0
    for query, figures in zip(queries, got, strict=True):
        pairs = query.pairs()
        expected = [ref.pair(c, k) for c, k in pairs]
        n = len(query.continuations)
        for (lp, greedy, tokens), got_lp, got_greedy, got_tokens in zip(
            expected[:n], figures["logprobs"], figures["greedy"], figures["tokens"], strict=True
        ):
            assert got_lp == pytest.approx(lp, rel=REL, abs=TOL)
            assert (got_greedy, got_tokens) == (greedy, tokens)
            compared += 1
        if query.unconditional:
            for (lp, _, _), got_lp in zip(expected[n:], figures["unconditional"], strict=True):
                assert got_lp == pytest.approx(lp, rel=REL, abs=TOL)
                compared += 1
    assert compared > 150
    assert model._scoring is None  # closed


def test_shared_contexts_cost_fewer_forward_passes_for_the_same_figures(tiny_lm: Path):
    queries = _queries()[:12]
    shared, plain = HFModel(str(tiny_lm)), HFModel(str(tiny_lm), share_contexts=False)
    a, b = asyncio.run(_score(shared, queries)), asyncio.run(_score(plain, queries))
    for x, y in zip(a, b, strict=True):
        assert x["logprobs"] == pytest.approx(y["logprobs"], rel=REL, abs=TOL)
        assert x["greedy"] == y["greedy"]
    run_shared, run_plain = shared.loaded()[3].tokens_run, plain.loaded()[3].tokens_run
    assert run_shared < 0.6 * run_plain  # each context ran once, not once per choice


def test_a_context_longer_than_the_model_is_cut_from_the_left_as_lm_eval_does(tiny_lm: Path):
    ref = Reference(tiny_lm)
    long_context = "The quick brown fox jumps over the lazy dog. " * 30  # ~300 tokens, the model takes 128
    query = LoglikelihoodQuery(kind="multiple_choice", context=long_context, continuations=(" yes", " no at all"),
                               choices=("yes", "no at all"))  # fmt: skip
    ctx, cont = ref.split(long_context, " yes")
    assert len(ctx) + len(cont) > ref.max_length + 1
    figures = asyncio.run(_score(HFModel(str(tiny_lm)), [query]))[0]
    for got, continuation in zip(figures["logprobs"], query.continuations, strict=True):
        assert got == pytest.approx(ref.pair(long_context, continuation)[0], rel=REL, abs=TOL)


def test_rolling_texts_equal_a_forward_pass_and_long_ones_cover_every_token(tiny_lm: Path):
    ref = Reference(tiny_lm)
    texts = [row["page"] for row in wiki_rows()]
    query = LoglikelihoodQuery(kind="loglikelihood_rolling", continuations=(texts[0],))
    long_text = " ".join(texts)
    queries = [query, LoglikelihoodQuery(kind="loglikelihood_rolling", continuations=(long_text,))]
    short, long = asyncio.run(_score(HFModel(str(tiny_lm)), queries))
    lp, n = ref.text(texts[0])
    assert short["logprobs"][0] == pytest.approx(lp, rel=REL, abs=TOL)
    assert short["tokens"] == [n]
    ids = ref.tokenizer.encode(long_text)
    assert len(ids) > 2 * ref.max_length  # three windows or more
    assert long["tokens"] == [len(ids)]  # every token scored once
    # the first window is the text's first max_length tokens after BOS, as a plain forward pass scores them
    first = ref.tokens([ref.tokenizer.bos_token_id], ids[: ref.max_length])[0]
    assert long["logprobs"][0] < first  # the later windows add their (negative) log-likelihoods


def test_one_batch_mixing_long_rolling_windows_and_short_shared_choices(tiny_lm: Path):
    """Groups with different contexts share one continuation pass: a short row's padding must not run past the
    model's positions (it raised IndexError before positions were clamped)."""
    ref = Reference(tiny_lm)
    long_text = " ".join(row["page"] for row in wiki_rows())
    context = "Question: what is related to " * 3 + "\nAnswer:"
    model = HFModel(str(tiny_lm), batch_size=64)
    _, _, splitter, scorer = model.loaded()
    units = splitter.rolling([long_text], scorer.max_length)[0][:1]  # a 1-token context, 128 tokens to score
    units += units[:1]  # a second window after the same 1-token context: a shared group
    units += splitter.pairs([(context, " yes"), (context, " the quick brown fox")])
    got = scorer.score(units, 64)
    for (ctx, cont), result in zip(units, got, strict=True):
        assert not isinstance(result, Exception)
        assert result.logprob == pytest.approx(ref.tokens(ctx, cont)[0], rel=REL, abs=TOL)
