"""Every evaluator and filter-step option in the reference says what it does: a blank row is a defect.

The options still undescribed are named below, each owned by another stream; a new undescribed option fails.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from assay.reference import Entry, OptionDoc, catalog

HERE = Path(__file__).resolve().parent

# (kind, name, option) allowed to lack a description: none today; a line here is a debt, deleted once described
OWNED_ELSEWHERE: set[tuple[str, str, str]] = set()


def undescribed(entries: Iterable[Entry]) -> set[tuple[str, str, str]]:
    """(kind, name, option) of every option whose description is empty or blank."""
    return {(e.kind, e.name, o.name) for e in entries for o in e.options if not o.description.strip()}


def all_entries() -> list[Entry]:
    """The reference entries of every evaluator and filter step (what the docs site is built from)."""
    evaluators = [catalog.evaluator_entry(name) for name in catalog.evaluator_names()]
    return evaluators + [catalog.filter_entry(name) for name in catalog.filter_names()]


def _shipped_undescribed() -> set[tuple[str, str, str]]:
    """:func:`undescribed` over :func:`all_entries`, read in a fresh process: evaluators and steps that other tests
    register in this one are not assay's and have no reference page."""
    code = (
        "import json; from test_option_descriptions import all_entries, undescribed; "
        "print(json.dumps(sorted(undescribed(all_entries()))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=HERE, check=True, capture_output=True, text=True, timeout=300
    ).stdout
    return {(kind, name, option) for kind, name, option in json.loads(out)}


def test_every_evaluator_and_filter_option_is_described():
    missing = sorted(_shipped_undescribed() - OWNED_ELSEWHERE)
    assert not missing, (
        "options without a description (their reference rows are blank): "
        + ", ".join(f"{kind} {name}: {option}" for kind, name, option in missing)
        + " — add Field(description=...) or a '- ``option``: ...' bullet in the Options docstring"
    )


def test_the_exceptions_are_still_undescribed():
    described = sorted(OWNED_ELSEWHERE - _shipped_undescribed())
    assert not described, f"now described (or gone), remove from OWNED_ELSEWHERE: {described}"


def test_a_blank_description_is_found():
    entry = Entry(
        "evaluator",
        "made_up",
        "A made-up evaluator.",
        options=[
            OptionDoc("said", "int", "1", "what it does"),
            OptionDoc("blank", "int", "1", "  "),
            OptionDoc("empty", "bool", "false", ""),
        ],
    )
    assert undescribed([entry]) == {("evaluator", "made_up", "blank"), ("evaluator", "made_up", "empty")}
