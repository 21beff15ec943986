"""What the text evaluators share: quotes of texts for reasons, cut texts for details, answers, chunked batches."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from assay.errors import EvaluationInputError
from assay.evaluators.base import BatchResult, Evaluator, _expecteds, expected_texts

if TYPE_CHECKING:  # numpy loads when a batch is scored, not when evaluators are imported (start-up time)
    import numpy as np

    from assay.reductions import BoolArray, FloatArray

    Columns = dict[str, np.ndarray[Any, Any]]
    # scores and passed of a chunk, optionally with named per-pair columns (what the verdicts' details are built
    # from)
    VectorStep = Callable[
        [Sequence[Any], Sequence[Any]], tuple[FloatArray, BoolArray] | tuple[FloatArray, BoolArray, Columns] | None
    ]
    # from (actuals, expecteds, scores, passed, columns) of the whole batch, a function giving the JSON form of the
    # verdict of vectorised pair i
    FastDicts = Callable[
        [Sequence[Any], Sequence[Any], FloatArray, BoolArray, Columns], Callable[[int], dict[str, Any]]
    ]

DETAIL_CHARS = 500  # texts kept in details are cut to this length, so a 1 MB output cannot bloat the record


def clip(text: str, limit: int = 120) -> str:
    """A repr of ``text`` short enough for a reason or feedback line."""
    if len(text) <= limit:
        return repr(text)
    return repr(text[: limit - 1] + "…")


def cut(text: str, limit: int = DETAIL_CHARS) -> str:
    """``text`` as kept in a verdict's details: whole when short, else its start and an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def compared_answer(answer: str, normalized: str) -> str:
    """An expected answer as a reason or feedback quotes it: the value the output was compared with (after the
    evaluator's normalisation, e.g. ``regexes_to_ignore`` turning a GSM8K target '…\\n#### 12' into '12'), or the
    answer as written when normalisation changed only its case or spacing (it reads better and passes alike)."""
    if normalized == answer or " ".join(normalized.split()).casefold() == " ".join(answer.split()).casefold():
        return answer
    return normalized


def references(expected: Any, evaluator: str) -> list[str]:
    """The acceptable answers as strings; an empty list cannot be judged, so it is an input error."""
    answers = expected_texts(expected)
    if not answers:
        raise EvaluationInputError(f"{evaluator}: expected is an empty list; give at least one acceptable answer")
    return answers


def listing(items: Sequence[str], conjunction: str = "and", limit: int = 5) -> str:
    """``'a', 'b' and 'c'`` (already-formatted items), cut after ``limit`` with a count of the rest."""
    shown = list(items[:limit])
    if len(items) > limit:
        shown.append(f"{len(items) - limit} more")
    if len(shown) == 1:
        return shown[0]
    return f"{', '.join(shown[:-1])} {conjunction} {shown[-1]}"


BATCH_CHUNK = 8_192  # pairs per vectorised step: the strings of a chunk stay in the CPU cache between steps


def objects(values: Sequence[Any]) -> np.ndarray[Any, np.dtype[np.object_]]:
    """``values`` as a numpy object column (a vector step's per-pair texts)."""
    import numpy as np

    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):  # one by one: numpy would make equally long lists a second dimension
        out[i] = value
    return out


def chunked_batch(
    evaluator: Evaluator,
    actuals: Sequence[Any],
    expecteds: Sequence[Any] | None,
    vector: VectorStep,
    fast_dicts: FastDicts | None = None,
) -> BatchResult:
    """Score a batch chunk by chunk with ``vector`` (scores and passed of a chunk, or None when the chunk holds
    something it cannot vectorise: a list of answers, a non-text output), pair by pair for those chunks.

    Verdicts are rebuilt on access (:meth:`BatchResult.lazy`), so memory stays two arrays whatever the size.
    With ``fast_dicts``, :meth:`BatchResult.to_dicts` builds the vectorised pairs' dicts from the scores and the
    columns the vector steps returned, without judging them again.
    """
    import numpy as np

    exp = _expecteds(actuals, expecteds)
    n = len(actuals)
    scores = np.empty(n, dtype=np.float64)
    passed = np.empty(n, dtype=np.bool_)
    fast = np.zeros(n, dtype=np.bool_)
    columns: Columns = {}
    for start in range(0, n, BATCH_CHUNK):
        stop = min(n, start + BATCH_CHUNK)
        chunk_a, chunk_e = actuals[start:stop], exp[start:stop]
        got = vector(chunk_a, chunk_e)
        if got is None:
            verdicts = [evaluator.evaluate(a, e) for a, e in zip(chunk_a, chunk_e, strict=True)]
            got = (
                np.fromiter((v.score for v in verdicts), dtype=np.float64, count=stop - start),
                np.fromiter((v.passed for v in verdicts), dtype=np.bool_, count=stop - start),
            )
        else:
            fast[start:stop] = True
        scores[start:stop], passed[start:stop] = got[0], got[1]
        if len(got) == 3:
            for name, column in got[2].items():
                if name not in columns:
                    columns[name] = np.zeros(n, dtype=column.dtype)
                columns[name][start:stop] = column
    fast_dict = None if fast_dicts is None or not fast.any() else fast_dicts(actuals, exp, scores, passed, columns)
    return BatchResult.lazy(evaluator, scores, passed, actuals, exp, fast_dict=fast_dict, fast=fast)
