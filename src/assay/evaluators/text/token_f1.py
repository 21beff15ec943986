"""token_f1: SQuAD token F1 of the output against the best acceptable answer, vectorised over a batch."""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import compress
from typing import TYPE_CHECKING, Any, cast

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
from assay.evaluators.text import common
from assay.evaluators.text.common import chunked_batch, clip, cut, listing, objects, references
from assay.verdict import Verdict

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from assay.evaluators.text.common import Columns
    from assay.reductions import BoolArray, FloatArray


class TokenF1Options(Options):
    """Options of token_f1: the F1 at or above which the output passes (default 0.5, i.e. at least half right)."""

    threshold: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="the SQuAD token F1 (0–1, against the best answer) at or above which a sample passes",
    )


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
        import numpy as np

        prep_a = squad_prepare_batch(actuals)
        prep_e = None if prep_a is None else squad_prepare_batch(expecteds)
        if prep_a is None or prep_e is None:
            return None
        n = len(prep_a)
        # equal prepared texts have equal tokens: F1, precision and recall are 1 (or both are empty)
        f1, precision, recall = np.ones(n), np.ones(n), np.ones(n)
        n_pred, n_gold = np.zeros(n), np.zeros(n)
        differ = np.fromiter(map(operator.ne, prep_a, prep_e), dtype=np.bool_, count=n)
        equal = ~differ
        diff_a, diff_e = list(compress(prep_a, differ)), list(compress(prep_e, differ))
        same_a = list(compress(prep_a, equal))  # equal pairs' details give their (equal) token counts
        tokens = _Tokens.of(diff_a, diff_e, same_a)
        if tokens is not None:
            same = tokens.overlap(0, 1)
            n_pred[differ], n_gold[differ] = tokens.lengths[0], tokens.lengths[1]
            n_pred[equal] = n_gold[equal] = tokens.lengths[2]
        else:  # a text holds NUL: pair by pair
            pred, gold = [squad_tokens_prepared(p) for p in diff_a], [squad_tokens_prepared(p) for p in diff_e]
            same = np.fromiter(map(token_overlap, pred, gold), dtype=np.float64, count=len(pred))
            n_pred[differ] = np.fromiter(map(len, pred), dtype=np.float64, count=len(pred))
            n_gold[differ] = np.fromiter(map(len, gold), dtype=np.float64, count=len(gold))
            n_pred[equal] = n_gold[equal] = np.fromiter(map(len, map(squad_tokens_prepared, same_a)), np.float64)
        if differ.any():
            f1[differ], precision[differ], recall[differ] = f1_columns(same, n_pred[differ], n_gold[differ])
        passed = f1 >= self.options.threshold
        columns: Columns = {"precision": precision, "recall": recall, "n_pred": n_pred, "n_gold": n_gold}
        # a failing pair's tokens, for its feedback, kept as ids until the dicts need them (equal texts always
        # pass: their F1 is 1); the chunk's holder sits in the column at the chunk's first pair
        failing = np.flatnonzero(~passed[differ])
        held = np.full(n, None, dtype=object)
        if failing.size:
            where = np.flatnonzero(differ)[failing].tolist()
            if tokens is not None:
                held[0] = _FailingTokens.of_stream(tokens, failing, where)
            else:
                chosen = failing.tolist()
                held[0] = _FailingTokens(where, [pred[i] for i in chosen], [gold[i] for i in chosen])
        columns["failing_tokens"] = held
        return f1, passed, columns

    def _fast_dicts(
        self, actuals: Sequence[Any], expecteds: Sequence[Any], scores: FloatArray, passed: BoolArray, columns: Columns
    ) -> Callable[[int], dict[str, Any]]:
        """The JSON form of a vectorised pair's verdict (one text answer), as :meth:`check` gives it, from the
        batch's columns (a failing pair's tokens too)."""
        import numpy as np

        threshold = self.options.threshold
        f1s, ok = scores.tolist(), passed.tolist()
        precision, recall = columns["precision"].tolist(), columns["recall"].tolist()
        n_pred, n_gold = columns["n_pred"].astype(np.int64).tolist(), columns["n_gold"].astype(np.int64).tolist()
        held, chunk = columns["failing_tokens"], common.BATCH_CHUNK  # the chunks the batch was scored in
        # the failing pairs' tokens of the last chunk asked for (replaced whole: concurrent readers stay safe)
        last: list[dict[int, tuple[list[str], list[str]]]] = [{}]

        def tokens_of(i: int) -> tuple[list[str], list[str]]:
            got = last[0].get(i)
            if got is None:  # the first failing pair of its chunk: the chunk's failing pairs' tokens at once
                start = i - i % chunk
                tokens = held[start].by_pair(start)
                last[0], got = tokens, tokens[i]
            return got

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
            feedback = self._feedback(*tokens_of(i), answer)
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
    import numpy as np

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


class _Tokens:
    """Several lists of prepared texts tokenised as SQuAD does, in numpy, over one vocabulary: tokens become
    integer ids, each text's (articles dropped, hidden ones expanded) kept in order. No Python loop runs per text.
    """

    def __init__(self, streams: list[list[str]], sizes: list[int]) -> None:
        import numpy as np

        vocab: dict[str, None] = {}
        for stream in streams:
            vocab.update(dict.fromkeys(stream))
        hidden = hidden_articles(list(vocab))
        for rest in hidden.values():
            vocab.update(dict.fromkeys(rest))
        ids = {token: i for i, token in enumerate(vocab)}
        self.size = len(ids)
        self.names = objects(list(ids))
        dropped = np.array([i for token, i in ids.items() if token == STREAM_SEPARATOR or is_article(token)])
        separator, expand = ids[STREAM_SEPARATOR], _expansion(ids, hidden)
        # per list: its texts' kept token ids one after another, the text of each, and each text's length
        self.tokens: list[npt.NDArray[np.int64]] = []
        self.texts: list[npt.NDArray[np.int64]] = []
        self.lengths: list[npt.NDArray[np.int64]] = []
        for stream, n in zip(streams, sizes, strict=True):
            tokens = np.fromiter(map(ids.__getitem__, stream), dtype=np.int64, count=len(stream))
            if expand is not None:
                tokens = expand(tokens)
            ends = tokens == separator
            text = np.cumsum(ends) - ends  # the text each token belongs to (its separator closes that text)
            keep = ~np.isin(tokens, dropped)
            self.tokens.append(tokens[keep])
            self.texts.append(text[keep])
            self.lengths.append(np.bincount(text[keep], minlength=n))

    @classmethod
    def of(cls, *lists: list[str]) -> _Tokens | None:
        """The tokens of each list of prepared texts; None when a text contains NUL (the stream separator)."""
        streams = [squad_token_stream(texts) for texts in lists]
        if any(stream is None for stream in streams):
            return None
        return cls(cast(list[list[str]], streams), [len(texts) for texts in lists])

    def overlap(self, a: int, b: int) -> FloatArray:
        """The multiset overlap of the tokens of each text of list ``a`` with those of the same text of list ``b``:
        each (text, token) key counted with ``np.unique`` on each side, the smaller count summed over shared keys."""
        import numpy as np

        counted = [np.unique(self.texts[k] * self.size + self.tokens[k], return_counts=True) for k in (a, b)]
        (keys_a, counts_a), (keys_b, counts_b) = counted
        shared, ia, ib = np.intersect1d(keys_a, keys_b, assume_unique=True, return_indices=True)
        n = self.lengths[a].size
        same = np.bincount(shared // self.size, weights=np.minimum(counts_a[ia], counts_b[ib]), minlength=n)
        return np.asarray(same, dtype=np.float64)


def _expansion(
    ids: dict[str, int], hidden: dict[str, list[str]]
) -> Callable[[npt.NDArray[np.int64]], npt.NDArray[np.int64]] | None:
    """A function replacing each token id by the ids of what is left of it once articles inside it go
    (:func:`hidden_articles`), in numpy; None when no token hides an article."""
    import numpy as np

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


class _FailingTokens:
    """The tokens of a chunk's failing pairs (those at chunk offsets ``where``), for their feedback: token ids and
    the vocabulary until asked for, then the lists of strings that :func:`squad_tokens_prepared` gives."""

    def __init__(self, where: list[int], pred: list[list[str]] | None, gold: list[list[str]] | None) -> None:

        self.where = where
        self._lists = None if pred is None or gold is None else (pred, gold)
        self._names: npt.NDArray[np.object_] | None = None
        self._ids: list[tuple[npt.NDArray[np.int64], list[int]]] = []

    @classmethod
    def of_stream(cls, tokens: _Tokens, failing: npt.NDArray[np.int64], where: list[int]) -> _FailingTokens:
        """The failing texts' (``failing``: their indices in lists 0 and 1) token ids, gathered in numpy."""
        import numpy as np

        held = cls(where, None, None)
        held._names = tokens.names
        for k in (0, 1):
            lengths = tokens.lengths[k]
            counts = lengths[failing]
            offsets = np.cumsum(counts) - counts  # where each failing text's tokens start among the gathered
            starts = (np.cumsum(lengths) - lengths)[failing]
            gather = np.repeat(starts - offsets, counts) + np.arange(int(counts.sum()), dtype=np.int64)
            held._ids.append((tokens.tokens[k][gather], counts.tolist()))
        return held

    def by_pair(self, offset: int) -> dict[int, tuple[list[str], list[str]]]:
        """(output tokens, answer tokens) of each failing pair, keyed by its index in the batch (chunk + offset)."""
        if self._lists is not None:
            pred, gold = self._lists
        else:
            assert self._names is not None
            pred, gold = (_split(self._names[ids].tolist(), counts) for ids, counts in self._ids)
        return {offset + w: (p, g) for w, p, g in zip(self.where, pred, gold, strict=True)}


def _split(items: list[str], counts: list[int]) -> list[list[str]]:
    """``items`` cut into consecutive lists of ``counts`` items."""
    out, start = [], 0
    for count in counts:
        out.append(items[start : start + count])
        start += count
    return out
