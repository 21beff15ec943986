"""Comparing JSON values field by field for ``json_match``: leaves, key masks, token F1 and the list-aware comparer.

Kept apart from the evaluators in :mod:`assay.evaluators.structured`, which turn a comparison into a verdict.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from assay.evaluators.jsonparse import Path, json_path, kind
from assay.evaluators.normalize import Normalizer, squad_normalize_many

_NUMERIC_SUFFIX = re.compile(r"[_-]?\d+$")
_PAIRWISE_LIMIT = 10_000  # unordered lists with more unmatched element pairs than this are paired in order


class _Sentinel:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


MISSING: Any = _Sentinel("<missing>")
_GAP: Any = _Sentinel("<gap>")  # a position of an aligned list that no output element filled


# ---------------------------------------------------------------------------------------------- leaves


def leaves(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Every leaf of a JSON value with its path; a scalar or an empty object/array is a leaf."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from leaves(item, (*path, key))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from leaves(item, (*path, index))
    else:
        yield path, value


def count_leaves(value: Any) -> int:
    """How many leaves :func:`leaves` yields, without building paths."""
    if isinstance(value, dict) and value:
        return sum(count_leaves(v) for v in value.values())
    if isinstance(value, list) and value:
        return sum(count_leaves(v) for v in value if v is not _GAP)
    return 1


# ---------------------------------------------------------------------------------------------- masks


@lru_cache(maxsize=8192)
def field_stems(name: str) -> frozenset[str]:
    """A field name without a numeric suffix, in singular and plural readings: ``answers_10`` -> answers, answer."""
    base = _NUMERIC_SUFFIX.sub("", name) or name
    return _plural_stems(base)


def _plural_stems(name: str) -> frozenset[str]:
    stems = {name}
    if len(name) > 3 and name.endswith("ies"):
        stems.add(name[:-3] + "y")
    if len(name) > 2 and name.endswith("es"):
        stems.add(name[:-2])
    if len(name) > 1 and name.endswith("s"):
        stems.add(name[:-1])
    return frozenset(stems)


@dataclass(frozen=True)
class KeyMatcher:
    """Whether a field name is selected by mask keys (ignoring numeric suffix and plural) or regexes (fullmatch)."""

    exact: frozenset[str]
    stems: frozenset[str]
    patterns: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def build(cls, keys: list[str] | None, patterns: list[str] | None) -> KeyMatcher | None:
        if keys is None and patterns is None:
            return None
        keys = keys or []
        stems: set[str] = set()
        for key in keys:
            stems |= _plural_stems(key)
        return cls(frozenset(keys), frozenset(stems), tuple(re.compile(p) for p in patterns or []))

    def __call__(self, name: str) -> bool:
        if name in self.exact:
            return True
        if any(p.fullmatch(name) for p in self.patterns):
            return True
        return not self.stems.isdisjoint(field_stems(name))


def apply_masks(value: Any, keep: KeyMatcher | None, drop: KeyMatcher | None) -> Any:
    """Keep only fields selected by ``keep`` (with their whole subtree, and the path down to them), then drop
    fields selected by ``drop`` — at every depth, inside lists too."""
    if keep is None and drop is None:
        return value
    return _mask(value, keep, drop)[0]


def _mask(value: Any, keep: KeyMatcher | None, drop: KeyMatcher | None) -> tuple[Any, bool]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        found = False
        for key, item in value.items():
            if drop is not None and drop(key):
                continue
            if keep is None or keep(key):
                out[key] = _mask(item, None, drop)[0]
                found = True
            else:
                sub, sub_found = _mask(item, keep, drop)
                if sub_found:
                    out[key] = sub
                    found = True
        return out, found
    if isinstance(value, list):
        items = [_mask(item, keep, drop) for item in value]
        return [v for v, _ in items], any(f for _, f in items)
    return value, keep is None


# ---------------------------------------------------------------------------------------------- comparison


@dataclass(frozen=True, slots=True)
class FieldResult:
    """One expected leaf compared with the output's value at the same path."""

    path: Path
    expected: Any
    actual: Any  # MISSING when absent
    equal: bool
    blocked: str | None = None  # "$.address is a string" when a wrong-typed node hid the field

    @property
    def missing(self) -> bool:
        return self.actual is MISSING


def token_counts(gold: list[str], pred: list[str]) -> tuple[int, int, int]:
    """(common, predicted, gold) token counts, each token matched at most as often as it occurs in both."""
    if gold == pred:
        return len(gold), len(pred), len(gold)
    if not gold or not pred:
        return 0, len(pred), len(gold)
    counts: dict[str, int] = {}
    for token in gold:
        counts[token] = counts.get(token, 0) + 1
    common = 0
    for token in pred:
        if counts.get(token, 0) > 0:
            counts[token] -= 1
            common += 1
    return common, len(pred), len(gold)


def field_token_counts(fields: list[FieldResult], extra_leaves: list[Any]) -> list[tuple[int, int, int]]:
    """SQuAD-normalised token counts of every field (a missing value predicts nothing), then of every extra leaf
    (predicted tokens with no gold); all texts are normalised in one pass."""
    texts = [_leaf_text(f.expected) for f in fields]
    texts += ["" if f.missing else _leaf_text(f.actual) for f in fields]
    texts += [_leaf_text(leaf) for leaf in extra_leaves]
    tokens = [t.split() for t in squad_normalize_many(texts)]
    n = len(fields)
    counts = [token_counts(tokens[i], tokens[n + i]) for i in range(n)]
    counts += [(0, len(t), 0) for t in tokens[2 * n :]]
    return counts


def f1_from_counts(common: int, pred: int, gold: int) -> float:
    """F1 from token counts; both sides empty counts as a perfect match (SQuAD convention)."""
    if pred == 0 and gold == 0:
        return 1.0
    if common == 0:
        return 0.0
    precision, recall = common / pred, common / gold
    return 2 * precision * recall / (precision + recall)


def _field_f1(field: FieldResult, counts: tuple[int, int, int]) -> float:
    """A field's token F1: 1 when equal, 0 when missing or when unequal with no tokens to tell them apart."""
    if field.equal:
        return 1.0
    if field.missing or counts[1] == counts[2] == 0:
        return 0.0
    return f1_from_counts(*counts)


def _leaf_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, bool):
        return _LITERALS[value]
    if type(value) is int:
        return str(value)
    return json.dumps(value, ensure_ascii=False, default=repr)


_LITERALS = {None: "null", True: "true", False: "false"}


class Comparer:
    """Leaf equality (string normalisation, numeric tolerance), unordered-list alignment and extra detection."""

    def __init__(
        self, normalize: Normalizer, abs_tol: float = 0.0, rel_tol: float = 0.0, ignore_list_order: bool = False
    ) -> None:
        self.normalize = normalize
        self.abs_tol = abs_tol
        self.rel_tol = rel_tol
        self.ignore_list_order = ignore_list_order

    def leaf_equal(self, expected: Any, actual: Any) -> bool:
        """JSON-typed equality: booleans are not numbers, empty containers match any container of their type."""
        if actual is MISSING or actual is _GAP:
            return False
        if isinstance(expected, dict):
            return isinstance(actual, dict) and (not expected or expected == actual)
        if isinstance(expected, list):
            return isinstance(actual, list) and (not expected or expected == actual)
        if isinstance(expected, bool) or isinstance(actual, bool):
            return type(expected) is type(actual) and expected == actual
        if isinstance(expected, int | float):
            if not isinstance(actual, int | float):
                return False
            if math.isnan(expected) or math.isnan(actual):
                return math.isnan(expected) and math.isnan(actual)
            if self.abs_tol or self.rel_tol:
                return math.isclose(expected, actual, rel_tol=self.rel_tol, abs_tol=self.abs_tol)
            return bool(expected == actual)
        if isinstance(expected, str):
            return isinstance(actual, str) and (
                expected == actual or self.normalize(expected) == self.normalize(actual)
            )
        return bool(expected == actual)

    def fields(self, expected: Any, actual: Any) -> list[FieldResult]:
        """Every expected leaf against the output's value at the same path (one walk down both structures)."""
        results: list[FieldResult] = []
        self._walk(expected, actual, (), None, results)
        return results

    def _walk(self, exp: Any, act: Any, path: Path, blocked: str | None, out: list[FieldResult]) -> None:
        if isinstance(exp, dict) and exp:
            if act is not MISSING and not isinstance(act, dict):
                blocked, act = f"{json_path(path)} is {kind(act)}", MISSING
            for key, item in exp.items():
                self._walk(item, MISSING if act is MISSING else act.get(key, MISSING), (*path, key), blocked, out)
        elif isinstance(exp, list) and exp:
            if act is not MISSING and not isinstance(act, list):
                blocked, act = f"{json_path(path)} is {kind(act)}", MISSING
            n = 0 if act is MISSING else len(act)
            for index, item in enumerate(exp):
                sub = act[index] if index < n and act[index] is not _GAP else MISSING
                self._walk(item, sub, (*path, index), blocked, out)
        else:
            out.append(FieldResult(path, exp, act, self.leaf_equal(exp, act), blocked if act is MISSING else None))

    def similarity(self, expected: Any, actual: Any) -> float:
        """Share of the expected leaves equal in ``actual``."""
        found = self.fields(expected, actual)
        return sum(f.equal for f in found) / len(found)

    def extras(self, expected: Any, actual: Any, path: Path = ()) -> list[tuple[Path, Any]]:
        """The highest output nodes with no counterpart in the expected structure."""
        found: list[tuple[Path, Any]] = []
        if isinstance(expected, dict) and isinstance(actual, dict):
            for key, item in actual.items():
                if key in expected:
                    found.extend(self.extras(expected[key], item, (*path, key)))
                else:
                    found.append(((*path, key), item))
        elif isinstance(expected, list) and isinstance(actual, list):
            for index, item in enumerate(actual):
                if item is _GAP:
                    continue
                if index < len(expected):
                    found.extend(self.extras(expected[index], item, (*path, index)))
                else:
                    found.append(((*path, index), item))
        return found

    # -- unordered lists -------------------------------------------------------------------------------------

    def align(self, expected: Any, actual: Any) -> Any:
        """``actual`` with every list reordered to best match the expected list at the same place.

        Identical elements are paired first; the rest greedily by similarity (share of equal leaves, ties in
        order) when there are at most 10,000 such pairs, else in order. Unmatched expected positions take the
        remaining output elements in order, or a gap (reported missing); leftover output elements follow.
        """
        if isinstance(expected, dict) and isinstance(actual, dict):
            return {k: self.align(expected[k], v) if k in expected else v for k, v in actual.items()}
        if isinstance(expected, list) and isinstance(actual, list) and expected and actual:
            return self._align_list(expected, actual)
        return actual

    def _align_list(self, expected: list[Any], actual: list[Any]) -> list[Any]:
        pairs = self._pair(expected, actual)
        used = {j for j, _ in pairs.values()}
        leftovers = iter([j for j in range(len(actual)) if j not in used])
        out: list[Any] = []
        for i, exp in enumerate(expected):
            if i in pairs:
                out.append(pairs[i][1])
                continue
            j = next(leftovers, None)
            out.append(_GAP if j is None else self.align(exp, actual[j]))
        out.extend(actual[j] for j in leftovers)
        return out

    def _pair(self, expected: list[Any], actual: list[Any]) -> dict[int, tuple[int, Any]]:
        """Expected index -> (output index, aligned element): identical elements first, then the most similar."""
        scalars = not any(isinstance(v, dict | list) for v in (*expected, *actual))
        exact = not (self.abs_tol or self.rel_tol)
        pairs = self._pair_by_key(expected, actual, self._scalar_key if scalars else self._canonical_key)
        if scalars and exact:
            return pairs  # unequal scalars share nothing: any pairing of the rest is as good as another
        taken = {j for j, _ in pairs.values()}
        rest_e = [i for i in range(len(expected)) if i not in pairs]
        rest_a = [j for j in range(len(actual)) if j not in taken]
        if not rest_e or not rest_a or len(rest_e) * len(rest_a) > _PAIRWISE_LIMIT:
            return pairs
        candidates: list[tuple[float, int, int]] = []
        aligned: dict[tuple[int, int], Any] = {}
        for i in rest_e:
            for j in rest_a:
                candidate = self.align(expected[i], actual[j])
                score = self.similarity(expected[i], candidate)
                if score > 0:
                    candidates.append((-score, i, j))
                    aligned[i, j] = candidate
        candidates.sort()
        for _, i, j in candidates:
            if i not in pairs and j not in taken:
                pairs[i] = (j, aligned[i, j])
                taken.add(j)
        return pairs

    def _pair_by_key(
        self, expected: list[Any], actual: list[Any], key: Callable[[Any], Any]
    ) -> dict[int, tuple[int, Any]]:
        buckets: dict[Any, list[int]] = {}
        for j, act in enumerate(actual):
            buckets.setdefault(key(act), []).append(j)
        pairs: dict[int, tuple[int, Any]] = {}
        for i, exp in enumerate(expected):
            bucket = buckets.get(key(exp))
            if bucket:
                j = bucket.pop(0)
                pairs[i] = (j, actual[j])
        return pairs

    def _scalar_key(self, value: Any) -> Any:
        if isinstance(value, str):
            return ("s", self.normalize(value))
        if isinstance(value, bool):
            return ("b", value)
        if isinstance(value, float) and math.isnan(value):
            return ("nan",)
        if isinstance(value, int | float):
            return ("n", value)
        return ("o", repr(value))

    def _canonical_key(self, value: Any) -> str:
        def norm(v: Any) -> Any:
            if isinstance(v, dict):
                return {k: norm(x) for k, x in v.items()}
            if isinstance(v, list):
                return [norm(x) for x in v]
            return self.normalize(v) if isinstance(v, str) else v

        return json.dumps(norm(value), sort_keys=True, default=repr)
