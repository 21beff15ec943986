"""G-Eval's probability-weighted score on llm_judge (score_from: logprobs), over real HTTP with scripted logprobs."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from assay.errors import ConfigError
from assay.evaluators.judge.evaluator import LLMJudge


def reply_with_logprobs(text: str, grade: str, alternatives: dict[str, float]) -> dict[str, Any]:
    """The reply ``text`` as one token per character, except the (last) grade token, which carries the given
    alternatives (token -> probability) as its top_logprobs."""
    at = text.rindex(grade)
    pieces = [*text[:at], grade, *text[at + len(grade) :]]
    content = []
    for i, piece in enumerate(pieces):
        entry: dict[str, Any] = {"token": piece, "logprob": 0.0, "top_logprobs": []}
        if i == at:
            entry["logprob"] = math.log(alternatives[grade])
            entry["top_logprobs"] = [{"token": t, "logprob": math.log(p)} for t, p in alternatives.items()]
        content.append(entry)
    return {"text": text, "logprobs": {"content": content}}


# at the grade token: "4" 60 %, "3" 25 %, "5" 10 %; " x" is no number, "9" is off the 1-5 scale, "2" is under 1 %
ALTERNATIVES = {"4": 0.6, "3": 0.25, "5": 0.1, " x": 0.03, "9": 0.02, "2": 0.005}
# by hand: kept 4, 3, 5 with mass 0.95; (4*0.6 + 3*0.25 + 5*0.1) / 0.95 = 3.65 / 0.95; on [0, 1]: (g - 1) / 4
WEIGHTED = 3.65 / 0.95
SCORE = (WEIGHTED - 1) / 4


def judge(server: Any, **options: Any) -> LLMJudge:
    spec = {"provider": "openai", "model": "judge", "base_url": server.base_url}
    return LLMJudge(model=spec, criteria="helpful", scale="1-5", reference=None, **options)


def test_weighted_score_equals_the_hand_computation(serve):
    # the explanation quotes a score of 2 first: the grade read is the one the "score" key holds
    text = json.dumps({"explanation": 'not a "score": 2', "problem": "", "fix": "", "score": 4})
    server = serve(lambda request: reply_with_logprobs(text, "4", ALTERNATIVES))
    verdict = judge(server, score_from="logprobs", pass_threshold=0.7).evaluate("an answer")
    assert verdict.error is None
    assert verdict.score == pytest.approx(SCORE)
    assert verdict.passed  # 0.7105 >= 0.7, while the written 4 alone would be 0.75
    call = verdict.details["judges"][0]
    assert call["weighted_grade"] == pytest.approx(WEIGHTED)
    assert call["grade_probabilities"] == pytest.approx({"3": 0.25 / 0.95, "4": 0.6 / 0.95, "5": 0.1 / 0.95})
    assert call["grade"] == 4
    sent = server.requests[0]
    assert sent["logprobs"] is True and sent["top_logprobs"] == 20


def test_the_written_grade_is_used_without_the_option(serve):
    text = json.dumps({"explanation": "ok", "problem": "", "fix": "", "score": 4})
    server = serve(lambda request: reply_with_logprobs(text, "4", ALTERNATIVES))
    verdict = judge(server).evaluate("an answer")
    assert verdict.score == 0.75
    assert "logprobs" not in server.requests[0]


def test_a_server_without_logprobs_is_an_error_verdict_that_says_so(serve):
    server = serve(json.dumps({"explanation": "ok", "problem": "", "fix": "", "score": 4}))
    verdict = judge(server, score_from="logprobs").evaluate("an answer")
    assert verdict.is_error and math.isnan(verdict.score)
    assert "returned no log-probabilities" in verdict.error and "score_from: reply" in verdict.error


def test_a_grade_split_over_tokens_is_an_error(serve):
    text = json.dumps({"explanation": "ok", "problem": "", "fix": "", "score": 10})
    reply = reply_with_logprobs(text, "0", {"0": 0.9, "1": 0.1})  # "1" and "0" are two tokens
    server = serve(lambda request: reply)
    verdict = LLMJudge(
        model={"provider": "openai", "model": "judge", "base_url": server.base_url},
        criteria="helpful",
        scale="1-10",
        reference=None,
        score_from="logprobs",
    ).evaluate("an answer")
    assert verdict.is_error and "spread over several tokens" in verdict.error


def test_weighting_needs_an_integer_scale():
    with pytest.raises(ConfigError, match="integer scale"):
        LLMJudge(model="openai:gpt-4o", criteria="c", scale="binary", score_from="logprobs")


def test_a_cached_judgement_keeps_its_logprobs(serve):
    text = json.dumps({"explanation": "ok", "problem": "", "fix": "", "score": 4})
    server = serve(lambda request: reply_with_logprobs(text, "4", ALTERNATIVES))
    first = judge(server, score_from="logprobs", cache=True).evaluate("an answer")
    again = judge(server, score_from="logprobs", cache=True).evaluate("an answer")
    assert len(server.requests) == 1 and again.details["judges"][0]["cached"] is True
    assert again.score == first.score == pytest.approx(SCORE)
