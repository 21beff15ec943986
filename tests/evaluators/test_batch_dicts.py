"""BatchResult.to_dicts: the text evaluators' bulk verdict dicts are exactly those of the per-pair path, and only
failing pairs are judged again."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from assay import evaluators
from assay.evaluators.base import BatchResult
from assay.evaluators.text import common
from assay.verdict import Verdict

_WORD_TEXT = "Zürich café naïve 東京 서울 Москва Αθήνα the a an of river-the old new great saint port lake 42 7"
WORDS = _WORD_TEXT.split(" ")


def pairs(n: int, seed: int = 3) -> tuple[list[Any], list[Any]]:
    """Exact, close (case, punctuation, article, extra word, NUL), wrong, blank, empty and long predictions."""
    rnd = random.Random(seed)
    actuals, expecteds = [], []
    for _ in range(n):
        answer = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(0, 4)))
        r = rnd.random()
        if r < 0.35:
            out = answer
        elif r < 0.55:
            forms = [answer.upper() + ".", f"the {answer}", f"{answer} {rnd.choice(WORDS)}", f" {answer}!", " \t "]
            out = rnd.choice([*forms, f"«{answer}»\n", f"{answer}\x00{answer}", f"Answer: {answer} 123"])
        elif r < 0.95:
            out = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(0, 6)))
        else:
            out = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(100, 300)))
        actuals.append(out)
        expecteds.append(answer)
    return actuals, expecteds


def per_pair(ev: evaluators.Evaluator, actuals: list[Any], expecteds: list[Any]) -> list[str]:
    return [
        json.dumps(ev.evaluate(a, e).to_dict(), ensure_ascii=False) for a, e in zip(actuals, expecteds, strict=True)
    ]


CASES = [
    ("exact_match", {}),
    ("exact_match", {"ignore_case": True, "ignore_punctuation": True}),
    ("exact_match", {"ignore_case": True, "ignore_whitespace": True, "ignore_articles": True}),
    ("exact_match", {"ignore_articles": True}),
    ("exact_match", {"ignore_numbers": True, "strip": True}),
    ("exact_match", {"ignore_case": True, "strip": True}),
    ("exact_match", {"regexes_to_ignore": [r"\d+", "^the "], "ignore_punctuation": True}),
    ("token_f1", {}),
    ("token_f1", {"threshold": 0.3}),
    ("token_f1", {"threshold": 1.0}),
]


@pytest.mark.parametrize(("name", "options"), CASES, ids=lambda x: x if isinstance(x, str) else str(x))
def test_bulk_dicts_equal_the_per_pair_verdicts(name: str, options: dict[str, Any]) -> None:
    ev = evaluators.get(name, **options)
    actuals, expecteds = pairs(3000)
    batch = ev.evaluate_batch(actuals, expecteds)
    got = [json.dumps(d, ensure_ascii=False) for d in batch.to_dicts()]  # byte-equal: 1 is not 1.0, key order
    assert got == per_pair(ev, actuals, expecteds)
    assert 0 < int(batch.passed.sum()) < len(actuals)  # both kinds of verdict are compared


@pytest.mark.parametrize("name", ["exact_match", "token_f1"])
def test_bulk_dicts_with_chunks_judged_pair_by_pair(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # chunks holding a list of answers or a non-text output fall back to the per-pair path; the others stay fast
    monkeypatch.setattr(common, "BATCH_CHUNK", 4)
    ev = evaluators.get(name)
    actuals, expecteds = pairs(40, seed=5)
    expecteds[5] = ["nope", actuals[5]]
    actuals[13] = {"text": expecteds[13]}
    expecteds[22] = []  # an input error: an error verdict
    batch = ev.evaluate_batch(actuals, expecteds)
    assert batch._fast is not None and 0 < int(batch._fast.sum()) < len(actuals)
    got = [json.dumps(d, ensure_ascii=False) for d in batch.to_dicts()]
    assert got == per_pair(ev, actuals, expecteds)
    assert json.loads(got[22])["error"]


@pytest.mark.parametrize("name", ["exact_match", "token_f1"])
def test_only_failing_pairs_are_judged_again(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ev = evaluators.get(name)
    actuals, expecteds = pairs(500, seed=9)
    batch = ev.evaluate_batch(actuals, expecteds)
    judged: list[Any] = []
    original = type(ev).check

    def counting(self: Any, actual: Any, expected: Any) -> Verdict:
        judged.append(actual)
        return original(self, actual, expected)

    monkeypatch.setattr(type(ev), "check", counting)
    dicts = batch.to_dicts()
    # failing pairs' reasons are built from the batch's columns too
    assert judged == []
    assert [d["passed"] for d in dicts] == batch.passed.tolist()
    assert not all(d["passed"] for d in dicts)


def test_a_batch_without_bulk_dicts_gives_its_verdicts_dicts() -> None:
    verdicts = [Verdict.pass_(details={"k": 1}), Verdict.fail("no", feedback="do"), Verdict.errored("bad")]
    batch = BatchResult.from_verdicts("x", verdicts)
    assert batch.to_dicts() == [v.to_dict() for v in verdicts]


@pytest.mark.parametrize("with_nul", [False, True], ids=["numpy-tokens", "nul-pair-by-pair"])
def test_token_f1_bulk_dicts_with_hidden_articles_and_combining_marks(with_nul: bool) -> None:
    # the batch's own tokens (articles inside tokens expanded, combining marks splitting words) feed the feedback
    words = ["the", "a", "an", "The", "the–end", "a–b–the", "e\u0301", "the\u0301", "x", "y", "«a»", "an.", "thé"]
    words += ["ऄ", "\u0301", "—", "", "1", "a_the"] + (["the\x00a"] if with_nul else [])
    rnd = random.Random(7)
    actuals, expecteds = [], []
    for _ in range(1500):
        expected = " ".join(rnd.choice(words) for _ in range(rnd.randint(0, 4)))
        actual = " ".join(rnd.choice(words) for _ in range(rnd.randint(0, 8)))
        actuals.append(expected if rnd.random() < 0.2 else actual)
        expecteds.append(expected)
    ev = evaluators.get("token_f1", threshold=0.6)
    batch = ev.evaluate_batch(actuals, expecteds)
    assert batch._fast is not None and batch._fast.all()
    got = [json.dumps(d, ensure_ascii=False) for d in batch.to_dicts()]
    assert got == per_pair(ev, actuals, expecteds)
    assert 0 < int(batch.passed.sum()) < len(actuals)
