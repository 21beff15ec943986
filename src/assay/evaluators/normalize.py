"""Text normalisation shared by the text evaluators, applied in lm-evaluation-harness / HF `evaluate` order.

Order: regexes_to_ignore, ignore_case, ignore_punctuation, ignore_numbers, then our additions
ignore_articles (SQuAD's articles 'a', 'an', 'the'; without ignore_whitespace each goes with the whitespace
beside it, so that 'the Eiffel Tower' becomes 'Eiffel Tower' on its own), ignore_whitespace (collapse runs to one
space) and strip.
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
# an article with the whitespace after it, or else with the whitespace before it: one separator stays between words
_ARTICLES_SPACED = re.compile(r"\b(?:a|an|the)\b\s+|\s*\b(?:a|an|the)\b", re.IGNORECASE)
_WHITESPACE = re.compile(r"\s+")
_SEP = "\x00"  # joins many strings for one C-level pass; survives every transformation below
STREAM_SEPARATOR = _SEP  # ends each text's tokens in squad_token_stream
_ARTICLE_WORDS = frozenset({"a", "an", "the"})
_NOT_WORD_OR_SPACE = re.compile(r"[^\w\s\x00]")
# the ASCII characters _NOT_WORD_OR_SPACE does not match, to look for the others in ASCII text with bytes.translate
_ASCII_WORD_OR_SPACE = bytes(c for c in range(128) if not _NOT_WORD_OR_SPACE.match(chr(c)))


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
            # with whitespace collapsed next, exactly SQuAD's way; else the article goes with a space beside it
            text = _ARTICLES.sub(" ", text) if self.ignore_whitespace else _ARTICLES_SPACED.sub("", text)
        if self.ignore_whitespace:
            text = _WHITESPACE.sub(" ", text).strip(" ")
        return text

    def many(self, texts: Sequence[str]) -> list[str]:
        """Normalise many strings: one pass of each C-level string operation over their join, or, when only
        case, strip and regexes apply, each string's own methods mapped over the list (cheaper there).
        """
        if self.is_identity:
            return list(texts)
        if not (self.ignore_punctuation or self.ignore_numbers or self.ignore_whitespace or self.ignore_articles):
            # only per-string methods: mapping them is cheaper than join + split
            out = list(map(self._apply_regexes, texts)) if self.regexes else list(texts)
            if self.ignore_case:
                out = list(map(str.lower, out))
            return list(map(str.strip, out)) if self.strip else out
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


def squad_prepare_many(texts: Sequence[str]) -> list[str]:
    """The first two steps of :func:`squad_normalize` (lower case, drop punctuation) over many texts at once."""
    return _SQUAD_PREPARE.many(texts)


def squad_tokens_prepared(prepared: str) -> list[str]:
    """The tokens of :func:`squad_normalize` for one text already through :func:`squad_prepare_many`."""
    return _ARTICLES.sub(" ", prepared).split()


def squad_token_stream(prepared: Sequence[str]) -> list[str] | None:
    """The SQuAD tokens of many prepared texts in one flat list, each text's tokens then STREAM_SEPARATOR.

    None when a text contains the separator (NUL). ``prepared`` comes from :func:`squad_prepare_many`. One
    C-level pass per step over all the texts. Words 'a', 'an' and 'the' standing alone are left in: dropping
    them (:func:`is_article`) is then exactly SQuAD's article removal. The article regex runs only when some
    token holds a non-word character, where an article could hide inside it.
    """
    if not prepared:
        return []
    joined = _SEP.join(prepared) + _SEP
    if joined.count(_SEP) != len(prepared):
        return None
    if _has_non_word_token_char(joined):
        joined = _ARTICLES.sub(" ", joined)
    return joined.replace(_SEP, f" {_SEP} ").split()


def _has_non_word_token_char(text: str) -> bool:
    """True when ``text`` has a character that is neither a word character, whitespace nor the separator."""
    if text.isascii():
        return bool(text.encode("ascii").translate(None, _ASCII_WORD_OR_SPACE))
    return _NOT_WORD_OR_SPACE.search(text) is not None


def is_article(token: str) -> bool:
    """True for the tokens SQuAD normalisation removes ('a', 'an', 'the', already lower case)."""
    return token in _ARTICLE_WORDS


_SQUAD = Normalizer(ignore_case=True, ignore_punctuation=True, ignore_articles=True, ignore_whitespace=True)
_SQUAD_PREPARE = Normalizer(ignore_case=True, ignore_punctuation=True)
