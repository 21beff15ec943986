"""Text evaluators: exact_match, fuzzy_match, contains, regex, token_f1."""

from __future__ import annotations

import operator
import re
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import compress
from typing import Any, Literal, NamedTuple

import numpy as np
import numpy.typing as npt
from pydantic import Field, ValidationInfo, field_validator

from assay.errors import ConfigError, EvaluationInputError
from assay.evaluators.base import BatchResult, Evaluator, Options, _expecteds, as_text, expected_texts
from assay.evaluators.normalize import (
    STREAM_SEPARATOR,
    NormalizeOptions,
    Normalizer,
    is_article,
    squad_normalize,
    squad_prepare_many,
    squad_token_stream,
    squad_tokens_prepared,
)
from assay.evaluators.registry import register
from assay.reductions import FloatArray
from assay.verdict import Verdict


def clip(text: str, limit: int = 120) -> str:
    """A repr of ``text`` short enough for a reason or feedback line."""
    if len(text) <= limit:
        return repr(text)
    return repr(text[: limit - 1] + "…")


DETAIL_CHARS = 500  # texts kept in details are cut to this length, so a 1 MB output cannot bloat the record


def cut(text: str, limit: int = DETAIL_CHARS) -> str:
    """``text`` as kept in a verdict's details: whole when short, else its start and an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def references(expected: Any, evaluator: str) -> list[str]:
    """The acceptable answers as strings; an empty list cannot be judged, so it is an input error."""
    answers = expected_texts(expected)
    if not answers:
        raise EvaluationInputError(f"{evaluator}: expected is an empty list; give at least one acceptable answer")
    return answers


def _listing(items: Sequence[str], conjunction: str = "and", limit: int = 5) -> str:
    """``'a', 'b' and 'c'`` (already-formatted items), cut after ``limit`` with a count of the rest."""
    shown = list(items[:limit])
    if len(items) > limit:
        shown.append(f"{len(items) - limit} more")
    if len(shown) == 1:
        return shown[0]
    return f"{', '.join(shown[:-1])} {conjunction} {shown[-1]}"


def _all_str(values: Sequence[Any]) -> bool:
    """True when every value is exactly a ``str`` (the vectorised paths need nothing else)."""
    return set(map(type, values)) <= {str}


# --------------------------------------------------------------------------------------------- exact_match


class ExactMatchOptions(Options, NormalizeOptions):
    """Options of exact_match: normalisation only."""


@register("exact_match")
class ExactMatch(Evaluator):
    """Output equals an acceptable answer after normalisation (lm-eval / HF `evaluate` semantics)."""

    Options = ExactMatchOptions
    options: ExactMatchOptions

    def setup(self) -> None:
        self.normalize = Normalizer.from_options(self.options)

    def check(self, actual: Any, expected: Any) -> Verdict:
        text = as_text(actual, self.name)
        answers = references(expected, self.name)
        norm = self.normalize(text)
        norm_answers = [self.normalize(a) for a in answers]
        if norm in norm_answers:
            return Verdict.pass_(details={"matched": cut(answers[norm_answers.index(norm)])})
        return self._failure(text, norm, answers, norm_answers)

    def _failure(self, text: str, norm: str, answers: list[str], norm_answers: list[str]) -> Verdict:
        details = {"normalized_output": cut(norm), "normalized_expected": [cut(a) for a in norm_answers]}
        inside = [a for a, n in zip(answers, norm_answers, strict=True) if n and n in norm]
        if inside:
            # a distinct reason, so that "right answer, wrong form" is its own theme in `assay feedback`
            reason = f"output {clip(text)} contains the expected answer {clip(inside[0])} but also other text"
            if norm != text:
                reason += f" (after normalisation: {clip(norm)})"
        elif len(answers) == 1:
            reason = f"output {clip(text)} does not equal expected {clip(answers[0])}"
            if norm != text or norm_answers[0] != answers[0]:
                reason += f" (after normalisation: {clip(norm)} vs {clip(norm_answers[0])})"
        else:
            shown = ", ".join(clip(a, 40) for a in answers[:5])
            reason = f"output {clip(text)} equals none of {len(answers)} acceptable answers ({shown})"
        if inside:
            feedback = (
                f"The answer {clip(inside[0])} is in the output but surrounded by other text; "
                f"answer with {clip(inside[0])} only, nothing else."
            )
        elif not text.strip():
            feedback = f"The output is empty; answer with {clip(answers[0])}."
        else:
            feedback = f"Answer with exactly {clip(answers[0])}; the output was {clip(text)}."
        return Verdict.fail(reason, feedback=feedback, details=details)

    def evaluate_batch(self, actuals: Sequence[Any], expecteds: Sequence[Any] | None = None) -> BatchResult:
        """Vectorised: one C-level pass of each normalisation step over all strings, then equality."""
        exp = _expecteds(actuals, expecteds)
        if not _all_str(actuals) or not _all_str(exp):
            return super().evaluate_batch(actuals, exp)  # lists of answers or non-text: the general path
        norm_a = self.normalize.many(actuals)
        norm_e = self.normalize.many(exp)
        n = len(norm_a)
        passed = np.fromiter(map(operator.eq, norm_a, norm_e), dtype=np.bool_, count=n)
        return BatchResult.lazy(self, passed.astype(np.float64), passed, actuals, exp)


# --------------------------------------------------------------------------------------------- fuzzy_match

FuzzyAlgorithm = Literal["ratio", "partial_ratio", "token_sort_ratio", "token_set_ratio", "levenshtein", "jaro_winkler"]

# Algorithms by which identical strings can score below 1 (token_set_ratio gives 0 for blank strings);
# the others give identical strings exactly 1, so the batch skips the equality pass for them.
_IDENTICAL_BELOW_ONE = frozenset({"token_set_ratio"})

# Edit descriptions (feedback) are skipped above this many characters, to keep a failure cheap on huge outputs.
_EDIT_DESCRIPTION_LIMIT = 10_000


class FuzzyMatchOptions(Options, NormalizeOptions):
    """Options of fuzzy_match: the similarity algorithm, the pass threshold and normalisation (as exact_match).

    ``algorithm``: rapidfuzz's ``ratio`` (Indel similarity, default), ``partial_ratio`` (best-matching
    substring), ``token_sort_ratio`` (word order ignored), ``token_set_ratio`` (word sets), ``levenshtein``
    (normalised Levenshtein similarity) or ``jaro_winkler``. ``threshold`` (default 0.8) is the similarity to pass.
    """

    algorithm: FuzzyAlgorithm = "ratio"
    threshold: float = Field(0.8, ge=0.0, le=1.0)


def _fuzzy_scorer(algorithm: str) -> tuple[Callable[..., float], float]:
    """The rapidfuzz scorer for ``algorithm`` and the value it gives for identical strings (its scale)."""
    from rapidfuzz import fuzz
    from rapidfuzz.distance import JaroWinkler, Levenshtein

    scorers: dict[str, tuple[Callable[..., float], float]] = {
        "ratio": (fuzz.ratio, 100.0),
        "partial_ratio": (fuzz.partial_ratio, 100.0),
        "token_sort_ratio": (fuzz.token_sort_ratio, 100.0),
        "token_set_ratio": (fuzz.token_set_ratio, 100.0),
        "levenshtein": (Levenshtein.normalized_similarity, 1.0),
        "jaro_winkler": (JaroWinkler.normalized_similarity, 1.0),
    }
    return scorers[algorithm]


def describe_edits(output: str, target: str, limit: int = 3) -> list[str]:
    """The first few character edits turning ``output`` into ``target`` ("replace 'x' with 'y'", …)."""
    from rapidfuzz.distance import Levenshtein

    edits = []
    for op in Levenshtein.opcodes(output, target):
        src = output[op.src_start : op.src_end]
        dst = target[op.dest_start : op.dest_end]
        if op.tag == "replace":
            edits.append(f"replace {clip(src, 30)} with {clip(dst, 30)}")
        elif op.tag == "delete":
            edits.append(f"delete {clip(src, 30)}")
        elif op.tag == "insert":
            where = (
                f"after {clip(output[max(0, op.src_start - 10) : op.src_start], 12)}"
                if op.src_start
                else "at the start"
            )
            edits.append(f"insert {clip(dst, 30)} {where}")
    if len(edits) > limit:
        edits = [*edits[:limit], f"{len(edits) - limit} more edit(s)"]
    return edits


@register("fuzzy_match")
class FuzzyMatch(Evaluator):
    """Similarity in [0, 1] (rapidfuzz) of the output to the closest acceptable answer; passes at ``threshold``.

    The score is the similarity whether or not it passes. Identical strings (after normalisation) score 1.
    """

    Options = FuzzyMatchOptions
    options: FuzzyMatchOptions

    def setup(self) -> None:
        self.normalize = Normalizer.from_options(self.options)
        self._scorer, self._scale = _fuzzy_scorer(self.options.algorithm)

    def similarity(self, a: str, b: str) -> float:
        """Similarity of two already-normalised strings, in [0, 1]."""
        if a == b:
            return 1.0
        return min(1.0, max(0.0, self._scorer(a, b) / self._scale))

    def check(self, actual: Any, expected: Any) -> Verdict:
        text = as_text(actual, self.name)
        answers = references(expected, self.name)
        norm = self.normalize(text)
        norm_answers = [self.normalize(a) for a in answers]
        sims = [self.similarity(norm, n) for n in norm_answers]
        best = max(range(len(sims)), key=sims.__getitem__)
        score, threshold = sims[best], self.options.threshold
        details: dict[str, Any] = {
            "similarity": score,
            "threshold": threshold,
            "algorithm": self.options.algorithm,
            "matched": cut(answers[best]),
        }
        if len(sims) > 1:
            details["similarities"] = sims
        if score >= threshold:
            return Verdict.partial(score, None, threshold, details=details)
        details["normalized_output"] = cut(norm)
        details["normalized_expected"] = cut(norm_answers[best])
        reason = (
            f"{self.options.algorithm} similarity {score:.3f} of output {clip(text)} to "
            f"{'the closest answer ' if len(answers) > 1 else 'expected '}{clip(answers[best])} "
            f"is below the threshold {threshold:g}"
        )
        return Verdict.partial(
            score,
            reason,
            threshold,
            feedback=self._feedback(text, norm, answers[best], norm_answers[best]),
            details=details,
        )

    def _feedback(self, text: str, norm: str, answer: str, norm_answer: str) -> str:
        if not text.strip():
            return f"The output is empty; answer with {clip(answer)}."
        if len(norm) + len(norm_answer) > _EDIT_DESCRIPTION_LIMIT:
            return f"Answer with {clip(answer)}; the output ({len(text)} characters) is far from it."
        edits = describe_edits(norm, norm_answer)
        normalised = " (on the normalised text)" if norm != text or norm_answer != answer else ""
        return f"Answer with {clip(answer)}; to get there{normalised}: {'; '.join(edits)}."

    def evaluate_batch(self, actuals: Sequence[Any], expecteds: Sequence[Any] | None = None) -> BatchResult:
        """Vectorised for one text answer per output: normalise all at once, then ``rapidfuzz.process.cpdist``."""
        exp = _expecteds(actuals, expecteds)
        if not _all_str(actuals) or not _all_str(exp):
            return super().evaluate_batch(actuals, exp)
        norm_a = self.normalize.many(actuals)
        norm_e = self.normalize.many(exp)
        scores = self._raw_similarities(norm_a, norm_e) / self._scale
        np.clip(scores, 0.0, 1.0, out=scores)
        if self.options.algorithm in _IDENTICAL_BELOW_ONE:
            identical = np.fromiter(map(operator.eq, norm_a, norm_e), dtype=np.bool_, count=len(norm_a))
            scores[identical] = 1.0
        return BatchResult.lazy(self, scores, scores >= self.options.threshold, actuals, exp)

    def _raw_similarities(self, norm_a: list[str], norm_e: list[str]) -> FloatArray:
        n = len(norm_a)
        if n == 0:
            return np.zeros(0, dtype=np.float64)
        if self.options.algorithm == "jaro_winkler":
            # cpdist's SIMD Jaro-Winkler differs from the scalar one in the last bit; stay equal to evaluate().
            return np.fromiter(map(self._scorer, norm_a, norm_e), dtype=np.float64, count=n)
        from rapidfuzz.process import cpdist

        return np.asarray(cpdist(norm_a, norm_e, scorer=self._scorer, dtype=np.float64), dtype=np.float64)


# --------------------------------------------------------------------------------------------- contains


class _Matcher(NamedTuple):
    """One contains item: with a pattern it is searched for; otherwise ``needle`` is looked up."""

    item: str
    pattern: re.Pattern[str] | None
    needle: str

    def find(self, text: str, folded: str) -> str | None:
        """The text found for this item (``folded`` is the case-folded text when case is ignored), or None."""
        if self.pattern is not None:
            m = self.pattern.search(text)
            return None if m is None else m.group(0)
        return self.item if self.needle in folded else None


class ContainsOptions(Options):
    """Options of contains: which items, how many must be present, and how they are matched.

    - ``substrings``: the items; when unset, the expected value(s) are the items.
    - ``mode``: ``all`` items must be present (default), ``any`` one of them, or ``none`` of them.
    - ``regex``: the items are regular expressions (searched for); in ``substrings`` they are checked when built.
    - ``ignore_case``: plain items compare by Unicode case folding (``str.casefold``), regexes with re.IGNORECASE.
    """

    mode: Literal["all", "any", "none"] = "all"
    regex: bool = False
    ignore_case: bool = False
    substrings: list[str] | None = None

    @field_validator("substrings")
    @classmethod
    def _valid_substrings(cls, value: list[str] | None, info: ValidationInfo) -> list[str] | None:
        if value is None:
            return value
        if not value:
            raise ValueError("give at least one substring (or leave it unset to use the expected values)")
        for i, item in enumerate(value):
            if item == "":
                raise ValueError(f"item {i} is empty, and an empty string is in every output")
            if info.data.get("regex"):
                try:
                    re.compile(item)
                except re.error as err:
                    raise ValueError(f"item {i} is an invalid regular expression {item!r}: {err}") from None
        return value


@register("contains")
class Contains(Evaluator):
    """The output contains all / any / none of a list of substrings (or regular expressions).

    Items come from the ``substrings`` option or, when it is unset, from the expected value(s). Score is
    the share of items found (``all``/``any``) or the share absent (``none``).
    """

    Options = ContainsOptions
    options: ContainsOptions

    def setup(self) -> None:
        self._flags = re.IGNORECASE if self.options.ignore_case else 0
        self._fixed = self._matchers(self.options.substrings) if self.options.substrings else None

    def _matchers(self, items: list[str]) -> list[_Matcher]:
        """One matcher per item: a compiled pattern (regex mode) or the needle to look for."""
        out = []
        for item in items:
            if self.options.regex:
                try:
                    pattern = re.compile(item, self._flags)
                except re.error as err:
                    raise EvaluationInputError(
                        f"contains: expected {item!r} is not a valid regular expression: {err}"
                    ) from None
                out.append(_Matcher(item, pattern, item))
            else:
                out.append(_Matcher(item, None, item.casefold() if self.options.ignore_case else item))
        return out

    def _show(self, item: str) -> str:
        return f"/{cut(item, 60)}/" if self.options.regex else clip(item, 60)

    def check(self, actual: Any, expected: Any) -> Verdict:
        text = as_text(actual, self.name)
        matchers = self._fixed
        if matchers is None:
            if expected is None:
                raise EvaluationInputError(
                    "contains: no substrings; set the 'substrings' option or give expected values"
                )
            matchers = self._matchers(references(expected, self.name))
        folded = text.casefold() if self.options.ignore_case and not self.options.regex else text
        found: list[tuple[str, str]] = []  # (item, the text it found)
        missing: list[str] = []
        for m in matchers:
            hit = m.find(text, folded)
            if hit is None:
                missing.append(m.item)
            else:
                found.append((m.item, hit))
        matched = [item for item, _ in found]
        total = len(matchers)
        mode = self.options.mode
        details: dict[str, Any] = {
            "mode": mode,
            "matched": [cut(m) for m in matched],
            "missing": [cut(m) for m in missing],
            "total": total,
        }
        if mode == "none":
            score = len(missing) / total
            if not matched:
                return Verdict.pass_(score, details)
            return self._forbidden(text, found, score, details)
        score = len(matched) / total
        if (mode == "all" and not missing) or (mode == "any" and matched):
            return Verdict.pass_(score, details)
        kind = "patterns" if self.options.regex else "substrings"
        shown = [self._show(m) for m in missing]
        if mode == "all":
            reason = f"output {clip(text, 80)} lacks {len(missing)} of {total} required {kind}: {_listing(shown)}"
            verb = "Include text matching" if self.options.regex else "Include"
            feedback = f"{verb} {_listing(shown)} in the answer."
        else:
            reason = f"output {clip(text, 80)} contains none of the {total} {kind} {_listing(shown, 'or')}"
            verb = "text matching at least one of" if self.options.regex else "at least one of"
            feedback = f"Include {verb} {_listing(shown, 'or')} in the answer."
        return Verdict.fail(reason, score=score, feedback=feedback, details=details)

    def _forbidden(self, text: str, found: list[tuple[str, str]], score: float, details: dict[str, Any]) -> Verdict:
        kind = "pattern" if self.options.regex else "substring"
        shown = [self._show(item) for item, _ in found]
        plural = "s" if len(found) != 1 else ""
        reason = f"output {clip(text, 80)} contains {len(found)} forbidden {kind}{plural}: {_listing(shown)}"
        if self.options.regex:
            details["found_text"] = {cut(item): cut(hit) for item, hit in found}
            texts = [f"{clip(hit, 40)} (matching {self._show(item)})" for item, hit in found]
            feedback = f"Remove {_listing(texts)} from the answer."
        else:
            feedback = f"Remove {_listing(shown)} from the answer."
        return Verdict.fail(reason, score=score, feedback=feedback, details=details)


# --------------------------------------------------------------------------------------------- regex


class RegexOptions(Options, NormalizeOptions):
    """Options of regex: the pattern, how it must match, its flags, and an optional group to compare.

    ``ignore_case`` both makes the pattern case-insensitive and compares a captured group ignoring case
    (use an inline ``(?i)`` in the pattern for a case-insensitive pattern only). The other normalisation
    options apply to the comparison of the captured group with the expected answer.
    """

    pattern: str
    mode: Literal["search", "fullmatch"] = "search"
    multiline: bool = False
    dotall: bool = False
    group: int | str | None = None

    @field_validator("pattern")
    @classmethod
    def _valid_pattern(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as err:
            raise ValueError(f"invalid regular expression {value!r}: {err}") from None
        return value


@register("regex")
class Regex(Evaluator):
    """The output matches a regular expression; with ``group``, that group's capture must equal the expected answer.

    Without ``group`` the expected value is not used.
    """

    Options = RegexOptions
    options: RegexOptions

    def setup(self) -> None:
        opts = self.options
        flags = (
            (re.IGNORECASE if opts.ignore_case else 0)
            | (re.MULTILINE if opts.multiline else 0)
            | (re.DOTALL if opts.dotall else 0)
        )
        self._pattern = re.compile(opts.pattern, flags)
        group = opts.group
        if isinstance(group, int) and not 0 <= group <= self._pattern.groups:
            raise ConfigError(
                f"regex: option 'group': the pattern {opts.pattern!r} has {self._pattern.groups} group(s), "
                f"so group must be between 0 and {self._pattern.groups} (got {group})"
            )
        if isinstance(group, str) and group not in self._pattern.groupindex:
            names = ", ".join(repr(n) for n in self._pattern.groupindex) or "none"
            raise ConfigError(
                f"regex: option 'group': the pattern {opts.pattern!r} has no group named {group!r} "
                f"(named groups: {names})"
            )
        self.normalize = Normalizer.from_options(opts)

    def _show(self) -> str:
        return f"/{self.options.pattern}/"

    def check(self, actual: Any, expected: Any) -> Verdict:
        text = as_text(actual, self.name)
        opts = self.options
        m = self._pattern.search(text) if opts.mode == "search" else self._pattern.fullmatch(text)
        if m is None:
            return self._no_match(text)
        details: dict[str, Any] = {"match": cut(m.group(0)), "span": [m.start(), m.end()]}
        if opts.group is None:
            return Verdict.pass_(details=details)
        if expected is None:
            raise EvaluationInputError(
                "regex: option 'group' compares the captured text with the expected answer, "
                "but no expected answer was given"
            )
        answers = references(expected, self.name)
        captured = m.group(opts.group)
        if captured is None:
            return Verdict.fail(
                f"group {opts.group!r} of {self._show()} took no part in the match {clip(m.group(0))}",
                feedback=(
                    f"State the answer {clip(answers[0])} where the pattern {self._show()} reads group {opts.group!r}."
                ),
                details=details,
            )
        norm = self.normalize(captured)
        norm_answers = [self.normalize(a) for a in answers]
        details["captured"] = cut(captured)
        if norm in norm_answers:
            details["matched"] = cut(answers[norm_answers.index(norm)])
            return Verdict.pass_(details=details)
        details["normalized_captured"] = cut(norm)
        details["normalized_expected"] = [cut(a) for a in norm_answers]
        if len(answers) == 1:
            reason = f"group {opts.group!r} captured {clip(captured)}, which does not equal expected {clip(answers[0])}"
            if norm != captured or norm_answers[0] != answers[0]:
                reason += f" (after normalisation: {clip(norm)} vs {clip(norm_answers[0])})"
        else:
            shown = ", ".join(clip(a, 40) for a in answers[:5])
            reason = (
                f"group {opts.group!r} captured {clip(captured)}, which equals none of {len(answers)} answers ({shown})"
            )
        feedback = (
            f"The pattern {self._show()} read the answer {clip(captured)} from {clip(m.group(0), 80)}; "
            f"the answer there should be {clip(answers[0])}."
        )
        return Verdict.fail(reason, feedback=feedback, details=details)

    def _no_match(self, text: str) -> Verdict:
        if self.options.mode == "fullmatch":
            part = self._pattern.search(text)
            if part is not None and part.group(0):
                return Verdict.fail(
                    f"output {clip(text, 80)} does not match {self._show()} as a whole; "
                    f"only {clip(part.group(0), 60)} at {part.start()}-{part.end()} does",
                    feedback=(
                        f"Answer with only the part that matches, {clip(part.group(0), 60)}, without the text around."
                    ),
                    details={"partial_match": cut(part.group(0)), "span": [part.start(), part.end()]},
                )
            return Verdict.fail(
                f"output {clip(text, 80)} does not match {self._show()} as a whole",
                feedback=f"The whole output must match the pattern {self._show()}; the output was {clip(text, 80)}.",
            )
        if not text.strip():
            feedback = f"The output is empty; it must contain text matching the pattern {self._show()}."
        else:
            feedback = f"The output must contain text matching the pattern {self._show()}; it was {clip(text, 80)}."
        return Verdict.fail(f"output {clip(text, 80)} contains no match for {self._show()}", feedback=feedback)


# --------------------------------------------------------------------------------------------- token_f1


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
        missing = list((Counter(gold) - Counter(pred)).elements())
        extra = list((Counter(pred) - Counter(gold)).elements())
        parts = []
        if missing:
            parts.append(f"include the missing word(s) {_listing([repr(t) for t in missing], limit=8)}")
        if extra:
            parts.append(f"drop the extra word(s) {_listing([repr(t) for t in extra], limit=8)}")
        return f"Answer with {clip(answer)}: {' and '.join(parts)}."

    def evaluate_batch(self, actuals: Sequence[Any], expecteds: Sequence[Any] | None = None) -> BatchResult:
        """Vectorised for one text answer per output: no Python loop per pair.

        Pairs equal once lower-cased and stripped of punctuation score 1 at once; the rest are tokenised in one
        stream per side and their overlaps counted in numpy.
        """
        exp = _expecteds(actuals, expecteds)
        if not _all_str(actuals) or not _all_str(exp):
            return super().evaluate_batch(actuals, exp)
        prep_a = squad_prepare_many(actuals)
        prep_e = squad_prepare_many(exp)
        n = len(prep_a)
        f1 = np.ones(n, dtype=np.float64)  # equal prepared texts have equal tokens: F1 is 1 (or both are empty)
        differ = np.fromiter(map(operator.ne, prep_a, prep_e), dtype=np.bool_, count=n)
        if differ.any():
            f1[differ] = f1_array(*_token_counts(list(compress(prep_a, differ)), list(compress(prep_e, differ))))
        return BatchResult.lazy(self, f1, f1 >= self.options.threshold, actuals, exp)


def f1_array(same: FloatArray, n_pred: FloatArray, n_gold: FloatArray) -> FloatArray:
    """:func:`f1_figures`' F1 over arrays of counts, with the same arithmetic (so the same floats)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = same / n_pred
        recall = same / n_gold
        f1 = 2 * precision * recall / (precision + recall)
    f1[same == 0] = 0.0
    empty = (n_pred == 0) | (n_gold == 0)
    f1[empty] = (n_pred == n_gold)[empty]
    return f1


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
    ids = {token: i for i, token in enumerate(vocab)}
    size = len(ids)
    dropped = np.array([i for token, i in ids.items() if token == STREAM_SEPARATOR or is_article(token)])
    separator = ids[STREAM_SEPARATOR]

    def side(stream: list[str]) -> tuple[FloatArray, npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        tokens = np.array([ids[t] for t in stream], dtype=np.int64)
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
