"""Batch scoring throughput of the vectorised text evaluators against two per-pair baselines.

For exact_match (1,000,000 pairs, ignore_case + ignore_punctuation), token_f1 (200,000 pairs) and fuzzy_match
(200,000 pairs, ratio + ignore_case), on seeded QA-like strings, prints items/s for:

- batch: ``evaluator.evaluate_batch(actuals, expecteds)`` (what the runner calls);
- loop: a plain Python loop calling ``evaluator.evaluate(a, e)`` per pair (builds every Verdict);
- inline: a minimal hand-written per-pair loop doing only the normalisation and the comparison;

and the ratios batch/loop (target >= 5x) and batch/inline. Batch and inline figures are the best of
``REPEATS`` runs; the slow per-pair evaluate() loop runs once (it is the baseline, and the costliest part).
"""

from __future__ import annotations

import random
import string
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

from assay import evaluators
from assay.evaluators.base import BatchResult
from assay.evaluators.normalize import squad_normalize
from assay.verdict import Verdict

REPEATS = 3
SEED = 20240601
R = TypeVar("R")

_WORDS = [
    word
    for line in (
        "paris london berlin rome madrid lisbon vienna prague warsaw dublin oslo tokyo kyoto seoul delhi cairo lima",
        "river mountain ocean desert island valley forest lake bridge tower castle cathedral museum library station",
        "einstein newton curie darwin tesla galileo kepler bohr turing lovelace hopper shannon noether euler gauss",
        "red blue green yellow black white golden silver ancient modern northern southern eastern western great",
        "king queen prince duke emperor president general captain doctor professor poet painter composer engineer",
    )
    for word in line.split()
]
_LEADS = ["The answer is", "It is", "I think it's", "Answer:", "Probably", "That would be", "Final answer:"]

# Real answer sets: names and places in accented Latin, Greek, Cyrillic, CJK, Arabic and Hebrew (right to left),
# emoji, and the punctuation of those scripts («», ¿, 。, ،), beside plain ASCII words.
_MIXED_WORDS = _WORDS[::3] + [
    word
    for line in (
        "São Paulo Zürich Málaga Kraków Reykjavík Curaçao Dvořák Gödel Poincaré Ærøskøbing Île-de-France",
        "Αθήνα Ελλάδα Σωκράτης Москва Санкт-Петербург Чайковский",
        "東京 北京 大阪 京都大学 孔子 서울 부산 세종대왕 こんにちは 富士山",
        "القاهرة بغداد دمشق ابن_سينا ירושלים תל_אביב חיפה",
        "🚀 🎉 👍🏽 🇯🇵 ❤️ 🌍",
    )
    for word in line.split()
]
_MIXED_LEADS = [*_LEADS[:3], "La respuesta es", "Die Antwort ist", "答えは", "Ответ:", "الجواب هو", "התשובה היא"]
_MIXED_ENDS = [".", "!", "?", "。", "»", "؟", " 🙂", "…"]


def _answer(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.2:
        return str(rng.randint(1, 3000))
    if kind < 0.3:
        return f"{rng.randint(1, 28)} {rng.choice(['May', 'June', 'July', 'March'])} {rng.randint(1800, 2024)}"
    words = rng.sample(_WORDS, rng.randint(1, 4))
    if rng.random() < 0.3:
        words.insert(0, "the")
    return " ".join(w.capitalize() for w in words)


def _prediction(rng: random.Random, gold: str) -> str:
    r = rng.random()
    if r < 0.25:
        return gold
    if r < 0.40:
        return gold.lower() if rng.random() < 0.5 else gold.upper()
    if r < 0.55:
        return gold + rng.choice([".", "!", "?", "."])
    if r < 0.70:
        return f"{rng.choice(_LEADS)} {gold}."
    if r < 0.80 and len(gold) > 3:
        i = rng.randrange(len(gold))
        return gold[:i] + rng.choice(string.ascii_lowercase) + gold[i + 1 :]  # a typo
    if r < 0.90:
        return " ".join(rng.sample(gold.split(), len(gold.split())))
    return _answer(rng)  # wrong


def _mixed_answer(rng: random.Random) -> str:
    if rng.random() < 0.15:
        return str(rng.randint(1, 3000))
    return " ".join(w.capitalize() for w in rng.sample(_MIXED_WORDS, rng.randint(1, 3)))


def _mixed_prediction(rng: random.Random, gold: str) -> str:
    r = rng.random()
    if r < 0.25:
        return gold
    if r < 0.40:
        return gold.lower() if rng.random() < 0.5 else gold.upper()
    if r < 0.55:
        return gold + rng.choice(_MIXED_ENDS)
    if r < 0.70:
        return f"{rng.choice(_MIXED_LEADS)} «{gold}»{rng.choice(_MIXED_ENDS)}"
    if r < 0.80 and len(gold) > 3:
        i = rng.randrange(len(gold))
        return gold[:i] + rng.choice("aeéøßж東") + gold[i + 1 :]  # a typo
    if r < 0.90:
        return " ".join(rng.sample(gold.split(), len(gold.split())))
    return _mixed_answer(rng)  # wrong


def make_pairs(n: int, seed: int = SEED, mixed: bool = False) -> tuple[list[str], list[str]]:
    """``n`` (prediction, gold answer) pairs, QA-like, reproducible; ASCII, or ``mixed`` scripts."""
    rng = random.Random(seed)
    answer, prediction = (_mixed_answer, _mixed_prediction) if mixed else (_answer, _prediction)
    golds = [answer(rng) for _ in range(n)]
    preds = [prediction(rng, g) for g in golds]
    return preds, golds


def _timed(fn: Callable[[], R], repeats: int = REPEATS) -> tuple[float, R]:
    """The best wall time of ``repeats`` runs of ``fn``, and what it returned."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def _compare(
    name: str,
    n: int,
    batch: Callable[[], BatchResult],
    loop: Callable[[], list[Verdict]],
    inline: Callable[[], list[Any]],
    summary: Callable[[list[Any]], str],
) -> None:
    """Time the three ways, check that they agree, and print items/s and the ratios."""
    batch_s, batch_result = _timed(batch)
    loop_s, verdicts = _timed(loop, repeats=1)  # the slow baseline runs once
    inline_s, inline_result = _timed(inline)
    column = batch_result.passed if isinstance(inline_result[0], bool) else batch_result.scores
    assert column.tolist() == inline_result, f"{name}: batch and inline results disagree"
    assert batch_result.scores.tolist() == [v.score for v in verdicts], f"{name}: batch and evaluate() disagree"
    print(f"{name}: {n:,} pairs  ({summary(inline_result)})")
    print(f"  batch   evaluate_batch      {n / batch_s:>12,.0f} items/s  ({batch_s:.3f}s)")
    print(f"  loop    evaluate() per pair {n / loop_s:>12,.0f} items/s  ({loop_s:.3f}s)")
    print(f"  inline  hand-written loop   {n / inline_s:>12,.0f} items/s  ({inline_s:.3f}s)")
    target = "meets" if loop_s / batch_s >= 5 else "MISSES"
    print(f"  batch/loop {loop_s / batch_s:5.1f}x ({target} the 5x target)   batch/inline {inline_s / batch_s:5.2f}x")


def bench_exact_match(n: int = 1_000_000) -> None:
    """exact_match with ignore_case + ignore_punctuation; inline: lower() and translate() per pair."""
    preds, golds = make_pairs(n)
    ev = evaluators.get("exact_match", ignore_case=True, ignore_punctuation=True)
    table = str.maketrans("", "", string.punctuation)
    _compare(
        "exact_match",
        n,
        lambda: ev.evaluate_batch(preds, golds),
        lambda: [ev.evaluate(a, e) for a, e in zip(preds, golds, strict=True)],
        lambda: [a.lower().translate(table) == e.lower().translate(table) for a, e in zip(preds, golds, strict=True)],
        lambda r: f"pass rate {sum(r) / n:.3f}",
    )


def _squad_f1(a: str, e: str) -> float:
    pred = squad_normalize(a).split()
    gold = squad_normalize(e).split()
    if not pred or not gold:
        return float(pred == gold)
    same = sum((Counter(pred) & Counter(gold)).values())
    if same == 0:
        return 0.0
    p, r = same / len(pred), same / len(gold)
    return 2 * p * r / (p + r)


def bench_token_f1(n: int = 200_000) -> None:
    """token_f1; inline: SQuAD normalisation, Counter overlap and F1 per pair (the official script's way)."""
    preds, golds = make_pairs(n, SEED + 1)
    ev = evaluators.get("token_f1")
    _compare(
        "token_f1",
        n,
        lambda: ev.evaluate_batch(preds, golds),
        lambda: [ev.evaluate(a, e) for a, e in zip(preds, golds, strict=True)],
        lambda: [_squad_f1(a, e) for a, e in zip(preds, golds, strict=True)],
        lambda r: f"mean F1 {sum(r) / n:.3f}",
    )


def bench_fuzzy_match(n: int = 200_000) -> None:
    """fuzzy_match (ratio, ignore_case); inline: lower() and rapidfuzz's fuzz.ratio per pair."""
    from rapidfuzz import fuzz

    preds, golds = make_pairs(n, SEED + 2)
    ev = evaluators.get("fuzzy_match", algorithm="ratio", ignore_case=True)

    def inline() -> list[float]:
        out = []
        for a, e in zip(preds, golds, strict=True):
            a, e = a.lower(), e.lower()
            out.append(1.0 if a == e else fuzz.ratio(a, e) / 100)
        return out

    _compare(
        "fuzzy_match",
        n,
        lambda: ev.evaluate_batch(preds, golds),
        lambda: [ev.evaluate(a, e) for a, e in zip(preds, golds, strict=True)],
        inline,
        lambda r: f"mean similarity {sum(r) / n:.3f}",
    )


def main() -> None:
    """Run the three throughput comparisons and print items/s and ratios."""
    bench_exact_match()
    bench_token_f1()
    bench_fuzzy_match()


if __name__ == "__main__":
    main()
