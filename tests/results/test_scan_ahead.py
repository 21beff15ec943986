"""An offline run's results scanned as it scores equal, byte for byte, the results of reading its samples.jsonl
back: in this process and in forked workers, over many chunks, with values that do not read back as themselves
(dates, tuples) and run figures that stop at the first records of each task; and where the parts do not make
the whole run, the results read the file, leaving nothing behind."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from assay.models.predictions import PredictionsModel
from assay.results import runfigures, scanahead, write_results
from assay.results.scanahead import ScanAhead, plain, reads_back
from assay.runner.offline import OfflineScheduler
from assay.runner.session import RunSettings, execute
from assay.tasks import load_task
from tests.runner.offline_support import N, task_config, write_inputs

OPTIONS = {"bootstrap_iters": 200, "cluster_key": "when", "repeat_reduction": "mean"}


def judged_with_a_tuple(actual: Any, expected: Any) -> dict[str, Any]:
    """A custom evaluator whose details carry judge calls holding a tuple (read by the run figures)."""
    calls = [{"model": "judge-m", "usage": {"input_tokens": 3, "output_tokens": 1}, "latency_s": 0.5}]
    details: dict[str, Any] = {"judges": calls}
    if str(expected) in str(actual):
        details["pair"] = ("seen", 1)  # a tuple: the line reads back as a list
    return {"score": float(str(expected) in str(actual)), "details": details}


def config(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The offline mix, fork-safe (no async evaluator), with a date in some docs, a tuple in others, a metadata
    field and judge calls in details."""
    cfg = task_config(rows)
    cfg["evaluators"] = [e for e in cfg["evaluators"] if e.get("metric") != "slow"]
    cfg["evaluators"].append(
        {"name": "custom", "fn": "tests.results.test_scan_ahead:judged_with_a_tuple", "metric": "j"}
    )
    cfg["fields"]["metadata"] = {"when": "when"}
    return cfg


def rows_with_odd_values(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for i, row in enumerate(rows):
        row["when"] = datetime.date(2026, 1, 1 + i % 5) if i % 3 == 0 else f"day {i % 4}"
        if i % 10 == 7:
            row["tags"] = ("a", i)
    return rows


def without_clock(doc: dict[str, Any]) -> dict[str, Any]:
    doc["assay"].pop("results_seconds")
    return doc


def read_back(run_dir: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    """results.json and the sample logs as written, then as write_results writes them from samples.jsonl."""
    logs = {p.name: p.read_bytes() for p in run_dir.glob("samples_*.jsonl")}
    written = without_clock(json.loads((run_dir / "results.json").read_text()))
    again = without_clock(write_results(run_dir, **OPTIONS))
    assert {p.name: p.read_bytes() for p in run_dir.glob("samples_*.jsonl")} == logs
    return written, again


@pytest.mark.parametrize("processes", [1, 2])
async def test_results_scanned_as_the_run_scores_are_those_of_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, processes: int
) -> None:
    monkeypatch.setattr(OfflineScheduler, "chunk_size", 7)  # nine chunks, the last one short
    monkeypatch.setattr(runfigures, "OBSERVED_RECORDS", 10)  # the shared-field check stops inside the 2nd chunk
    used: list[bool] = []
    result = ScanAhead.result

    def spy(self: ScanAhead, manifest: Any) -> Any:
        found = result(self, manifest)
        used.append(found is not None)
        return found

    monkeypatch.setattr(ScanAhead, "result", spy)
    parsed: list[bytes] = []
    loads = scanahead.loads

    def counted(line: bytes, previous: Any) -> Any:
        parsed.append(line)
        return loads(line, previous)

    monkeypatch.setattr(scanahead, "loads", counted)
    rows, preds = write_inputs(tmp_path)
    task = load_task(config(rows_with_odd_values(rows)))
    settings = RunSettings(
        output_dir=tmp_path / "runs", progress=False, cache=False, max_error_rate=1.0, processes=processes, **OPTIONS
    )
    done = await execute([task], PredictionsModel(preds), settings)
    assert done.status == "finished" and done.written == N
    assert used == [True]  # the results came from the scan made while scoring
    if processes == 1:  # (the workers' counts stay in the workers)
        assert 0 < len(parsed) < N  # the records holding a date or a tuple were scanned as their lines read back
    written, again = read_back(done.run_dir)
    assert written == again
    assert written["assay"]["operational"]["roles"]["judge"]["judge-m"]["requests"] > 0
    assert written["assay"]["tasks"]["mix"]["n_model_errors"] > 0
    assert not [p.name for p in done.run_dir.iterdir() if p.name.startswith(".") and p.name != ".lock"]


async def test_a_chunk_not_scanned_ahead_sends_the_results_to_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(OfflineScheduler, "chunk_size", 7)
    encode_and_scan = ScanAhead.encode_and_scan
    calls: list[int] = []

    def third_missing(self: ScanAhead, records: Any, encode: Any, before: int) -> Any:
        calls.append(before)
        lines, part = encode_and_scan(self, records, encode, before)
        assert part is not None
        if len(calls) == 3:  # e.g. scored by an executor that does not scan: its spools must not stay behind
            part.delete()
            return lines, None
        return lines, part

    monkeypatch.setattr(ScanAhead, "encode_and_scan", third_missing)
    rows, preds = write_inputs(tmp_path)
    settings = RunSettings(
        output_dir=tmp_path / "runs", progress=False, cache=False, max_error_rate=1.0, processes=1, **OPTIONS
    )
    done = await execute([load_task(config(rows_with_odd_values(rows)))], PredictionsModel(preds), settings)
    assert calls == [7 * i for i in range(9)]  # each chunk told how many of its task came before it
    written, again = read_back(done.run_dir)
    assert written == again
    assert not [p.name for p in done.run_dir.iterdir() if p.name.startswith(".") and p.name != ".lock"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"a": "x", "b": [1, 2.5, None, True], "c": {"d": float("nan")}}, True),
        ([], True),
        ({}, True),
        ((1, 2), False),
        ({"a": (1, 2)}, False),
        ({1: "x"}, False),
        ({"a": datetime.date(2026, 1, 1)}, False),
        ([np.float64(1.0)], False),
        ({"a": [{"b": np.int64(1)}]}, False),
    ],
)
def test_plain_means_made_of_json_types_only(value: Any, expected: bool) -> None:
    assert plain(value) is expected


def record(**changes: Any) -> dict[str, Any]:
    details = {"f1": 1.0, "matched": "x"}
    rec = {
        "task": "t",
        "sample_id": "s1",
        "doc": {"q": "x", "n": 1},
        "target": "x",
        "metadata": {},
        "gen_kwargs": {},
        "responses": [{"text": "x", "metadata": {"source": "p.jsonl:1"}}],
        "filters": {"none": {"filtered": ["x"], "verdicts": {"m": [{"details": details}]}}},
    }
    rec.update(changes)
    return rec


def verdict_details(details: Any) -> dict[str, Any]:
    return {"none": {"filtered": ["x"], "verdicts": {"m": [{"details": details}]}}}


@pytest.mark.parametrize(
    ("rec", "expected"),
    [
        (record(), True),
        (record(doc={"q": "x", "nested": {"a": [1]}}), True),
        (record(doc={"q": datetime.date(2026, 1, 1)}), False),
        (record(target=("a", "b")), False),
        (record(metadata={"when": datetime.date(2026, 1, 1)}), False),
        (record(gen_kwargs={"stop": ("\n",)}), False),
        (record(filters={"none": {"filtered": [("a",)], "verdicts": {}}}), False),
        (record(filters=verdict_details({"judges": [{"usage": (1, 2)}]})), False),
        (record(filters=verdict_details({"stats": np.array([1, 2]).tolist(), "nrefs": np.int64(1)})), False),
        (record(filters=verdict_details({"unread": np.float64(0.5)})), True),  # the scan never reads it
        (record(responses=[{"text": "x", "metadata": {"raw": (1, 2)}}]), True),  # nor a response's metadata
    ],
)
def test_reads_back_checks_what_a_results_scan_reads(rec: dict[str, Any], expected: bool) -> None:
    assert reads_back(rec) is expected


async def test_results_that_fail_leave_no_spool_of_the_scan_made_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """error_policy 'fail' with errored verdicts: the results raise, and the sample logs spooled while scoring go."""
    from assay.results.writer import ErroredVerdictsError

    monkeypatch.setattr(OfflineScheduler, "chunk_size", 7)
    rows, preds = write_inputs(tmp_path)
    settings = RunSettings(
        output_dir=tmp_path / "runs", progress=False, cache=False, max_error_rate=1.0, error_policy="fail"
    )
    with pytest.raises(ErroredVerdictsError):
        await execute([load_task(config(rows_with_odd_values(rows)))], PredictionsModel(preds), settings)
    run_dir = next((tmp_path / "runs").iterdir())
    assert sorted(p.name for p in run_dir.iterdir()) == [".lock", "run.json", "samples.jsonl"]


async def test_a_sample_in_two_chunks_sends_the_results_to_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parts are used only when no sample appears twice among them (a resume would write one again)."""
    monkeypatch.setattr(OfflineScheduler, "chunk_size", 7)
    encode_and_scan, result = ScanAhead.encode_and_scan, ScanAhead.result
    first_keys: list[Any] = []
    used: list[bool] = []

    def third_repeats_a_sample(self: ScanAhead, records: Any, encode: Any, before: int) -> Any:
        lines, part = encode_and_scan(self, records, encode, before)
        assert part is not None
        first_keys.append(part.keys[0])
        if len(first_keys) == 3:
            part.keys[-1] = first_keys[0]  # its last sample's key is the first chunk's first one
        return lines, part

    def spy(self: ScanAhead, manifest: Any) -> Any:
        found = result(self, manifest)
        used.append(found is not None)
        return found

    monkeypatch.setattr(ScanAhead, "encode_and_scan", third_repeats_a_sample)
    monkeypatch.setattr(ScanAhead, "result", spy)
    rows, preds = write_inputs(tmp_path)
    settings = RunSettings(
        output_dir=tmp_path / "runs", progress=False, cache=False, max_error_rate=1.0, processes=1, **OPTIONS
    )
    done = await execute([load_task(config(rows_with_odd_values(rows)))], PredictionsModel(preds), settings)
    assert used == [False]
    written, again = read_back(done.run_dir)
    assert written == again
    assert not [p.name for p in done.run_dir.iterdir() if p.name.startswith(".") and p.name != ".lock"]


@pytest.mark.parametrize(
    ("keys", "expected"),
    [([], True), ([5], True), ([3, -1, 2**62], True), ([3, -1, 3], False), ([-(2**63), 2**63 - 1, -(2**63)], False)],
)
def test_all_distinct_finds_a_repeated_key(keys: list[int], expected: bool) -> None:
    from assay.results.accumulators import all_distinct

    assert all_distinct(np.asarray(keys, dtype=np.int64)) is expected
