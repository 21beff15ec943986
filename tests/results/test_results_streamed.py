"""The streamed results writer reproduces what the list-based writer of the first version wrote, exactly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.results import build_results, write_results
from assay.store.rundir import read_manifest
from assay.store.sampleindex import read_samples
from tests.results import streaming_cases

REFERENCE = Path(__file__).parent / "data" / "streaming"


def _same_on_reference_keys(new: Any, old: Any, where: str = "") -> None:
    """``new`` holds everything ``old`` holds, with equal values (new keys, e.g. error counts, may be added)."""
    if isinstance(old, dict):
        assert isinstance(new, dict), where
        missing = old.keys() - new.keys()
        assert not missing, f"{where}: keys lost: {sorted(missing)}"
        for key, value in old.items():
            if where == "/assay" and key == "warnings":
                assert set(value) <= set(new[key]), where  # warnings may only be added
                continue
            _same_on_reference_keys(new[key], value, f"{where}/{key}")
    else:
        assert new == old, f"{where}: {new!r} != {old!r}"


@pytest.mark.parametrize("case", sorted(streaming_cases.CASES))
def test_streamed_writer_matches_the_list_based_reference(tmp_path, case):
    run = streaming_cases.build(case, tmp_path / case)
    doc = write_results(run, **streaming_cases.CASES[case])
    written = json.loads((run / "results.json").read_text(encoding="utf-8"))
    assert written["assay"].pop("results_seconds") >= 0
    doc["assay"].pop("results_seconds")
    assert written == doc
    reference = json.loads((REFERENCE / case / "results.json").read_text(encoding="utf-8"))
    _same_on_reference_keys(written, reference)
    assert list(written["results"]) == list(reference["results"])
    for ref in sorted((REFERENCE / case).glob("samples_*.jsonl")):
        assert (run / ref.name).read_bytes() == ref.read_bytes(), ref.name  # byte for byte, lines in the same order
    assert sorted(p.name for p in run.glob("samples_*.jsonl")) == sorted(
        p.name for p in (REFERENCE / case).glob("samples_*.jsonl")
    )


@pytest.mark.parametrize("case", sorted(streaming_cases.CASES))
def test_in_memory_records_give_the_same_document(tmp_path, case):
    run = streaming_cases.build(case, tmp_path / case)
    records, torn = read_samples(run)
    doc = build_results(read_manifest(run), records, torn_lines=torn, **streaming_cases.CASES[case])
    streamed = write_results(run, **streaming_cases.CASES[case])
    streamed["assay"].pop("results_seconds")
    assert doc == streamed
