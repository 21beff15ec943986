"""Perplexities from log-likelihoods, aggregated over the corpus as lm-eval aggregates them: ``perplexity``,
``word_perplexity``, ``byte_perplexity``, ``bits_per_byte``.

Each verdict carries its sample's sufficient statistics ``[log-likelihood, units]`` (``details["stats"]``); the
figure is a function of their sums over the run (:mod:`assay.results.corpus`), never a mean of per-sample
perplexities, and its interval resamples samples and recomputes it from the resampled sums:

* ``word_perplexity`` = exp(−Σ ll / Σ words), words counted as lm-eval counts them (``re.split(r"\\s+", text)``);
* ``byte_perplexity`` = exp(−Σ ll / Σ UTF-8 bytes); ``bits_per_byte`` = −Σ ll / Σ bytes / ln 2;
* ``perplexity`` on a ``loglikelihood`` task is lm-eval's: exp(−mean ll) over documents (LAMBADA's); on a
  ``loglikelihood_rolling`` task, where lm-eval has none, it is the token perplexity exp(−Σ ll / Σ tokens).

``expected`` is the scored text (the target, which a rolling task scores). A verdict's score is 1 − 1/perplexity
of its sample, in [0, 1) and, like the figure, lower is better; every verdict passes (a measurement, not a judgement).
"""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from assay.errors import EvaluationInputError
from assay.evaluators.base import Options
from assay.evaluators.generation import CorpusEvaluator
from assay.evaluators.registry import register
from assay.models.loglikelihood import figures_of
from assay.verdict import Verdict

_SPACE = re.compile(r"\s+")


def count_words(text: str) -> int:
    """lm-eval's ``count_words``: the pieces between runs of whitespace."""
    return len(_SPACE.split(text))


def count_bytes(text: str) -> int:
    """lm-eval's ``count_bytes``: UTF-8 bytes."""
    return len(text.encode("utf-8"))


class PerplexityOptions(Options):
    """A perplexity has no options."""


class _Corpus(CorpusEvaluator):
    """A log-likelihood figure over the corpus from summed ``[log-likelihood, units]``."""

    Options = PerplexityOptions
    higher_is_better: ClassVar[bool] = False
    unit: ClassVar[str] = "token"
    kinds: ClassVar[tuple[str, ...]] = ("loglikelihood_rolling", "loglikelihood")

    def units(self, figures: Any, expected: Any) -> float:
        """How many units the sample's log-likelihood is spread over."""
        raise NotImplementedError

    def check(self, actual: Any, expected: Any) -> Verdict:
        figures = figures_of(actual)
        kind = figures.get("kind")
        if kind not in self.kinds:
            raise EvaluationInputError(f"{self.name} is for {' or '.join(self.kinds)} tasks; this one is {kind}")
        logprob = float(figures["logprobs"][0])
        units = float(self.units(figures, expected))
        if units <= 0:
            raise EvaluationInputError(f"{self.name}: the text has no {self.unit}s")
        per_unit = math.exp(logprob / units)
        details = {
            "stats": [logprob, units],
            "logprob": logprob,
            f"{self.unit}s": units,
            "tokens": figures["tokens"][0],
        }
        details[self.name] = self.corpus_value(np.array([logprob, units]))
        return Verdict(min(1.0, max(0.0, 1.0 - per_unit)), True, None, details)

    def corpus_value(self, stats: npt.NDArray[np.float64]) -> float:
        return math.exp(-float(stats[0]) / float(stats[1])) if stats[1] > 0 else math.nan

    def corpus_details(self, stats: npt.NDArray[np.float64], nrefs: int) -> dict[str, Any]:
        return {"unit": self.unit, "n_units": float(stats[1]), "logprob": float(stats[0])}


def _text(expected: Any, name: str) -> str:
    if not isinstance(expected, str):
        raise EvaluationInputError(
            f"{name} counts the scored text's words or bytes, so it compares with that text (the task's target); "
            f"got {type(expected).__name__}"
        )
    return expected


@register("perplexity")
class Perplexity(_Corpus):
    """Perplexity: lm-eval's exp(−mean log-likelihood) per document on a ``loglikelihood`` task; the token
    perplexity exp(−Σ ll / Σ tokens) on a ``loglikelihood_rolling`` task."""

    def units(self, figures: Any, expected: Any) -> float:
        if figures.get("kind") == "loglikelihood":
            return 1.0  # lm-eval: a mean over documents
        return float(figures["tokens"][0])


@register("word_perplexity")
class WordPerplexity(_Corpus):
    """lm-eval's ``word_perplexity``: exp(−Σ ll / Σ words) over the corpus."""

    unit = "word"

    def units(self, figures: Any, expected: Any) -> float:
        return count_words(_text(expected, self.name))


@register("byte_perplexity")
class BytePerplexity(_Corpus):
    """lm-eval's ``byte_perplexity``: exp(−Σ ll / Σ bytes) over the corpus."""

    unit = "byte"

    def units(self, figures: Any, expected: Any) -> float:
        return count_bytes(_text(expected, self.name))


@register("bits_per_byte")
class BitsPerByte(BytePerplexity):
    """lm-eval's ``bits_per_byte``: −Σ ll / Σ bytes / ln 2 over the corpus."""

    def corpus_value(self, stats: npt.NDArray[np.float64]) -> float:
        return -float(stats[0]) / float(stats[1]) / math.log(2) if stats[1] > 0 else math.nan
