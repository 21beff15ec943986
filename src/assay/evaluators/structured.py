"""Structured-output evaluators: ``json_match`` (field-by-field comparison with masks) here, ``schema`` in
:mod:`assay.evaluators._schema`.

Both read the output the same way: a dict/list as is, or text (a string or a response's ``.text``) from which
:func:`assay.evaluators.jsonparse.extract_json` takes the JSON — the whole text, a ```json fence, or the first
JSON object/array in prose (option ``extract``). Output with no JSON in it is a *failure* (score 0, feedback
"Return valid JSON only …"), not an error: producing JSON was the model's job, and it did not.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import Field, field_validator

from assay.evaluators.base import Evaluator, Options
from assay.evaluators.jsoncompare import (
    Comparer,
    FieldResult,
    KeyMatcher,
    _field_f1,
    apply_masks,
    count_leaves,
    f1_from_counts,
    field_token_counts,
    leaves,
)
from assay.evaluators.jsonparse import (
    Extract,
    Path,
    Unparseable,
    json_path,
    read_expected,
    read_json_output,
    shape_text,
    show,
)
from assay.evaluators.normalize import NormalizeOptions, Normalizer
from assay.evaluators.registry import register
from assay.verdict import Verdict

_MAX_LISTED = 50  # differences shown with their values in a reason; the rest are named by path only
MAX_FEEDBACK = 10
EXTRACT_DESCRIPTION = (
    "where to find the JSON in a text output: 'strict' the whole text only, 'fenced' also a Markdown code fence, "
    "'anywhere' also the first JSON object or array inside prose"
)
__all__ = ["JsonMatch"]

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


LIST_INDEX = re.compile(r"\[\d+\]")


def _field_checks(fields: list[FieldResult], extras: list[tuple[Path, Any]]) -> list[str]:
    """What failed, per differing field, in a few words without values (list indices as ``[]``), distinct and at
    most ``MAX_FEEDBACK``: the keys of feedback themes, so one cause (a number written as a string) groups
    together whatever else differs in each output."""
    checks: list[str] = []
    for f in fields:
        if f.equal:
            continue
        path = LIST_INDEX.sub("[]", json_path(f.path))
        if f.missing:
            checks.append(f"missing field {path}")
            continue
        want, got = _json_type(f.expected), _json_type(f.actual)
        checks.append(f"{path} is a JSON {got}, not a {want}" if want != got else f"wrong value at {path}")
    checks += [f"unexpected field {LIST_INDEX.sub('[]', json_path(p))}" for p, _ in extras]
    return list(dict.fromkeys(checks))[:MAX_FEEDBACK] or ["fields differ"]


def not_json_verdict(problem: Unparseable, shape: str | None) -> Verdict:
    example = shape if shape is not None else "the requested JSON"
    return Verdict.fail(
        f"output is not valid JSON: {problem.message}",
        feedback=f"Return valid JSON only — no prose and no Markdown around it — shaped like {example}.",
        details={"json_error": problem.message, "check": "output is not valid JSON"},
    )


# ---------------------------------------------------------------------------------------------- json_match


class JsonMatchOptions(Options, NormalizeOptions):
    """Options of json_match: masks, list order, threshold, numeric tolerance, string normalisation, extraction."""

    in_mask: list[str] | None = Field(
        None,
        description="compare only the fields with these names, at any depth and with what is under them (a key also "
        "selects its plural and numbered forms: 'answer' selects 'answers' and 'answer_2'); null compares every field",
    )
    out_mask: list[str] | None = Field(
        None,
        description="leave out the fields with these names (same matching as in_mask), e.g. ids or timestamps that "
        "may differ",
    )
    in_mask_pattern: list[str] | None = Field(
        None, description="like in_mask, with regular expressions that must match a whole field name"
    )
    out_mask_pattern: list[str] | None = Field(
        None, description="like out_mask, with regular expressions that must match a whole field name"
    )
    ignore_list_order: bool = Field(
        False, description="pair each expected list element with its best match in the output list, in any order"
    )
    threshold: float = Field(
        1.0, ge=0.0, le=1.0, description="the share of expected fields that must be equal to pass (1: every field)"
    )
    abs_tol: float = Field(
        0.0, ge=0.0, description="numbers within this absolute difference are equal (math.isclose's abs_tol)"
    )
    rel_tol: float = Field(
        0.0,
        ge=0.0,
        description="numbers within this fraction of the larger one are equal (math.isclose's rel_tol; 0.01: 1 %)",
    )
    penalize_extra: bool = Field(
        False,
        description="count each field the output has beyond the expected ones as an unequal field (else extras "
        "are only reported)",
    )
    extract: Extract = Field("anywhere", description=EXTRACT_DESCRIPTION)

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
            return not_json_verdict(read, shape_text(exp))
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
        checks = _field_checks(fields, extras if penalised else [])
        details["check"], details["failed_checks"] = checks[0], checks
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
        feedback = "Fix the JSON: " + "; ".join(fixes[:MAX_FEEDBACK])
        if len(fixes) > MAX_FEEDBACK:
            feedback += f"; and {len(fixes) - MAX_FEEDBACK} more (see details['fields'])"
        return f"{head}: {listed}", feedback + "."
