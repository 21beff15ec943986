"""Generation metrics through sacrebleu (``bleu``, ``chrf``, ``ter``) and rouge-score (``rouge``, ``rouge1`` …).

BLEU, chrF and TER are corpus metrics: each verdict carries the sentence score *and* the sentence's sufficient
statistics (``details["stats"]``), from which ``assay.results.corpus`` recomputes sacrebleu's corpus figure and
bootstraps it by resampling samples. Needs ``assay[metrics]``; the libraries are imported when an evaluator is built.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt
from pydantic import Field

from assay.errors import ConfigError, EvaluationInputError
from assay.evaluators.base import Evaluator, Options, as_text, expected_texts
from assay.evaluators.registry import register
from assay.verdict import Verdict

INSTALL_HINT = "pip install 'assay[metrics]'"


def _import(module: str, evaluator: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigError(f"{evaluator} needs {module.split('.')[0]}: {INSTALL_HINT}") from None


def _references(expected: Any, evaluator: str) -> list[str]:
    refs = [r for r in expected_texts(expected) if r]
    if expected is None or not refs:
        raise EvaluationInputError(f"{evaluator} needs a reference text (expected is empty)")
    return refs


def _missing_words(output: str, reference: str, limit: int = 8) -> list[str]:
    """Reference words absent from the output (case-insensitive), in reference order, for feedback."""
    have = {w.lower() for w in re.findall(r"\w+", output)}
    out: list[str] = []
    for w in re.findall(r"\w+", reference):
        if w.lower() not in have and w not in out:
            out.append(w)
    return out[:limit]


def _unit(library_score: float) -> float:
    """A 0–100 library score on the 0–1 scale of a verdict (float noise such as 100.0000000004 clipped)."""
    return min(1.0, max(0.0, float(library_score) / 100.0))


def _feedback(output: str, reference: str, what: str) -> str:
    missing = _missing_words(output, reference)
    words = f" Reference words missing from the output: {', '.join(repr(w) for w in missing)}." if missing else ""
    return f"Stay closer to the reference {what}: {reference[:200]!r}.{words}"


class CorpusEvaluator(Evaluator):
    """An evaluator whose verdicts carry additive sufficient statistics and whose corpus figure is a function of
    their sum (not the mean of sentence scores). ``assay.results.corpus`` calls :meth:`corpus_value`."""

    default_aggregation: ClassVar[str] = "corpus"

    def corpus_value(self, stats: npt.NDArray[np.float64]) -> float:
        """The corpus figure (0–1 scale) from statistics summed over samples."""
        raise NotImplementedError

    def corpus_details(self, stats: npt.NDArray[np.float64], nrefs: int) -> dict[str, Any]:
        """What to record beside the corpus figure: the library's own score, its signature."""
        return {}


class _SacreOptions(Options):
    threshold: float = Field(0.5, ge=0.0, le=1.0, description="sentence score (0–1) at or above which a sample passes")


class BleuOptions(_SacreOptions):
    tokenize: str | None = Field(
        None,
        description="sacrebleu's tokenizer ('13a', 'intl', 'char', 'zh', 'ja-mecab', 'ko-mecab', 'flores200', "
        "'none' …); null picks one by trg_lang (zh, ja, ko) and else '13a', as sacrebleu does",
    )
    lowercase: bool = Field(False, description="lower-case output and references first (case-insensitive BLEU)")
    smooth_method: Literal["none", "floor", "add-k", "exp"] = Field(
        "exp",
        description="how a zero n-gram precision is smoothed (sacrebleu's methods; 'exp' is sentence_bleu's default, "
        "'none' is unsmoothed, where an n-gram order with no match scores the sentence 0)",
    )
    smooth_value: float | None = Field(
        None, description="the constant of 'floor' (default 0.1) or 'add-k' (default 1); unused by 'exp' and 'none'"
    )
    max_ngram_order: int = Field(
        4, ge=1, le=9, description="the longest n-gram counted (BLEU-4 by default; 2 suits very short outputs)"
    )
    trg_lang: str = Field(
        "",
        description="the references' language code (e.g. 'zh', 'ja', 'ko'): picks the tokenizer when tokenize is null",
    )


class _Sacre(CorpusEvaluator):
    """Shared sacrebleu plumbing: a sentence metric for verdicts and a corpus metric for the aggregate."""

    label: ClassVar[str] = ""

    def _build(self, sentence: bool) -> Any:
        raise NotImplementedError

    def setup(self) -> None:
        _import("sacrebleu", self.name)
        try:
            self._sentence = self._build(True)
            self._corpus = self._build(False)
        except Exception as err:  # an unknown tokenizer and the like, named by sacrebleu
            raise ConfigError(f"{self.name}: {err}") from None

    def _stats(self, output: str, refs: list[str]) -> list[float]:
        stats = self._sentence._extract_corpus_statistics([output], [[r] for r in refs])[0]
        return [float(s) for s in stats]

    def _score(self, metric: Any, stats: Sequence[float] | npt.NDArray[np.float64]) -> Any:
        return metric._compute_score_from_stats(list(stats))

    def corpus_value(self, stats: npt.NDArray[np.float64]) -> float:
        return float(self._score(self._corpus, stats).score) / 100.0

    def corpus_details(self, stats: npt.NDArray[np.float64], nrefs: int) -> dict[str, Any]:
        score = self._score(self._corpus, stats)
        self._corpus.num_refs = nrefs
        return {
            "library_score": float(score.score),
            "library_scale": "0-100",
            "library": str(score),
            "signature": self._corpus.get_signature().format(),
        }

    def _sentence_signature(self, nrefs: int) -> str:
        self._sentence.num_refs = nrefs
        return str(self._sentence.get_signature().format())


@register("bleu")
class Bleu(_Sacre):
    """sacrebleu BLEU: sentence BLEU (effective order, as ``sentence_bleu``) per sample; corpus BLEU over the run."""

    Options = BleuOptions
    label = "BLEU"

    def _build(self, sentence: bool) -> Any:
        o = self.options
        assert isinstance(o, BleuOptions)
        sacrebleu = _import("sacrebleu", self.name)
        return sacrebleu.BLEU(
            lowercase=o.lowercase,
            tokenize=o.tokenize,
            smooth_method=o.smooth_method,
            smooth_value=o.smooth_value,
            max_ngram_order=o.max_ngram_order,
            effective_order=sentence,
            trg_lang=o.trg_lang,
        )

    def check(self, actual: Any, expected: Any) -> Verdict:
        output, refs = as_text(actual, self.name), _references(expected, self.name)
        stats = self._stats(output, refs)
        s = self._score(self._sentence, stats)
        score = _unit(s.score)
        details = {
            "stats": stats,
            "nrefs": len(refs),
            "bleu": float(s.score),
            "precisions": [round(float(p), 4) for p in s.precisions],
            "brevity_penalty": float(s.bp),
            "sys_len": int(s.sys_len),
            "ref_len": int(s.ref_len),
            "tokenize": self._sentence.tokenizer.signature(),
        }
        short = f"; output is {s.sys_len} tokens against {s.ref_len} in the reference" if s.bp < 1 else ""
        reason = (
            f"sentence BLEU {score:.3f} < threshold {self.options.threshold}"  # type: ignore[attr-defined]
            f" (n-gram precisions {s.prec_str}{short})"
        )
        return Verdict.partial(
            score,
            reason,
            self.options.threshold,  # type: ignore[attr-defined]
            feedback=_feedback(output, refs[0], "wording"),
            details=details,
        )


class ChrfOptions(_SacreOptions):
    char_order: int = Field(6, ge=1, description="the longest character n-gram counted (chrF's standard is 6)")
    word_order: int = Field(
        0, ge=0, description="the longest word n-gram counted as well: 0 is plain chrF, 2 gives chrF++"
    )
    beta: int = Field(2, ge=1, description="how many times more recall weighs than precision in the F-score (chrF2)")
    lowercase: bool = Field(False, description="lower-case output and references first (case-insensitive chrF)")
    whitespace: bool = Field(
        False, description="keep whitespace inside character n-grams (by default chrF removes it before counting)"
    )
    eps_smoothing: bool = Field(
        False,
        description="smooth a zero n-gram order with a small epsilon, as chrF++.py, NLTK and Moses do, instead of "
        "sacrebleu's effective-order averaging; changes scores of short outputs only",
    )


@register("chrf")
class Chrf(_Sacre):
    """sacrebleu chrF (chrF++ with ``word_order: 2``): sentence chrF per sample, corpus chrF over the run."""

    Options = ChrfOptions
    label = "chrF"

    def _build(self, sentence: bool) -> Any:
        o = self.options
        assert isinstance(o, ChrfOptions)
        sacrebleu = _import("sacrebleu", self.name)
        return sacrebleu.CHRF(
            char_order=o.char_order,
            word_order=o.word_order,
            beta=o.beta,
            lowercase=o.lowercase,
            whitespace=o.whitespace,
            eps_smoothing=o.eps_smoothing,
        )

    def check(self, actual: Any, expected: Any) -> Verdict:
        output, refs = as_text(actual, self.name), _references(expected, self.name)
        stats = self._stats(output, refs)
        s = self._score(self._sentence, stats)
        score = _unit(s.score)
        details = {"stats": stats, "nrefs": len(refs), "chrf": float(s.score)}
        reason = f"sentence chrF {score:.3f} < threshold {self.options.threshold}"  # type: ignore[attr-defined]
        return Verdict.partial(
            score,
            reason,
            self.options.threshold,  # type: ignore[attr-defined]
            feedback=_feedback(output, refs[0], "spelling and wording"),
            details=details,
        )


class TerOptions(Options):
    max_ter: float = Field(
        0.5, ge=0.0, description="sentence TER (edits per reference word) at or below which a sample passes"
    )
    normalized: bool = Field(
        False,
        description="Tercom's normalisation before counting edits: punctuation split off words, XML entities decoded",
    )
    no_punct: bool = Field(False, description="remove punctuation first, so it never counts as an edit")
    asian_support: bool = Field(
        False,
        description="with normalized, split CJK text into characters; with no_punct, also remove CJK and "
        "full-width punctuation (no effect alone)",
    )
    case_sensitive: bool = Field(
        False, description="count a change of case as an edit (by default TER lower-cases both texts first)"
    )


@register("ter")
class Ter(_Sacre):
    """sacrebleu TER, lower is better: edits per reference word. A verdict's score is TER capped at 1 (the
    uncapped value is in ``details["ter"]``); the corpus figure is sacrebleu's corpus TER / 100, uncapped."""

    Options = TerOptions
    label = "TER"
    higher_is_better: ClassVar[bool] = False

    def _build(self, sentence: bool) -> Any:
        o = self.options
        assert isinstance(o, TerOptions)
        sacrebleu = _import("sacrebleu", self.name)
        return sacrebleu.TER(
            normalized=o.normalized,
            no_punct=o.no_punct,
            asian_support=o.asian_support,
            case_sensitive=o.case_sensitive,
        )

    def check(self, actual: Any, expected: Any) -> Verdict:
        output, refs = as_text(actual, self.name), _references(expected, self.name)
        stats = self._stats(output, refs)
        ter = float(self._score(self._sentence, stats).score) / 100.0
        o = self.options
        assert isinstance(o, TerOptions)
        details = {"stats": stats, "nrefs": len(refs), "ter": ter, "edits": stats[0], "ref_words": stats[1]}
        if ter <= o.max_ter:
            return Verdict(min(ter, 1.0), True, None, details)
        return Verdict.fail(
            f"sentence TER {ter:.3f} > max_ter {o.max_ter} ({stats[0]:g} edits for {stats[1]:g} reference words)",
            score=min(ter, 1.0),
            feedback=_feedback(output, refs[0], "wording and word order"),
            details=details,
        )


ROUGE_TYPE = re.compile(r"rouge(?:[1-9]|L|Lsum)")


_ROUGE_TYPE = (
    "which ROUGE: rouge1..rouge9 (overlap of n-grams of that length), rougeL (longest common subsequence) or "
    "rougeLsum (rougeL per sentence, sentences split at newlines)"
)


class RougeOptions(Options):
    rouge_type: str = Field("rougeL", description=_ROUGE_TYPE)
    use_stemmer: bool = Field(
        False, description="reduce words to their Porter stem first, so 'running' matches 'runs' (English only)"
    )
    measure: Literal["fmeasure", "precision", "recall"] = Field(
        "fmeasure",
        description="the figure a sample scores: F-measure, precision (share of output n-grams in the reference) "
        "or recall (share of reference n-grams in the output)",
    )
    threshold: float = Field(0.5, ge=0.0, le=1.0, description="the measure (0–1) at or above which a sample passes")


@register("rouge")
class Rouge(Evaluator):
    """rouge-score's ROUGE (``rouge1``/``rouge2``/``rougeL``/``rougeLsum``, optional Porter stemming): the best
    reference's F-measure (or precision/recall) per sample; aggregated by the mean, as rouge-score's own
    aggregator and HF ``evaluate`` do. ``rougeLsum`` splits summaries into sentences at newlines."""

    Options = RougeOptions

    def setup(self) -> None:
        o = self.options
        assert isinstance(o, RougeOptions)
        if not ROUGE_TYPE.fullmatch(o.rouge_type):
            raise ConfigError(
                f"{self.name}: option 'rouge_type': rouge1..rouge9, rougeL or rougeLsum, got {o.rouge_type!r}"
            )
        rouge_scorer = _import("rouge_score.rouge_scorer", self.name)
        self._scorer = rouge_scorer.RougeScorer([o.rouge_type], use_stemmer=o.use_stemmer)

    def check(self, actual: Any, expected: Any) -> Verdict:
        o = self.options
        assert isinstance(o, RougeOptions)
        output, refs = as_text(actual, self.name), _references(expected, self.name)
        if len(refs) == 1:
            s = self._scorer.score(refs[0], output)[o.rouge_type]
        else:
            s = self._scorer.score_multi(refs, output)[o.rouge_type]
        score = float(getattr(s, o.measure))
        details = {
            "rouge_type": o.rouge_type,
            "precision": float(s.precision),
            "recall": float(s.recall),
            "fmeasure": float(s.fmeasure),
            "tokenizer": "rouge_score default (lowercased, non-alphanumerics removed)"
            + (", Porter stemmer" if o.use_stemmer else ""),
        }
        reason = (
            f"{o.rouge_type} {o.measure} {score:.3f} < threshold {o.threshold}"
            f" (precision {s.precision:.3f}, recall {s.recall:.3f})"
        )
        return Verdict.partial(
            score, reason, o.threshold, feedback=_feedback(output, refs[0], "content"), details=details
        )


class Rouge1Options(RougeOptions):
    rouge_type: str = Field("rouge1", description=_ROUGE_TYPE)


class Rouge2Options(RougeOptions):
    rouge_type: str = Field("rouge2", description=_ROUGE_TYPE)


class RougeLsumOptions(RougeOptions):
    rouge_type: str = Field("rougeLsum", description=_ROUGE_TYPE)


@register("rouge1")
class Rouge1(Rouge):
    """``rouge`` with ``rouge_type: rouge1`` (shorthand for tasks that list several ROUGE types)."""

    Options = Rouge1Options


@register("rouge2")
class Rouge2(Rouge):
    """``rouge`` with ``rouge_type: rouge2``."""

    Options = Rouge2Options


@register("rougeL")
class RougeL(Rouge):
    """``rouge`` with ``rouge_type: rougeL`` (its default)."""


@register("rougeLsum")
class RougeLsum(Rouge):
    """``rouge`` with ``rouge_type: rougeLsum``."""

    Options = RougeLsumOptions
