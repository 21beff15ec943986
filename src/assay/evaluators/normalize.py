"""Text normalisation shared by the text evaluators, applied in lm-evaluation-harness / HF `evaluate` order.

Order: regexes_to_ignore, ignore_case, ignore_punctuation, ignore_numbers, then our additions
ignore_articles (SQuAD's articles 'a', 'an', 'the'; without ignore_whitespace each goes with the whitespace
beside it, so that 'the Eiffel Tower' becomes 'Eiffel Tower' on its own), ignore_whitespace (collapse runs to one
space) and strip.
"""

from __future__ import annotations

import re
import string
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, field_validator

_PUNCTUATION_TABLE = str.maketrans("", "", string.punctuation)
_DIGIT_TABLE = str.maketrans("", "", string.digits)
_PUNCTUATION_BYTES = string.punctuation.encode("ascii")
_DIGIT_BYTES = string.digits.encode("ascii")
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.IGNORECASE)
# an article with the whitespace after it, or else with the whitespace before it: one separator stays between words
_ARTICLES_SPACED = re.compile(r"\b(?:a|an|the)\b\s+|\s*\b(?:a|an|the)\b", re.IGNORECASE)
_WHITESPACE = re.compile(r"\s+")
_SEP = "\x00"  # joins many strings for one C-level pass; survives every transformation below
STREAM_SEPARATOR = _SEP  # ends each text's tokens in squad_token_stream
_SEP_BYTES = _SEP.encode("ascii")
_ARTICLE_WORDS = frozenset({"a", "an", "the"})
_NOT_WORD_OR_SPACE = re.compile(r"[^\w\s\x00]")
# the ASCII characters _NOT_WORD_OR_SPACE does not match, to look for the others in ASCII text with bytes.translate
_ASCII_WORD_OR_SPACE = bytes(c for c in range(128) if not _NOT_WORD_OR_SPACE.match(chr(c)))


class NormalizeOptions(BaseModel):
    """Normalisation options; mixed into the options of evaluators that compare text."""

    ignore_case: bool = Field(False, description="lower-case both texts before comparing, so 'Paris' equals 'paris'")
    ignore_punctuation: bool = Field(
        False,
        description="delete ASCII punctuation (Python's string.punctuation) from both texts; curly quotes, dashes "
        "and other non-ASCII marks stay",
    )
    ignore_numbers: bool = Field(
        False, description="delete the digits 0-9 from both texts (use it when numbers should not decide a match)"
    )
    ignore_whitespace: bool = Field(
        False, description="collapse each run of whitespace (line breaks too) to one space and trim both ends"
    )
    ignore_articles: bool = Field(
        False, description="drop the English articles 'a', 'an' and 'the' as whole words, as SQuAD's scoring does"
    )
    strip: bool = Field(False, description="trim whitespace from both ends of both texts, after the other steps")
    regexes_to_ignore: list[str] = Field(
        default_factory=list,
        description="regular expressions whose matches are deleted from both texts first, before the other steps "
        "(e.g. '^Answer:\\s*')",
    )

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

    @property
    def _deleted_bytes(self) -> bytes:
        """The ASCII bytes that ignore_punctuation / ignore_numbers delete."""
        return (_PUNCTUATION_BYTES if self.ignore_punctuation else b"") + (_DIGIT_BYTES if self.ignore_numbers else b"")

    @property
    def _per_string_only(self) -> bool:
        """Only case, strip and regexes apply: mapping each string's own methods beats join + split."""
        return not (self.ignore_punctuation or self.ignore_numbers or self.ignore_whitespace or self.ignore_articles)

    def many(self, texts: Sequence[str]) -> list[str]:
        """Normalise many strings, exactly as one at a time; a TypeError when one is not a str."""
        out = self.batch(texts)
        if out is None:
            raise TypeError("Normalizer.many expects a sequence of str")
        return out

    def batch(self, texts: Sequence[Any]) -> list[str] | None:
        """The normalised texts, or None when one of them is not a ``str`` (the caller's general path).

        One pass of each C-level operation over all texts joined, fast on any script: punctuation and digits
        are deleted on the UTF-8 bytes (no multi-byte character holds an ASCII byte), and texts are lower-cased
        together (see :func:`lower_joined`).
        """
        if self.is_identity:
            return str_list(texts)
        if self._per_string_only and (self.ignore_case or self.strip):
            try:  # str.lower / str.strip raise TypeError for anything but a str: the check costs nothing extra
                return self._per_string(self._after_regexes_many(texts))
            except TypeError:
                return None
        prepared = self._prepared(texts)
        if prepared is None:
            return None
        texts, joined = prepared
        if joined is None:
            return self._per_string(texts)
        if not texts:
            return []
        if self.ignore_whitespace or self.ignore_articles:
            out = self._regex_steps(self._char_steps(texts, joined).decode(_UTF8, _SURROGATES)).split(_SEP)
        elif joined.isascii():  # stays a str: the ASCII fast paths of lower() and translate() need no decoding
            out = self._ascii_char_steps(joined).split(_SEP)
        else:
            out = self._char_steps(texts, joined).decode(_UTF8, _SURROGATES).split(_SEP)
        if len(out) != len(texts):  # a text holds NUL itself (NUL survives every step): one at a time
            return self._per_string(texts)
        return list(map(str.strip, out)) if self.strip and not self.ignore_whitespace else out

    def batch_keys(self, texts: Sequence[Any]) -> list[bytes] | list[str] | None:
        """Keys equal exactly when the normalised texts are equal (their UTF-8, which is cheaper to build), or
        None when one text is not a ``str``."""
        if self._per_string_only or (self.strip and not self.ignore_whitespace):
            return self.batch(texts)  # str keys; str.strip's whitespace is Unicode's, so it stays on str
        prepared = self._prepared(texts)
        if prepared is None:
            return None
        texts, joined = prepared
        assert joined is not None  # only a per-string normaliser skips the join, and it returned above
        if not texts:
            return []
        if self.ignore_whitespace or self.ignore_articles:
            text = self._regex_steps(self._char_steps(texts, joined).decode(_UTF8, _SURROGATES))
            keys = text.encode(_UTF8, _SURROGATES).split(_SEP_BYTES)
        else:
            keys = self._char_steps(texts, joined).split(_SEP_BYTES)
        if len(keys) != len(texts):  # a text holds NUL itself: one at a time, as the same kind of key
            return [t.encode(_UTF8, _SURROGATES) for t in self._per_string(texts)]
        return keys

    def _after_regexes_many(self, texts: Sequence[Any]) -> Sequence[Any]:
        return [self._apply_regexes(t) for t in texts] if self.regexes else texts

    def _prepared(self, texts: Sequence[Any]) -> tuple[Sequence[str], str | None] | None:
        """(texts after regexes_to_ignore, their NUL join or None when it is not worth it), None for non-str."""
        try:
            texts = self._after_regexes_many(texts)
            joined = _SEP.join(texts)  # raises TypeError for anything but str: the check costs nothing extra
        except TypeError:
            return None
        return texts, None if self._per_string_only else joined

    def _per_string(self, texts: Sequence[str]) -> list[str]:
        """Each text's own methods (or the whole normaliser) mapped over the list."""
        if not self._per_string_only:
            return [self._after_regexes(t) for t in texts]
        out = list(map(str.lower, texts)) if self.ignore_case else list(texts)
        return list(map(str.strip, out)) if self.strip else out

    def _ascii_char_steps(self, joined: str) -> str:
        if self.ignore_case:
            joined = joined.lower()
        return joined.translate(_ASCII_DELETE[(self.ignore_punctuation, self.ignore_numbers)])

    def _char_steps(self, texts: Sequence[str], joined: str) -> bytes:
        """The UTF-8 of the joined texts after ignore_case, ignore_punctuation and ignore_numbers."""
        data = lower_joined(texts, joined) if self.ignore_case else joined.encode(_UTF8, _SURROGATES)
        deleted = self._deleted_bytes
        return data.translate(None, deleted) if deleted else data

    def _regex_steps(self, text: str) -> str:
        """ignore_articles and ignore_whitespace over joined texts; whitespace runs never cross a NUL."""
        if self.ignore_articles:
            text = _ARTICLES.sub(" ", text) if self.ignore_whitespace else _ARTICLES_SPACED.sub("", text)
        if self.ignore_whitespace:
            # runs are now one space; the one at either end of each text goes, as .strip(" ") would do
            text = _WHITESPACE.sub(" ", text).replace(" " + _SEP, _SEP).replace(_SEP + " ", _SEP).strip(" ")
        return text

    def _after_regexes(self, text: str) -> str:
        text = self._joinable(text)
        return text.strip() if self.strip else text

    def _apply_regexes(self, text: str) -> str:
        for pattern in self.regexes:
            text = pattern.sub("", text)
        return text


def str_list(texts: Sequence[Any]) -> list[str] | None:
    """``texts`` as a list (itself when it is one), or None when one of them is not a ``str``."""
    try:
        deque(map(str.isascii, texts), maxlen=0)  # a TypeError for anything but a str, and no copy
    except TypeError:
        return None
    return texts if isinstance(texts, list) else list(texts)


_ASCII_DELETE = {
    (False, False): {},
    (True, False): _PUNCTUATION_TABLE,
    (False, True): _DIGIT_TABLE,
    (True, True): str.maketrans("", "", string.punctuation + string.digits),
}


def lower_joined(texts: Sequence[str], joined: str) -> bytes:
    """The UTF-8 of ``joined.lower()``, where ``joined`` is ``texts`` joined by NUL.

    ``str.lower`` has a fast path only for an all-ASCII string, and one emoji makes the whole join a 4-byte
    string. So when few texts hold a non-ASCII character, the join is lower-cased as bytes (ASCII letters only)
    and just those texts are lower-cased again as str. NUL is neither cased nor case-ignorable, so each text
    lower-cases as it would alone (Greek final sigma included).
    """
    import numpy as np

    if joined.isascii():
        return joined.encode("ascii").lower()
    data = joined.encode(_UTF8, _SURROGATES)
    if (len(data) - len(joined)) * _FEW_NON_ASCII > len(texts):
        return joined.lower().encode(_UTF8, _SURROGATES)  # many texts hold non-ASCII: one str pass is cheapest
    raw = np.frombuffer(data, dtype=np.uint8)
    separators = np.flatnonzero(raw == 0)
    if len(separators) != len(texts) - 1:  # a text holds NUL: the segments are not the texts
        return joined.lower().encode(_UTF8, _SURROGATES)
    wide = np.unique(np.searchsorted(separators, np.flatnonzero(raw >= 0x80))).tolist()
    parts = data.lower().split(_SEP_BYTES)
    for i in wide:
        parts[i] = texts[i].lower().encode(_UTF8, _SURROGATES)
    return _SEP_BYTES.join(parts)


_FEW_NON_ASCII = 8  # below one non-ASCII byte per this many texts, lower_joined redoes only those texts
_UTF8 = "utf-8"
_SURROGATES = "surrogatepass"  # lone surrogates (legal in a str) round-trip through the bytes unchanged


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


def squad_prepare_batch(texts: Sequence[Any]) -> list[str] | None:
    """:func:`squad_prepare_many`, or None when one of the texts is not a ``str``."""
    return _SQUAD_PREPARE.batch(texts)


def squad_tokens_prepared(prepared: str) -> list[str]:
    """The tokens of :func:`squad_normalize` for one text already through :func:`squad_prepare_many`."""
    return _ARTICLES.sub(" ", prepared).split()


def squad_token_stream(prepared: Sequence[str]) -> list[str] | None:
    """The whitespace tokens of many prepared texts in one flat list, each text's tokens then STREAM_SEPARATOR.

    None when a text contains the separator (NUL). ``prepared`` comes from :func:`squad_prepare_many`. Articles
    are left in: those standing alone are dropped with :func:`is_article`, and those inside a token (next to a
    non-word character, as in 'the–end') by :func:`hidden_articles` on the distinct tokens.
    """
    if not prepared:
        return []
    joined = _SEP.join(prepared) + _SEP
    if joined.count(_SEP) != len(prepared):
        return None
    return joined.replace(_SEP, f" {_SEP} ").split()


def hidden_articles(tokens: Sequence[str]) -> dict[str, list[str]]:
    """The tokens in which SQuAD's article regex removes something, with what is left of each ('the–end' ->
    ['–end']); tokens that are an article outright are not included. Articles cannot span whitespace, so a
    text's SQuAD tokens are its whitespace tokens, each replaced so: one regex pass over the distinct tokens.
    """
    tokens = [t for t in tokens if t != _SEP]
    joined = _SEP.join(tokens)
    if not _has_non_word_token_char(joined):
        return {}
    after = _ARTICLES.sub(" ", joined).split(_SEP)
    return {
        token: rest.split()
        for token, rest in zip(tokens, after, strict=True)
        if rest != token and token not in _ARTICLE_WORDS
    }


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
