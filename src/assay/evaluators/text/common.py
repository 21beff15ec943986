"""What the text evaluators share: short quotes of texts for reasons, cut texts for details, the answers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from assay.errors import EvaluationInputError
from assay.evaluators.base import expected_texts

DETAIL_CHARS = 500  # texts kept in details are cut to this length, so a 1 MB output cannot bloat the record


def clip(text: str, limit: int = 120) -> str:
    """A repr of ``text`` short enough for a reason or feedback line."""
    if len(text) <= limit:
        return repr(text)
    return repr(text[: limit - 1] + "…")


def cut(text: str, limit: int = DETAIL_CHARS) -> str:
    """``text`` as kept in a verdict's details: whole when short, else its start and an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
