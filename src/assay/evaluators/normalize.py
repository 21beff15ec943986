"""Text normalisation shared by the text evaluators, applied in lm-evaluation-harness / HF `evaluate` order.

Order: regexes_to_ignore, ignore_case, ignore_punctuation, ignore_numbers, then our additions
ignore_articles (SQuAD), ignore_whitespace (collapse runs to one space) and strip.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, Field, field_validator

_PUNCTUATION_TABLE = str.maketrans("", "", string.punctuation)
_DIGIT_TABLE = str.maketrans("", "", string.digits)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.IGNORECASE)
_WHITESPACE = re.compile(r"\s+")
_SEP = "\x00"  # joins many strings for one C-level pass; survives every transformation below


class NormalizeOptions(BaseModel):
    """Normalisation options; mixed into the options of evaluators that compare text."""

    ignore_case: bool = False
    ignore_punctuation: bool = False
    ignore_numbers: bool = False
    ignore_whitespace: bool = False
    ignore_articles: bool = False
    strip: bool = False
    regexes_to_ignore: list[str] = Field(default_factory=list)

    @field_validator("regexes_to_ignore")
    @classmethod
    def _valid_regexes(cls, value: list[str]) -> list[str]:
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as err:
                raise ValueError(f"invalid regular expression {pattern!r}: {err}") from None
        return value


@dataclass(frozen=True)
class Normalizer:
    """Applies one set of normalisation options to a string or, fast, to many strings."""

    ignore_case: bool = False
    ignore_punctuation: bool = False
    ignore_numbers: bool = False
    ignore_whitespace: bool = False
    ignore_articles: bool = False
    strip: bool = False
    regexes: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def from_options(cls, opts: NormalizeOptions) -> Normalizer:
        return cls(
            opts.ignore_case,
            opts.ignore_punctuation,
            opts.ignore_numbers,
            opts.ignore_whitespace,
            opts.ignore_articles,
            opts.strip,
            tuple(re.compile(p) for p in opts.regexes_to_ignore),
        )

    @property
    def is_identity(self) -> bool:
        return not (
            self.ignore_case
            or self.ignore_punctuation
            or self.ignore_numbers
            or self.ignore_whitespace
            or self.ignore_articles
            or self.strip
            or self.regexes
        )

    def __call__(self, text: str) -> str:
        for pattern in self.regexes:
            text = pattern.sub("", text)
        text = self._joinable(text)
        if self.strip:
            text = text.strip()
        return text

    def _joinable(self, text: str) -> str:
        """The steps that act on each character or word alike, so they may run over joined strings."""
        if self.ignore_case:
            text = text.lower()
        if self.ignore_punctuation:
            text = text.translate(_PUNCTUATION_TABLE)
        if self.ignore_numbers:
            text = text.translate(_DIGIT_TABLE)
        if self.ignore_articles:
            text = _ARTICLES.sub(" ", text)
        if self.ignore_whitespace:
            text = _WHITESPACE.sub(" ", text).strip(" ")
        return text

    def many(self, texts: Sequence[str]) -> list[str]:
        """Normalise many strings with one pass of each C-level string operation over their join."""
        if self.is_identity:
            return list(texts)
        if self.regexes:
            texts = [self._apply_regexes(t) for t in texts]
        joined = _SEP.join(texts)
        if joined.count(_SEP) != max(len(texts) - 1, 0):
            return [self(t) for t in texts]  # a NUL inside some text: fall back to one at a time
        if not texts:
            return []
        if self.ignore_whitespace:
            joined = self._joinable(joined)
            # whitespace runs never cross the separator, but the per-item trim must be redone
            out = joined.split(_SEP)
            out = [t.strip(" ") for t in out]
        else:
            out = self._joinable(joined).split(_SEP)
        if self.strip:
            out = [t.strip() for t in out]
        return out

    def _apply_regexes(self, text: str) -> str:
        for pattern in self.regexes:
            text = pattern.sub("", text)
        return text


def squad_normalize(text: str) -> str:
    """SQuAD v1.1 answer normalisation: lower case, drop punctuation and articles, collapse whitespace."""
    text = text.lower().translate(_PUNCTUATION_TABLE)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def squad_normalize_many(texts: Sequence[str]) -> list[str]:
    """:func:`squad_normalize` over many strings at once."""
    return _SQUAD.many(texts)


_SQUAD = Normalizer(ignore_case=True, ignore_punctuation=True, ignore_articles=True, ignore_whitespace=True)
