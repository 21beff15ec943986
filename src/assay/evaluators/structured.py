"""Structured-output evaluators: ``json_match`` (field-by-field comparison with masks) and ``schema``.

Both read the output the same way: a dict/list as is, or text (a string or a response's ``.text``) from which
:func:`assay.evaluators.jsonparse.extract_json` takes the JSON — the whole text, a ```json fence, or the first
JSON object/array in prose (option ``extract``). Output with no JSON in it is a *failure* (score 0, feedback
"Return valid JSON only …"), not an error: producing JSON was the model's job, and it did not.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, field_validator, model_validator

from assay.errors import ConfigError
from assay.evaluators.base import Evaluator, Options
from assay.evaluators.jsonparse import (
    Extract,
    Path,
    Unparseable,
    json_path,
    kind,
    read_expected,
    read_json_output,
    shape_text,
    show,
)
from assay.evaluators.normalize import NormalizeOptions, Normalizer, squad_normalize_many
from assay.evaluators.registry import register
from assay.verdict import Verdict

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError as SchemaViolation

_NUMERIC_SUFFIX = re.compile(r"[_-]?\d+$")
_PAIRWISE_LIMIT = 10_000  # unordered lists with more unmatched element pairs than this are paired in order
_MAX_LISTED = 50  # differences shown with their values in a reason; the rest are named by path only
_MAX_FEEDBACK = 10


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


_TYPE_FIX = {
    "number": "a JSON number without quotes",
    "boolean": "a JSON boolean (true/false) without quotes",
    "string": "a JSON string in double quotes",
    "null": "JSON null",
}


def _json_type(value: Any) -> str:
    """The JSON type name of a value: object, array, string, boolean, number or null."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "null" if value is None else type(value).__name__


def _as_json(value: Any, limit: int) -> str:
    """``value`` written as JSON (strings in double quotes), shortened."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _not_json_verdict(problem: Unparseable, shape: str | None) -> Verdict:
    example = shape if shape is not None else "the requested JSON"
    return Verdict.fail(
        f"output is not valid JSON: {problem.message}",
        feedback=f"Return valid JSON only — no prose and no Markdown around it — shaped like {example}.",
        details={"json_error": problem.message},
    )


# ---------------------------------------------------------------------------------------------- json_match


class JsonMatchOptions(Options, NormalizeOptions):
    """Options of json_match: masks, list order, threshold, numeric tolerance, string normalisation, extraction."""

    in_mask: list[str] | None = None
    out_mask: list[str] | None = None
    in_mask_pattern: list[str] | None = None
    out_mask_pattern: list[str] | None = None
    ignore_list_order: bool = False
    threshold: float = Field(1.0, ge=0.0, le=1.0)
    abs_tol: float = Field(0.0, ge=0.0)
    rel_tol: float = Field(0.0, ge=0.0)
    penalize_extra: bool = False
    extract: Extract = "anywhere"

    @field_validator("in_mask_pattern", "out_mask_pattern", mode="before")
    @classmethod
    def _valid_patterns(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list):
            for pattern in value:
                if not isinstance(pattern, str):
                    raise ValueError(f"patterns must be strings, got {pattern!r}")
                try:
                    re.compile(pattern)
                except re.error as err:
                    raise ValueError(f"invalid regular expression {pattern!r}: {err}") from None
        return value

    @field_validator("in_mask", "in_mask_pattern")
    @classmethod
    def _not_empty(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and not value:
            raise ValueError("an empty in-mask keeps no field; omit it to compare every field")
        return value


@register("json_match")
class JsonMatch(Evaluator):
    """Compares output JSON with the expected structure leaf by leaf; score = share of expected fields equal.

    Masks (``in_mask``/``out_mask`` keys, ``*_pattern`` regexes matched with ``re.fullmatch``) apply to both
    sides at every depth; a key matches field names (case-sensitively) that differ by a numeric suffix or a
    plural ``s``/``es``/``ies`` (``answer`` selects ``answers``, ``answer_2``, ``answers_10``). Leaves compare
    with JSON types (``true`` is not ``1``; ``1`` equals ``1.0``), numbers within ``abs_tol``/``rel_tol``,
    strings after the text normalisation options. An empty expected object or array equals any object/array;
    what the output has beyond the expected is *extra*, reported in details and counted as unequal fields
    only with ``penalize_extra``. With ``ignore_list_order`` paths name positions in the expected list
    (leftover output elements follow it). Passes when the score reaches ``threshold``; details carry every
    field's result and SQuAD token F1, averaged per field (``f1_macro``) and over all tokens (``f1_micro``).
    """

    Options = JsonMatchOptions
    options: JsonMatchOptions

    def setup(self) -> None:
        opts = self.options
        self.keep = KeyMatcher.build(opts.in_mask, opts.in_mask_pattern)
        self.drop = KeyMatcher.build(opts.out_mask, opts.out_mask_pattern)
        self.comparer = Comparer(Normalizer.from_options(opts), opts.abs_tol, opts.rel_tol, opts.ignore_list_order)

    def check(self, actual: Any, expected: Any) -> Verdict:
        exp = apply_masks(read_expected(expected, self.name), self.keep, self.drop)
        prefer = type(exp) if isinstance(exp, dict | list) else None
        read = read_json_output(actual, self.name, self.options.extract, prefer)
        if isinstance(read, Unparseable):
            return _not_json_verdict(read, shape_text(exp))
        value, source = read
        return self.compare(apply_masks(value, self.keep, self.drop), exp, source)

    def compare(self, actual: Any, expected: Any, source: str = "parsed") -> Verdict:
        """Judge masked JSON values (the core of :meth:`check`)."""
        cmp = self.comparer
        if self.options.ignore_list_order:
            actual = cmp.align(expected, actual)
        fields = cmp.fields(expected, actual)
        extras = cmp.extras(expected, actual)
        n_extra = sum(count_leaves(v) for _, v in extras)
        n_equal = sum(f.equal for f in fields)
        penalised = n_extra if self.options.penalize_extra else 0
        score = n_equal / (len(fields) + penalised)
        details = self._details(fields, extras, n_extra, source)
        if n_equal == len(fields) and not penalised:
            return Verdict.partial(score, None, self.options.threshold, details=details)
        reason, feedback = self._explain(fields, extras if penalised else [], n_extra)
        return Verdict.partial(score, reason, self.options.threshold, feedback=feedback, details=details)

    def _details(
        self, fields: list[FieldResult], extras: list[tuple[Path, Any]], n_extra: int, source: str
    ) -> dict[str, Any]:
        extra_leaves = [leaf for _, v in extras for _, leaf in leaves(v)] if self.options.penalize_extra else []
        counts = field_token_counts(fields, extra_leaves)
        for i, f in enumerate(fields):  # token F1 agrees with equality: an equal field is all right, an unequal
            gold = counts[i][2]  # one with no tokens on either side ({} vs []) all wrong
            if f.equal:
                counts[i] = (gold, gold, gold)
        f1s = [_field_f1(fields[i], c) if i < len(fields) else f1_from_counts(*c) for i, c in enumerate(counts)]
        totals = [sum(c[k] for c in counts) for k in range(3)]
        per_field: dict[str, dict[str, Any]] = {}
        for f, f1 in zip(fields, f1s, strict=False):
            entry: dict[str, Any] = {"equal": f.equal, "expected": f.expected, "f1": round(f1, 6)}
            if f.missing:
                entry["missing"] = True
                if f.blocked:
                    entry["blocked"] = f.blocked
            else:
                entry["actual"] = f.actual
            per_field[json_path(f.path)] = entry
        return {
            "fields": per_field,
            "extra": {json_path(p): v for p, v in extras},
            "n_fields": len(fields),
            "n_equal": sum(f.equal for f in fields),
            "n_extra": n_extra,
            "f1_micro": round(f1_from_counts(*totals) if totals[1] or totals[2] else float(all(f1s)), 6),
            "f1_macro": round(sum(f1s) / len(f1s), 6) if f1s else 1.0,
            "json_source": source,
        }

    def _explain(self, fields: list[FieldResult], extras: list[tuple[Path, Any]], n_extra: int) -> tuple[str, str]:
        """The reason naming every differing path, and feedback saying what to change."""
        diffs: list[tuple[str, str]] = []  # (path, description)
        fixes: list[str] = []
        for f in fields:
            if f.equal:
                continue
            path = json_path(f.path)
            if f.missing:
                diffs.append((path, "missing" + (f" ({f.blocked})" if f.blocked else "")))
                fixes.append(f"add {path} = {show(f.expected, 60)}")
            elif _json_type(f.expected) != _json_type(f.actual):
                want, got = _json_type(f.expected), _json_type(f.actual)
                diffs.append((path, f"expected {want} {show(f.expected)}, got {got} {show(f.actual)}"))
                should = f"{_as_json(f.expected, 60)}, {_TYPE_FIX.get(want, want)}"
                fixes.append(f"set {path} to {should} (not {got} {_as_json(f.actual, 40)})")
            else:
                diffs.append((path, f"expected {show(f.expected)}, got {show(f.actual)}"))
                fixes.append(f"set {path} to {show(f.expected, 60)} (not {show(f.actual, 40)})")
        for p, value in extras:
            path = json_path(p)
            diffs.append((path, f"unexpected {'element' if isinstance(p[-1], int) else 'field'} {show(value, 40)}"))
            fixes.append(f"remove {path}")
        n_unequal = sum(not f.equal for f in fields)
        unexpected = f"{n_extra} unexpected field{'s' if n_extra != 1 else ''}"
        if n_unequal:
            head = f"{n_unequal} of {len(fields)} field{'s' if len(fields) != 1 else ''} differ"
            head += "s" if n_unequal == 1 else ""
            head += f" and {unexpected}" if extras else ""
        else:
            head = f"all {len(fields)} expected fields equal but {unexpected} (penalize_extra)"
        listed = "; ".join(f"{p}: {d}" for p, d in diffs[:_MAX_LISTED])
        if len(diffs) > _MAX_LISTED:
            listed += "; also differing: " + ", ".join(p for p, _ in diffs[_MAX_LISTED:])
        feedback = "Fix the JSON: " + "; ".join(fixes[:_MAX_FEEDBACK])
        if len(fixes) > _MAX_FEEDBACK:
            feedback += f"; and {len(fixes) - _MAX_FEEDBACK} more (see details['fields'])"
        return f"{head}: {listed}", feedback + "."


# ---------------------------------------------------------------------------------------------- schema


class SchemaOptions(Options):
    """Options of schema: exactly one of ``json_schema`` (a JSON Schema dict) or ``model`` (a Pydantic class)."""

    json_schema: dict[str, Any] | bool | None = None
    model: str | type[BaseModel] | None = None
    check_formats: bool = False
    extract: Extract = "anywhere"

    @field_validator("json_schema", mode="before")
    @classmethod
    def _schema_type(cls, value: Any) -> Any:
        if value is None or isinstance(value, dict | bool):
            return value
        raise ValueError("must be a JSON Schema: an object (dict) or a boolean")

    @field_validator("model", mode="before")
    @classmethod
    def _model_type(cls, value: Any) -> Any:
        if value is None or (isinstance(value, str) and value.strip()):
            return value
        if isinstance(value, type) and issubclass(value, BaseModel):
            return value
        raise ValueError("must be a Pydantic model class or its dotted path 'package.module:Model'")

    @model_validator(mode="after")
    def _exactly_one(self) -> SchemaOptions:
        if (self.json_schema is None) == (self.model is None):
            raise ValueError("set exactly one of 'json_schema' (a JSON Schema) and 'model' (a Pydantic model class)")
        if self.check_formats and self.model is not None:
            raise ValueError(
                "'check_formats' applies to 'json_schema' only; Pydantic models validate their own formats"
            )
        return self


@dataclass(frozen=True, slots=True)
class Violation:
    """One way the output breaks the schema: where, what, and what to do about it."""

    path: str
    message: str
    fix: str
    keyword: str


@register("schema")
class Schema(Evaluator):
    """Validates the output's JSON against a JSON Schema (draft 2020-12) or a Pydantic model; score 1 or 0.

    The score stays 1/0 (valid or not) because a share of satisfied constraints has no stable meaning across
    schemas; the reason lists every violation with its JSON path and the feedback what to fix.
    """

    Options = SchemaOptions
    options: SchemaOptions

    def setup(self) -> None:
        opts = self.options
        self.model_class: type[BaseModel] | None = None
        self.validator: Draft202012Validator | None = None
        if opts.model is not None:
            self.model_class = self._resolve_model(opts.model)
            return
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        schema = opts.json_schema
        assert schema is not None  # the options validator requires exactly one of json_schema and model
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as err:
            where = json_path(tuple(err.absolute_path))
            raise ConfigError(f"schema: option 'json_schema': invalid JSON Schema at {where}: {err.message}") from None
        checker = Draft202012Validator.FORMAT_CHECKER if opts.check_formats else None
        self.validator = Draft202012Validator(schema, format_checker=checker)

    @staticmethod
    def _resolve_model(model: str | type[BaseModel]) -> type[BaseModel]:
        if not isinstance(model, str):
            return model
        from assay.importing import import_object

        try:
            obj = import_object(model)
        except ValueError as err:
            raise ConfigError(f"schema: option 'model': {err}") from None
        if not (isinstance(obj, type) and issubclass(obj, BaseModel)):
            raise ConfigError(f"schema: option 'model': {model!r} is {kind(obj)}, not a Pydantic model class")
        return obj

    def check(self, actual: Any, expected: Any) -> Verdict:
        read = read_json_output(actual, self.name, self.options.extract, None)
        if isinstance(read, Unparseable):
            return _not_json_verdict(read, None)
        value, source = read
        violations = self.violations(value)
        details: dict[str, Any] = {"json_source": source}
        if not violations:
            return Verdict.pass_(details=details)
        details["violations"] = [{"path": v.path, "message": v.message, "keyword": v.keyword} for v in violations]
        n = len(violations)
        reason = f"{n} schema violation{'s' if n != 1 else ''}: " + "; ".join(
            f"{v.path}: {v.message}" for v in violations
        )
        fixes = [v.fix for v in violations[:_MAX_FEEDBACK]]
        feedback = "Return JSON that satisfies the schema: " + "; ".join(fixes)
        if n > _MAX_FEEDBACK:
            feedback += f"; and {n - _MAX_FEEDBACK} more (see details['violations'])"
        return Verdict.fail(reason, feedback=feedback + ".", details=details)

    def violations(self, value: Any) -> list[Violation]:
        """Every violation of the schema by ``value``, ordered by path."""
        if self.model_class is not None:
            return _pydantic_violations(self.model_class, value)
        assert self.validator is not None
        found = [_jsonschema_violation(err) for err in self.validator.iter_errors(value)]
        return sorted(found, key=lambda v: v.path)

    def to_config(self) -> dict[str, Any]:
        """The config, with a model class as its dotted path; ConfigError if the class is not importable."""
        config: dict[str, Any] = {"name": self.name}
        if self.options.json_schema is not None:
            config["json_schema"] = self.options.json_schema
        model = self.options.model
        if model is not None:
            if not isinstance(model, str):
                from assay.importing import dotted_path

                try:
                    model = dotted_path(model)
                except ValueError as err:
                    raise ConfigError(f"schema: option 'model' cannot be saved in a config: {err}") from None
            config["model"] = model
        if self.options.check_formats:
            config["check_formats"] = True
        if self.options.extract != "anywhere":
            config["extract"] = self.options.extract
        return config

    def __repr__(self) -> str:
        target = self.model_class.__qualname__ if self.model_class else show(self.options.json_schema, 60)
        return f"Schema({'model' if self.model_class else 'json_schema'}={target})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Schema)
            and self.model_class is other.model_class
            and self.options.json_schema == other.options.json_schema
            and self.options.check_formats == other.options.check_formats
            and self.options.extract == other.options.extract
        )

    def __hash__(self) -> int:
        return hash((self.name, self.model_class))


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _jsonschema_violation(err: SchemaViolation) -> Violation:
    path = json_path(tuple(err.absolute_path))
    keyword = str(err.validator)
    value: Any = err.validator_value
    message = _clip(err.message)
    fix = f"fix {path}: {message}"
    if keyword == "required" and isinstance(err.instance, dict):
        missing = [k for k in value if k not in err.instance]
        fix = f"add the required propert{'ies' if len(missing) != 1 else 'y'} {', '.join(map(repr, missing))} at {path}"
    elif keyword == "type":
        fix = f"make {path} of type {' or '.join(value) if isinstance(value, list) else value}"
    elif keyword == "enum":
        fix = f"set {path} to one of {show(value, 120)}"
    elif keyword == "const":
        fix = f"set {path} to {show(value)}"
    elif keyword in _BOUNDS:
        fix = f"make {path} {_BOUNDS[keyword]} {value}"
    elif keyword == "pattern":
        fix = f"make {path} match the regular expression {value!r}"
    elif keyword == "format":
        fix = f"make {path} a valid {value}"
    elif keyword in ("additionalProperties", "unevaluatedProperties"):
        fix = f"remove the properties not allowed at {path} ({message})"
    return Violation(path, message, fix, keyword)


_BOUNDS = {
    "minimum": "at least",
    "maximum": "at most",
    "exclusiveMinimum": "greater than",
    "exclusiveMaximum": "less than",
    "minLength": "a string of at least this many characters:",
    "maxLength": "a string of at most this many characters:",
    "minItems": "an array with at least this many items:",
    "maxItems": "an array with at most this many items:",
    "minProperties": "an object with at least this many properties:",
    "maxProperties": "an object with at most this many properties:",
}


def _pydantic_violations(model: type[BaseModel], value: Any) -> list[Violation]:
    from pydantic import ValidationError

    try:
        model.model_validate(value)
    except ValidationError as err:
        found = []
        for e in err.errors(include_url=False):
            path = json_path(tuple(p for p in e["loc"] if isinstance(p, str | int)))
            message = _clip(e["msg"])
            if e["type"] == "missing":
                fix = f"add the required field {path}"
            elif e["type"] == "extra_forbidden":
                fix = f"remove the field {path}"
            else:
                fix = f"fix {path}: {message}"
            found.append(Violation(path, message, fix, e["type"]))
        return found
    return []
