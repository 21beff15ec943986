"""Every assertion type promptfoo 0.123.1 knows is judged here, judged by the model-graded family, or refused with
a reason: none slips through. The list is promptfoo's own (its config schema's assertion ``type`` enum)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.tasks.checks.catalog import (
    DETERMINISTIC,
    PROMPTFOO_TYPES,
    REFUSED,
    SPECIAL_TYPES,
    graded_types,
    known_type,
    refusal,
)
from assay.tasks.checks.handlers import HANDLERS
from assay.tasks.rowchecks import RowChecks

SCHEMA = Path(__file__).parents[1] / "importers" / "promptfoo" / "config-schema-0.123.1.json"


def _enums(node: Any) -> list[list[str]]:
    """Every string enum of the schema that lists assertion types (it has 'levenshtein' in it)."""
    found: list[list[str]] = []
    if isinstance(node, dict):
        enum = node.get("enum")
        if isinstance(enum, list) and ("levenshtein" in enum or "select-best" in enum):
            found.append(enum)
        for value in node.values():
            found += _enums(value)
    elif isinstance(node, list):
        for value in node:
            found += _enums(value)
    return found


def test_the_catalog_is_promptfoos_list_of_types() -> None:
    enums = _enums(json.loads(SCHEMA.read_text(encoding="utf-8")))
    base = {tuple(e) for e in enums if "levenshtein" in e}
    special = {tuple(e) for e in enums if "select-best" in e}
    assert base == {PROMPTFOO_TYPES}  # promptfoo's BaseAssertionTypesSchema, in its order
    assert special == {SPECIAL_TYPES}


@pytest.mark.parametrize("kind", [*PROMPTFOO_TYPES, *SPECIAL_TYPES])
def test_every_type_is_judged_or_refused_by_name(kind: str) -> None:
    judged = kind in DETERMINISTIC or kind in graded_types()
    assert judged != (kind in REFUSED) or kind == "select-best", kind  # one of them (select-best: graded, if there)
    if kind in DETERMINISTIC:
        assert kind in HANDLERS
    if judged:
        assert known_type(kind) and known_type(f"not-{kind}") and refusal(kind) is None
    else:
        why = refusal(kind)
        assert why is not None and why.startswith(f"promptfoo's {kind!r} assertion ") and len(why) > 40
        assert not known_type(kind)


def test_handlers_are_only_for_deterministic_types() -> None:
    assert set(HANDLERS) == DETERMINISTIC


def test_a_refused_type_errors_the_row_naming_it_and_why() -> None:
    evaluator = RowChecks()
    verdict = evaluator.evaluate("hi", [{"type": "contains", "value": "h"}, {"type": "not-webhook", "value": "x"}])
    assert verdict.is_error
    assert "assertion 1 (not-webhook)" in str(verdict.error) and "HTTP endpoint" in str(verdict.error)
    verdict = evaluator.evaluate("hi", [{"type": "no-such-type"}])
    assert "'no-such-type' is not an assertion type of promptfoo 0.123.1" in str(verdict.error)
