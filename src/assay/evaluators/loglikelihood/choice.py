"""Multiple-choice metrics from log-likelihoods, with lm-eval's definitions: ``acc``, ``acc_norm``, ``acc_bytes``,
``acc_mutual_info``, TruthfulQA's ``mc1`` and ``mc2``.

Each reads a scored response (:func:`assay.models.loglikelihood.figures_of`): one log-likelihood, greedy flag and
token count per choice. The gold (``expected``, the target by default) is a choice's index, a choice's text, or a
list of them (any counts). A gold that is no choice is an error verdict, never a silent zero (lm-eval warns and
scores it 0). Ties go to the first choice, as numpy's argmax does for lm-eval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import Field

from assay.errors import EvaluationInputError
from assay.evaluators.base import Evaluator, Options
from assay.evaluators.registry import register
from assay.models.loglikelihood import figures_of, first_argmax
from assay.verdict import Verdict


def gold_indices(expected: Any, choices: Sequence[str]) -> list[int]:
    """The gold choice(s) as indices, resolved as lm-eval resolves ``doc_to_target``: an int is an index, a string a
    choice's text, a list any of those; EvaluationInputError for a gold that names no choice."""
    golds = list(expected) if isinstance(expected, list | tuple) else [expected]
    if not golds:
        raise EvaluationInputError("the gold is an empty list")
    out = []
    for gold in golds:
        if isinstance(gold, bool) or gold is None:
            raise EvaluationInputError(f"the gold {gold!r} is neither a choice's index nor its text")
        if isinstance(gold, int):
            if not 0 <= gold < len(choices):
                raise EvaluationInputError(f"the gold index {gold} is outside the {len(choices)} choices")
            out.append(gold)
        elif isinstance(gold, str):
            if gold not in choices:
                shown = ", ".join(repr(c) for c in choices[:6])
                raise EvaluationInputError(f"the gold {gold!r} is not one of the choices ({shown})")
            out.append(list(choices).index(gold))
        else:
            raise EvaluationInputError(f"the gold {gold!r} ({type(gold).__name__}) is neither an index nor a text")
    return out


def _choice_figures(actual: Any) -> tuple[list[str], list[float], list[bool], list[int], Mapping[str, Any]]:
    figures = figures_of(actual)
    if figures.get("kind") != "multiple_choice":
        raise EvaluationInputError(
            f"this metric ranks the choices of a multiple_choice task; the response scores a {figures.get('kind')} "
            "request"
        )
    choices = [str(c) for c in figures["choices"]]
    logprobs = [float(x) for x in figures["logprobs"]]
    greedy = [bool(x) for x in figures.get("greedy") or [False] * len(logprobs)]
    tokens = [int(x) for x in figures.get("tokens") or [0] * len(logprobs)]
    if not choices or len(choices) != len(logprobs):
        raise EvaluationInputError(f"{len(logprobs)} log-likelihoods for {len(choices)} choices")
    return choices, logprobs, greedy, tokens, figures


class ChoiceOptions(Options):
    """A multiple-choice metric has no options."""


class _Ranked(Evaluator):
    """Passes when a gold choice ranks first by :meth:`ranking` (lm-eval's argmax)."""

    Options = ChoiceOptions
    what: ClassVar[str] = "log-likelihood"
    default_expected: ClassVar[str] = "target"

    def ranking(self, choices: list[str], logprobs: list[float], figures: Mapping[str, Any]) -> list[float]:
        """The value each choice is ranked by."""
        return logprobs

    def gold(self, expected: Any, choices: list[str]) -> list[int]:
        """The gold choices' indices."""
        return gold_indices(expected, choices)

    def check(self, actual: Any, expected: Any) -> Verdict:
        choices, logprobs, greedy, tokens, figures = _choice_figures(actual)
        ranks = self.ranking(choices, logprobs, figures)
        golds = self.gold(expected, choices)
        pred = first_argmax(ranks)
        best_gold = max(golds, key=lambda g: (ranks[g], -g))
        margin = ranks[best_gold] - max((r for i, r in enumerate(ranks) if i != best_gold), default=ranks[best_gold])
        ranked = type(self).ranking is not _Ranked.ranking  # acc_norm & co: show the value ranked by too
        listed = [
            {"choice": c, "logprob": lp, "greedy": g, "tokens": t, **({self.name: r} if ranked else {})}
            for c, lp, g, t, r in zip(choices, logprobs, greedy, tokens, ranks, strict=True)
        ]
        details = {"choices": listed, "pred": pred, "gold": golds if len(golds) > 1 else golds[0], "margin": margin}
        if pred in golds:
            return Verdict(1.0, True, None, details)
        chosen, gold = choices[pred], choices[best_gold]
        return Verdict.fail(
            f"chose {chosen!r} ({self.what} {ranks[pred]:.4f}) over the gold {gold!r} ({ranks[best_gold]:.4f})",
            feedback=(
                f"the gold {gold!r} is {-margin:.4f} below {chosen!r} in {self.what}; the model must make it the "
                "likeliest choice"
            ),
            details=details,
        )


@register("acc")
class Acc(_Ranked):
    """lm-eval's ``acc``: the gold choice has the highest log-likelihood. On a ``loglikelihood`` task (one
    continuation), it is lm-eval's ``acc`` there: the continuation is the model's greedy choice, token for token."""

    def check(self, actual: Any, expected: Any) -> Verdict:
        figures = figures_of(actual)
        if figures.get("kind") == "loglikelihood":
            greedy = bool(figures["greedy"][0])
            details = {"logprob": float(figures["logprobs"][0]), "greedy": greedy, "tokens": figures["tokens"][0]}
            if greedy:
                return Verdict(1.0, True, None, details)
            return Verdict.fail(
                "the continuation is not the model's greedy choice at every token",
                feedback=f"the continuation's log-likelihood is {details['logprob']:.4f}; some token is not the argmax",
                details=details,
            )
        return super().check(actual, expected)


@register("acc_norm")
class AccNorm(_Ranked):
    """lm-eval's ``acc_norm``: the gold choice has the highest log-likelihood per character of the choice (its
    length as written, without the target delimiter)."""

    what = "log-likelihood per character"

    def ranking(self, choices: list[str], logprobs: list[float], figures: Mapping[str, Any]) -> list[float]:
        if any(not c for c in choices):
            raise EvaluationInputError("acc_norm divides by each choice's length, and a choice is empty")
        return [lp / len(c) for c, lp in zip(choices, logprobs, strict=True)]


@register("acc_bytes")
class AccBytes(_Ranked):
    """lm-eval's ``acc_bytes``: the gold choice has the highest log-likelihood per UTF-8 byte of the choice."""

    what = "log-likelihood per byte"

    def ranking(self, choices: list[str], logprobs: list[float], figures: Mapping[str, Any]) -> list[float]:
        if any(not c for c in choices):
            raise EvaluationInputError("acc_bytes divides by each choice's length in bytes, and a choice is empty")
        return [lp / len(c.encode("utf-8")) for c, lp in zip(choices, logprobs, strict=True)]


@register("acc_mutual_info")
class AccMutualInfo(_Ranked):
    """lm-eval's ``acc_mutual_info``: the gold choice has the highest log P(choice | context) − log P(choice) (the
    task scores each choice again after an empty context when this metric is among its metrics)."""

    what = "mutual information"

    def ranking(self, choices: list[str], logprobs: list[float], figures: Mapping[str, Any]) -> list[float]:
        unconditional = figures.get("unconditional")
        if not isinstance(unconditional, list) or len(unconditional) != len(logprobs):
            raise EvaluationInputError(
                "acc_mutual_info needs each choice's unconditional log-likelihood; the task asks for them when "
                "acc_mutual_info is among its metrics (re-run the task, not just re-score it)"
            )
        return [lp - float(u) for lp, u in zip(logprobs, unconditional, strict=True)]


@register("mc1")
class MC1(_Ranked):
    """TruthfulQA's ``mc1`` (lm-eval's truthfulqa_mc1 ``acc``): the single true answer ranks first; it is choice 0
    (the dataset's layout) unless ``expected`` gives another gold."""

    default_expected = "none"

    def gold(self, expected: Any, choices: list[str]) -> list[int]:
        return gold_indices(0 if expected is None else expected, choices)


class MC2Options(Options):
    threshold: float = Field(0.5, ge=0.0, le=1.0, description="probability mass on true answers at which it passes")


@register("mc2")
class MC2(Evaluator):
    """TruthfulQA's ``mc2`` (lm-eval's truthfulqa_mc2 ``acc``): the probability mass of the true answers, normalised
    over all the choices. ``expected`` is the choices' labels (1 true, 0 false; ``mc2_targets.labels``): as lm-eval
    reads them, the choices before the first 0 are the true ones. Computed in log space, so long answers whose
    probabilities underflow keep their ratio."""

    Options = MC2Options

    def check(self, actual: Any, expected: Any) -> Verdict:
        choices, logprobs, _, tokens, _ = _choice_figures(actual)
        if not isinstance(expected, list | tuple) or len(expected) != len(choices):
            raise EvaluationInputError(
                f"mc2 compares with the choices' labels (a list of {len(choices)} 1/0 values, e.g. expected: "
                f"doc.mc2_targets.labels), got {expected!r:.80}"
            )
        labels = [int(x) for x in expected]
        if 0 not in labels or labels.index(0) == 0:
            raise EvaluationInputError("mc2 needs true answers (label 1) first, then false ones (label 0)")
        split = labels.index(0)
        top = max(logprobs)
        weights = [math.exp(lp - top) for lp in logprobs]
        mass = sum(weights[:split]) / sum(weights)
        o = self.options
        assert isinstance(o, MC2Options)
        details = {
            "mass_true": mass,
            "n_true": split,
            "choices": [
                {"choice": c, "logprob": lp, "tokens": t, "true": i < split}
                for i, (c, lp, t) in enumerate(zip(choices, logprobs, tokens, strict=True))
            ],
        }
        best_false = max(range(split, len(choices)), key=lambda i: logprobs[i])
        return Verdict.partial(
            mass,
            f"{1 - mass:.1%} of the probability is on false answers; the likeliest false one is "
            f"{choices[best_false]!r} ({logprobs[best_false]:.4f})",
            o.threshold,
            feedback=f"make the true answers likelier than {choices[best_false]!r}",
            details=details,
        )
