"""token_f1: SQuAD token F1 of the output against the best acceptable answer, vectorised over a batch."""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import compress
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import Field

from assay.evaluators.base import BatchResult, Evaluator, Options, as_text
from assay.evaluators.normalize import (
    STREAM_SEPARATOR,
    hidden_articles,
    is_article,
    squad_normalize,
    squad_prepare_batch,
    squad_token_stream,
    squad_tokens_prepared,
)
from assay.evaluators.registry import register
from assay.evaluators.text.common import Columns, chunked_batch, clip, cut, listing, objects, references
from assay.reductions import BoolArray, FloatArray
from assay.verdict import Verdict


class TokenF1Options(Options):
    """Options of token_f1: the F1 at or above which the output passes (default 0.5, i.e. at least half right)."""

    threshold: float = Field(0.5, ge=0.0, le=1.0)


def token_overlap(a: list[str], b: list[str]) -> int:
    """Size of the multiset intersection of two token lists (set sizes when neither repeats a token)."""
    sa = set(a)
    sb = set(b)
    common = sa & sb
    if not common:
        return 0
    if len(sa) == len(a) and len(sb) == len(b):
        return len(common)
    ca, cb = Counter(a), Counter(b)
    return sum(min(ca[t], cb[t]) for t in common)


def excess(a: list[str], b: list[str]) -> list[str]:
    """The tokens of ``a`` beyond those of ``b``, each token's surplus together in order of first appearance:
    ``list((Counter(a) - Counter(b)).elements())``, without Counters where ``a`` repeats no token."""
    if len(set(a)) == len(a):  # each token once: kept unless ``b`` has it
        have = set(b)
        return [token for token in a if token not in have]
    counts, other = Counter(a), Counter(b)
    return [token for token, count in counts.items() for _ in range(count - other.get(token, 0))]


def f1_figures(same: int, n_pred: int, n_gold: int) -> tuple[float, float, float]:
    """(f1, precision, recall) as the official SQuAD script computes them; two empty answers agree (SQuAD v2)."""
    if n_pred == 0 or n_gold == 0:
        agree = float(n_pred == n_gold)
        return agree, agree, agree
    if same == 0:
        return 0.0, 0.0, 0.0
    precision = same / n_pred
    recall = same / n_gold
    return 2 * precision * recall / (precision + recall), precision, recall


@register("token_f1")
class TokenF1(Evaluator):
    """SQuAD token F1: overlap of the bag of words after SQuAD normalisation, best over acceptable answers.

    Identical to the official SQuAD v1.1 script except that two empty answers score 1, as in SQuAD v2.
    """

    Options = TokenF1Options
    options: TokenF1Options

    def check(self, actual: Any, expected: Any) -> Verdict:
        text = as_text(actual, self.name)
        answers = references(expected, self.name)
        pred = squad_normalize(text).split()
        golds = [squad_normalize(a).split() for a in answers]
        figures = [f1_figures(token_overlap(pred, g), len(pred), len(g)) for g in golds]
        best = max(range(len(figures)), key=lambda i: figures[i][0])
        f1, precision, recall = figures[best]
        gold = golds[best]
        threshold = self.options.threshold
        details: dict[str, Any] = {
            "f1": f1,
            "precision": precision,
            "recall": recall,
            "threshold": threshold,
            "matched": cut(answers[best]),
            "output_tokens": len(pred),
            "expected_tokens": len(gold),
        }
        if len(answers) > 1:
            details["f1s"] = [f[0] for f in figures]
        if f1 >= threshold:
            return Verdict.partial(f1, None, threshold, details=details)
        reason = (
            f"token F1 {f1:.3f} (precision {precision:.3f}, recall {recall:.3f}) of output {clip(text, 80)} "
            f"against {clip(answers[best], 80)} is below the threshold {threshold:g}"
        )
        return Verdict.partial(
            f1, reason, threshold, feedback=self._feedback(pred, gold, answers[best]), details=details
        )

    @staticmethod
    def _feedback(pred: list[str], gold: list[str], answer: str) -> str:
        if not pred:
            return f"The output has no words once punctuation and articles are dropped; answer with {clip(answer)}."
        missing, extra = excess(gold, pred), excess(pred, gold)
        parts = []
        if missing:
            parts.append(f"include the missing word(s) {_quoted(missing)}")
        if extra:
            parts.append(f"drop the extra word(s) {_quoted(extra)}")
        return f"Answer with {clip(answer)}: {' and '.join(parts)}."

    def evaluate_batch(self, actuals: Sequence[Any], expecteds: Sequence[Any] | None = None) -> BatchResult:
        """Vectorised for one text answer per output: no Python loop per pair.

        Pairs equal once lower-cased and stripped of punctuation score 1 at once; the rest are tokenised in one
        stream per side and their overlaps counted in numpy. Chunks holding lists of answers or non-text outputs
        are judged pair by pair.
        """
        return chunked_batch(self, actuals, expecteds, self._vector, self._fast_dicts)

    def _vector(self, actuals: Sequence[Any], expecteds: Sequence[Any]) -> tuple[FloatArray, BoolArray, Columns] | None:
        prep_a = squad_prepare_batch(actuals)
        prep_e = None if prep_a is None else squad_prepare_batch(expecteds)
        if prep_a is None or prep_e is None:
            return None
        n = len(prep_a)
        # equal prepared texts have equal tokens: F1, precision and recall are 1 (or both are empty)
        f1, precision, recall = np.ones(n), np.ones(n), np.ones(n)
        n_pred, n_gold = np.zeros(n), np.zeros(n)
        differ = np.fromiter(map(operator.ne, prep_a, prep_e), dtype=np.bool_, count=n)
        if differ.any():
            same, n_pred[differ], n_gold[differ] = _token_counts(
                list(compress(prep_a, differ)), list(compress(prep_e, differ))
            )
            f1[differ], precision[differ], recall[differ] = f1_columns(same, n_pred[differ], n_gold[differ])
        passed = f1 >= self.options.threshold
        if not differ.all():  # passing pairs' details give token counts: those of equal pairs, one by one
            equal = ~differ
            counts = np.fromiter((len(squad_tokens_prepared(p)) for p in compress(prep_a, equal)), dtype=np.float64)
            n_pred[equal] = n_gold[equal] = counts
        columns: Columns = {"precision": precision, "recall": recall, "n_pred": n_pred, "n_gold": n_gold}
        # the prepared texts: a failing pair's feedback takes its tokens from them (preparing is the costly step)
        columns["prep_a"], columns["prep_e"] = objects(prep_a), objects(prep_e)
        return f1, passed, columns

    def _fast_dicts(
        self, actuals: Sequence[Any], expecteds: Sequence[Any], scores: FloatArray, passed: BoolArray, columns: Columns
    ) -> Callable[[int], dict[str, Any]]:
        """The JSON form of a vectorised pair's verdict (one text answer), as :meth:`check` gives it, from the
        batch's columns: only a failing pair's feedback tokenises its texts again."""
        threshold = self.options.threshold
        f1s, ok = scores.tolist(), passed.tolist()
        precision, recall = columns["precision"].tolist(), columns["recall"].tolist()
        n_pred, n_gold = columns["n_pred"].astype(np.int64).tolist(), columns["n_gold"].astype(np.int64).tolist()
        prepared_a, prepared_e = columns["prep_a"].tolist(), columns["prep_e"].tolist()

        def build(i: int) -> dict[str, Any]:
            f1, answer = f1s[i], expecteds[i]
            details = {
                "f1": f1,
                "precision": precision[i],
                "recall": recall[i],
                "threshold": threshold,
                "matched": cut(answer),
                "output_tokens": n_pred[i],
                "expected_tokens": n_gold[i],
            }
            if ok[i]:
                return {
                    "score": f1,
                    "passed": True,
                    "reason": None,
                    "feedback": None,
                    "details": details,
                    "error": None,
                }
            text = actuals[i]
            reason = (
                f"token F1 {f1:.3f} (precision {precision[i]:.3f}, recall {recall[i]:.3f}) of output {clip(text, 80)} "
                f"against {clip(answer, 80)} is below the threshold {threshold:g}"
            )
            pred, gold = squad_tokens_prepared(prepared_a[i]), squad_tokens_prepared(prepared_e[i])
            feedback = self._feedback(pred, gold, answer)
            return {
                "score": f1,
                "passed": False,
                "reason": reason,
                "feedback": feedback,
                "details": details,
                "error": None,
            }

        return build


def _quoted(tokens: list[str], limit: int = 8) -> str:
    """:func:`listing` of the tokens' reprs (only those shown are quoted: a long output has hundreds)."""
    return listing([repr(t) for t in tokens[:limit]] + [""] * max(0, len(tokens) - limit), limit=limit)


def f1_columns(same: FloatArray, n_pred: FloatArray, n_gold: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """:func:`f1_figures` over arrays of counts, with the same arithmetic (so the same floats)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = same / n_pred
        recall = same / n_gold
        f1 = 2 * precision * recall / (precision + recall)
    none = same == 0
    f1[none] = precision[none] = recall[none] = 0.0
    empty = (n_pred == 0) | (n_gold == 0)
    agree = (n_pred == n_gold)[empty].astype(np.float64)
    f1[empty] = precision[empty] = recall[empty] = agree
    return f1, precision, recall


def f1_array(same: FloatArray, n_pred: FloatArray, n_gold: FloatArray) -> FloatArray:
    """:func:`f1_figures`' F1 over arrays of counts, with the same arithmetic (so the same floats)."""
    return f1_columns(same, n_pred, n_gold)[0]


def _token_counts(prepared_a: list[str], prepared_e: list[str]) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(common tokens, output tokens, expected tokens) per pair of prepared texts, as float arrays.

    Tokens become integer ids; each (pair, token) key is counted with ``np.unique`` on each side, and the
    multiset overlap is the sum over shared keys of the smaller count. No Python loop runs per pair, except
    when a text contains NUL (then pair by pair).
    """
    n = len(prepared_a)
    stream_a = squad_token_stream(prepared_a)
    stream_e = squad_token_stream(prepared_e)
    if stream_a is None or stream_e is None:
        pred = [squad_tokens_prepared(p) for p in prepared_a]
        gold = [squad_tokens_prepared(p) for p in prepared_e]
        return (
            np.fromiter(map(token_overlap, pred, gold), dtype=np.float64, count=n),
            np.fromiter(map(len, pred), dtype=np.float64, count=n),
            np.fromiter(map(len, gold), dtype=np.float64, count=n),
        )
    vocab = dict.fromkeys(stream_a)
    vocab.update(dict.fromkeys(stream_e))
    hidden = hidden_articles(list(vocab))
    for rest in hidden.values():
        vocab.update(dict.fromkeys(rest))
    ids = {token: i for i, token in enumerate(vocab)}
    size = len(ids)
    dropped = np.array([i for token, i in ids.items() if token == STREAM_SEPARATOR or is_article(token)])
    separator = ids[STREAM_SEPARATOR]
    expand = _expansion(ids, hidden)

    def side(stream: list[str]) -> tuple[FloatArray, npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        tokens = np.fromiter(map(ids.__getitem__, stream), dtype=np.int64, count=len(stream))
        if expand is not None:
            tokens = expand(tokens)
        ends = tokens == separator
        pair = np.cumsum(ends) - ends  # the pair each token belongs to (its separator closes that pair)
        keep = ~np.isin(tokens, dropped)
        pair, tokens = pair[keep], tokens[keep]
        lengths = np.bincount(pair, minlength=n).astype(np.float64)
        keys, counts = np.unique(pair * size + tokens, return_counts=True)
        return lengths, keys, counts

    n_pred, keys_a, counts_a = side(stream_a)
    n_gold, keys_e, counts_e = side(stream_e)
    shared, ia, ie = np.intersect1d(keys_a, keys_e, assume_unique=True, return_indices=True)
    same = np.bincount(shared // size, weights=np.minimum(counts_a[ia], counts_e[ie]), minlength=n)
    return same.astype(np.float64), n_pred, n_gold


def _expansion(
    ids: dict[str, int], hidden: dict[str, list[str]]
) -> Callable[[npt.NDArray[np.int64]], npt.NDArray[np.int64]] | None:
    """A function replacing each token id by the ids of what is left of it once articles inside it go
    (:func:`hidden_articles`), in numpy; None when no token hides an article."""
    if not hidden:
        return None
    pieces = np.ones(len(ids), dtype=np.int64)
    for token, rest in hidden.items():
        pieces[ids[token]] = len(rest)
    offsets = np.cumsum(pieces) - pieces
    flat = np.empty(int(pieces.sum()), dtype=np.int64)
    plain = pieces == 1
    flat[offsets[plain]] = np.flatnonzero(plain)
    for token, rest in hidden.items():
        if len(rest) == 1:
            flat[offsets[ids[token]]] = ids[rest[0]]
        else:
            start = offsets[ids[token]]
            flat[start : start + len(rest)] = [ids[t] for t in rest]

    def expand(tokens: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        counts = pieces[tokens]
        firsts = np.cumsum(counts) - counts  # where each token's pieces start in the output
        return flat[np.repeat(offsets[tokens] - firsts, counts) + np.arange(int(counts.sum()))]

    return expand
