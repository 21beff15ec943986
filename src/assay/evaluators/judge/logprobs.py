"""G-Eval's probability-weighted score: the judge's grade read from the probabilities of its grade token.

G-Eval (Liu et al. 2023, arXiv:2303.16634) scores ``Σ p(sᵢ) · sᵢ`` over the scale's grades instead of the one grade
sampled. This follows DeepEval's implementation (``deepeval.metrics.g_eval.utils.calculate_weighted_summed_score``):
at the token that carries the grade, the ``top_logprobs`` alternatives that are whole numbers are kept, those below
1 % probability are dropped, probabilities of the same grade are added, and the weighted sum is divided by the kept
probability mass (so the kept grades' probabilities sum to 1). Two differences, both to read the right token: the
grade token is found where the grade stands in the reply (the value of its ``"score"`` key, or its ``SCORE:`` line),
not at the first token that happens to equal the grade; and grades outside the scale are not counted.

A server that sends no log-probabilities, or a grade spread over several tokens, is an error verdict that says so:
never a silent fall-back to the written grade.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assay.evaluators.judge.parse import JudgeReplyError, Scale

MIN_PROBABILITY = 0.01  # DeepEval drops alternatives below 1 % (logprob < ln 0.01)
_GRADE_AT = re.compile(
    r'"(?:score|grade)"\s*:\s*"?(?P<json>[+-]?\d+)|^[ \t*_#`-]*(?:SCORE|GRADE)[ \t*_`]*:[ \t*_`]*(?P<line>[+-]?\d+)',
    re.IGNORECASE | re.MULTILINE,
)


@dataclass(frozen=True)
class Weighted:
    """The probability-weighted grade, its score in [0, 1], and the grade probabilities behind it."""

    grade: float
    score: float
    probabilities: dict[int, float]  # grade -> probability, renormalised over the grades kept
    token: int  # the index of the grade's token in the reply

    def details(self) -> dict[str, Any]:
        """The JSON-safe record kept beside the judge call."""
        return {
            "weighted_grade": self.grade,
            "grade_probabilities": {str(k): v for k, v in sorted(self.probabilities.items())},
            "grade_token": self.token,
        }


def request_params(top_logprobs: int) -> dict[str, Any]:
    """The chat-completion parameters that ask for the reply's log-probabilities."""
    return {"logprobs": True, "top_logprobs": top_logprobs}


def _tokens(logprobs: Any) -> list[Mapping[str, Any]]:
    """The reply's tokens from an OpenAI chat ``logprobs`` object (its ``content`` list)."""
    content = logprobs.get("content") if isinstance(logprobs, Mapping) else None
    if not isinstance(content, Sequence) or not content:
        return []
    return [t for t in content if isinstance(t, Mapping) and isinstance(t.get("token"), str)]


def _grade_token(tokens: list[Mapping[str, Any]], grade: float) -> int:
    """The index of the token that holds the written grade (the last place the reply states it)."""
    text = "".join(str(t["token"]) for t in tokens)
    starts, pos = [], 0
    for t in tokens:
        starts.append(pos)
        pos += len(str(t["token"]))
    places = [m for m in _GRADE_AT.finditer(text) if int(m["json"] or m["line"]) == int(grade)]
    if not places:
        raise JudgeReplyError(f"the reply's tokens do not state the grade {grade:g} where it can be weighed")
    group = "json" if places[-1]["json"] is not None else "line"
    at = places[-1].start(group)
    index = max(i for i, start in enumerate(starts) if start <= at)
    if str(tokens[index]["token"]).strip() != str(int(grade)):
        raise JudgeReplyError(
            f"the grade {grade:g} is spread over several tokens ({tokens[index]['token']!r}, …), so its "
            "probability cannot be read from one token; use score_from: reply"
        )
    return index


def weighted_grade(logprobs: Any, grade: float, scale: Scale, model: str = "the judge") -> Weighted:
    """G-Eval's weighted grade on an integer ``scale`` from the reply's ``logprobs``, given the ``grade`` it wrote."""
    tokens = _tokens(logprobs)
    if not tokens:
        raise JudgeReplyError(
            f"score_from is 'logprobs', but {model} returned no log-probabilities (the server ignores 'logprobs' "
            "and 'top_logprobs'); use a server that returns them, or score_from: reply"
        )
    index = _grade_token(tokens, grade)
    floor = math.log(MIN_PROBABILITY)
    mass: dict[int, float] = {}
    for alternative in tokens[index].get("top_logprobs") or ():
        token, logprob = str(alternative.get("token", "")).strip(), alternative.get("logprob")
        if not isinstance(logprob, int | float) or logprob < floor or not token.isdecimal():
            continue
        value = int(token)
        if scale.low <= value <= scale.high:
            mass[value] = mass.get(value, 0.0) + math.exp(logprob)
    total = sum(mass.values())
    if total <= 0.0:
        raise JudgeReplyError(
            f"{model} sent no top_logprobs alternatives that are grades of the scale ({scale.offered()}) at the "
            "grade's token"
        )
    weighted = sum(value * p for value, p in mass.items()) / total
    probabilities = {value: p / total for value, p in mass.items()}
    return Weighted(weighted, (weighted - scale.low) / (scale.high - scale.low), probabilities, index)
