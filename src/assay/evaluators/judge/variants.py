"""How several judgements become one: repeated samples averaged, judges combined by mean or majority, pairwise orders.

Pure functions over scores in [0, 1]; the judge evaluator calls them after parsing every reply.

* **repeated sampling** (``samples: n``): one judge's score is the mean of its n scores; the spread (population
  standard deviation, min, max) goes into the details.
* **mean** of several judges: the mean of their scores; passes when it reaches ``pass_threshold``.
* **majority** of several judges: each judge passes when its score reaches ``pass_threshold``; the verdict passes
  when more than half of the judges that answered pass (a tie fails), and its score is the mean score of the
  winning side, so that the score and the decision always agree.
* **pairwise**: the output under test is shown first in one call and second in the other; each order gives a win
  (1), tie (0.5) or loss (0) for the output; the two are summed, and more than 1 point is a win, exactly 1 a tie,
  less a loss. A win in one order and a loss in the other is no tie: the judge followed the position, not the
  responses, and the judge evaluator counts that judgement apart as *position-inconsistent* (never a pass).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Outcome = Literal["win", "tie", "loss"]
OUTCOME_SCORE: dict[str, float] = {"win": 1.0, "tie": 0.5, "loss": 0.0}


@dataclass(frozen=True)
class Combined:
    """The combined score, whether it passes, and the figures behind it."""

    score: float
    passed: bool
    details: dict[str, object]


def spread(scores: Sequence[float]) -> dict[str, float | int]:
    """Mean, population standard deviation, min, max and count of repeated scores."""
    if not scores:
        raise ValueError("spread of no scores")
    return {
        "mean": statistics.fmean(scores),
        "stdev": statistics.pstdev(scores),
        "min": min(scores),
        "max": max(scores),
        "n": len(scores),
    }


def combine(scores: Sequence[float], threshold: float, method: Literal["mean", "majority"]) -> Combined:
    """One score and decision from several judges' scores (errors already left out)."""
    if not scores:
        raise ValueError("combine needs at least one score")
    if method == "mean" or len(scores) == 1:
        score = statistics.fmean(scores)
        return Combined(score, score >= threshold, {"method": "mean" if len(scores) > 1 else "single"})
    passing = [s for s in scores if s >= threshold]
    failing = [s for s in scores if s < threshold]
    passed = len(passing) * 2 > len(scores)
    side = passing if passed else failing
    votes = {"pass": len(passing), "fail": len(failing)}
    return Combined(statistics.fmean(side), passed, {"method": "majority", "votes": votes})


def order_outcome(winner: Literal["A", "B", "tie"], output_position: Literal["A", "B"]) -> Outcome:
    """The output's outcome in one order, given the winner and where the output was shown."""
    if winner == "tie":
        return "tie"
    return "win" if winner == output_position else "loss"


def combine_orders(first: Outcome, second: Outcome) -> Outcome:
    """The outcome over both orders: the points of the two orders summed and compared with a tie's."""
    points = OUTCOME_SCORE[first] + OUTCOME_SCORE[second]
    if points > 1.0:
        return "win"
    if points < 1.0:
        return "loss"
    return "tie"


def outcome_of(score: float) -> Outcome:
    """The pairwise outcome that a combined score stands for (above 0.5 a win, below a loss)."""
    if score > 0.5:
        return "win"
    if score < 0.5:
        return "loss"
    return "tie"
