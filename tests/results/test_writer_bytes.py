"""The fast results writer writes what the writer before it wrote, on varied run folders (see ``varied_runs``):
every ``samples_<task>.jsonl`` byte for byte, and ``results.json`` (but for ``results_seconds``) exactly except
that its figures agree to ``tests.figures``' tolerance, since their last digits depend on the numpy release."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.errors import DataError
from assay.results import write_results
from assay.results.writer import ErroredVerdictsError
from tests.figures import assert_same_figures
from tests.results import varied_runs

REFERENCE = Path(__file__).parent / "data" / "bytes"


@pytest.mark.parametrize("case", sorted(varied_runs.CASES))
def test_written_files_are_byte_identical_to_the_reference(tmp_path, case):
    if case == "corpus":
        pytest.importorskip("sacrebleu")
    run = varied_runs.build(case, tmp_path / case)
    write_results(run, **varied_runs.CASES[case])
    doc = json.loads((run / "results.json").read_text(encoding="utf-8"))
    assert doc["assay"].pop("results_seconds") >= 0
    json.dumps(doc, allow_nan=False)  # no NaN or infinity: results.json is strict JSON
    # figures to a stated tolerance (their last digits depend on the numpy release), the rest exactly
    assert_same_figures(doc, json.loads((REFERENCE / case / "results.json").read_text(encoding="utf-8")))
    written = sorted(p.name for p in run.glob("samples_*.jsonl"))
    assert written == sorted(p.name for p in (REFERENCE / case).glob("samples_*.jsonl"))
    for name in written:
        assert (run / name).read_bytes() == (REFERENCE / case / name).read_bytes(), name


def _nothing_written(run: Path) -> None:
    assert not (run / "results.json").exists()
    assert sorted(p.name for p in run.iterdir()) == ["run.json", "samples.jsonl"]  # no sample log, no spool left


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (b'"doc_id":', b'"doc_id":"x","was":', r"samples\.jsonl:5: invalid sample record at doc_id"),
        (b'"task":', b'"task":[', r"samples\.jsonl:5: invalid sample record at \(line\): Invalid JSON"),
        (b'"doc":{', b'"doc":"text","was":{', r"samples\.jsonl:5: invalid sample record at doc: Input should be"),
    ],
)
def test_a_malformed_line_names_file_and_line(tmp_path, old, new, message):
    run = varied_runs.build("varied", tmp_path / "run")
    lines = (run / "samples.jsonl").read_bytes().split(b"\n")
    lines[4] = lines[4].replace(old, new, 1)
    (run / "samples.jsonl").write_bytes(b"\n".join(lines))
    with pytest.raises(DataError, match=message):
        write_results(run, bootstrap_iters=0)
    _nothing_written(run)


def test_a_failed_write_leaves_no_sample_log_behind(tmp_path):
    run = varied_runs.build("in_order", tmp_path / "run")
    with pytest.raises(ErroredVerdictsError, match="error_policy is 'fail'"):
        write_results(run, bootstrap_iters=0, error_policy="fail")
    _nothing_written(run)
