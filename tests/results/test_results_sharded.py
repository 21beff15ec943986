"""A samples file scanned in ranges by forked processes gives results and sample logs byte-identical to one
serial scan, and falls back to that scan whenever a range cannot be merged exactly (issue 12)."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.errors import DataError
from assay.results import shardscan, write_results
from assay.results.writer import ErroredVerdictsError
from tests.figures import assert_same_figures
from tests.results import varied_runs

pytestmark = pytest.mark.skipif(not shardscan.fork_available(), reason="forked scans need Linux")
_OTHER_THREADS = shardscan.other_threads


@pytest.fixture
def sharded(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Shard even tiny files; the list records, per write, whether the sharded scan was merged (True) or fell
    back to the serial scan (False)."""
    monkeypatch.setattr(shardscan, "MIN_BYTES_PER_PROCESS", 1)
    # threads other tests leave behind (servers, pools) would keep every scan serial; the guard has its own test
    monkeypatch.setattr(shardscan, "other_threads", lambda: False)
    outcomes: list[bool] = []
    scan = shardscan.scan_sharded

    def spy(*args: Any, **kwargs: Any) -> Any:
        result = scan(*args, **kwargs)
        outcomes.append(result is not None)
        return result

    monkeypatch.setattr(shardscan, "scan_sharded", spy)
    return outcomes


def _written(run: Path) -> dict[str, bytes]:
    """results.json without its timing, and every sample log, by name."""
    doc = json.loads((run / "results.json").read_text(encoding="utf-8"))
    doc["assay"].pop("results_seconds")
    out = {"results.json": json.dumps(doc, indent=2, ensure_ascii=False).encode()}
    out.update({p.name: p.read_bytes() for p in sorted(run.glob("samples_*.jsonl"))})
    return out


def _serial_and_sharded(
    tmp_path: Path, run: Path, processes: int, outcomes: list[bool], **options: Any
) -> tuple[dict[str, bytes], dict[str, bytes]]:
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    shutil.copytree(run, serial)
    shutil.copytree(run, parallel)
    write_results(serial, processes=1, **options)
    outcomes.clear()  # only the sharded write's outcome is of interest
    write_results(parallel, processes=processes, **options)
    assert not [p.name for p in parallel.iterdir() if p.name.startswith(".") and p.name != ".lock"]  # no spool left
    return _written(serial), _written(parallel)


@pytest.mark.parametrize("case", sorted(varied_runs.CASES))
def test_every_reference_case_is_written_byte_identically_with_three_processes(tmp_path, sharded, case):
    if case == "corpus":
        pytest.importorskip("sacrebleu")
    run = varied_runs.build(case, tmp_path / case)
    serial, written = _serial_and_sharded(tmp_path, run, 3, sharded, **varied_runs.CASES[case])
    assert written == serial  # byte for byte: three processes write what one serial scan writes here
    expected_dir = Path(__file__).parent / "data" / "bytes"  # what the serial writer wrote (test_writer_bytes)
    doc = json.loads(written.pop("results.json"))
    json.dumps(doc, allow_nan=False)  # no NaN or infinity: results.json is strict JSON
    # against the fixture: figures to a stated tolerance (their last digits depend on the numpy release)
    assert_same_figures(doc, json.loads((expected_dir / case / "results.json").read_text(encoding="utf-8")))
    assert written == {p.name: p.read_bytes() for p in sorted((expected_dir / case).glob("samples_*.jsonl"))}
    # cases that hold a sample written twice or a metric run.json does not declare fall back to the serial scan
    fallback = case.startswith("varied") or case == "streaming_mixed"
    assert sharded == [not fallback]


def _mergeable_varied(path: Path) -> Path:
    """The varied run (repeats, filters, model and evaluator errors, pairwise judges, an unknown task, non-ASCII,
    a torn last line, samples without a cluster) without what forces a serial scan: the undeclared metric and the
    samples written twice."""
    run = varied_runs.build("varied", path)
    lines = (run / "samples.jsonl").read_bytes().split(b"\n")
    torn = lines.pop()
    keep, seen = [], set()
    for line in lines:
        rec = json.loads(line)
        key = (rec["task"], rec["sample_id"])
        if key in seen:
            continue
        seen.add(key)
        for fr in rec["filters"].values():
            fr["verdicts"].pop("extra", None)
        if len(keep) % 4 == 1:  # no passage in its metadata: the doc's, else a cluster of its own
            rec["metadata"].pop("passage", None)
        keep.append(json.dumps(rec, ensure_ascii=False).encode())
    (run / "samples.jsonl").write_bytes(b"\n".join([*keep, torn]))
    return run


@pytest.mark.parametrize("processes", [2, 3, 5])
@pytest.mark.parametrize(
    "options",
    [
        {"bootstrap_iters": 200},
        {"bootstrap_iters": 100, "error_policy": "as_zero", "repeat_reduction": "max"},
        {"bootstrap_iters": 100, "cluster_key": "passage", "group_weighting": "equal"},
    ],
)
def test_a_merged_scan_equals_the_serial_scan(tmp_path, sharded, processes, options):
    run = _mergeable_varied(tmp_path / "run")
    serial, parallel = _serial_and_sharded(tmp_path, run, processes, sharded, **options)
    assert sharded == [True]  # the sharded scan was merged, not replaced by the serial one
    assert parallel == serial
    doc = json.loads(parallel["results.json"])
    assert doc["assay"]["torn_lines"] == 1
    assert doc["assay"]["operational"]["roles"]["judge"]  # judge calls summed across ranges
    assert doc["assay"]["judging"]["position_bias"]
    assert any("ghost" in w for w in doc["assay"]["warnings"])  # the unknown task's records counted


def test_a_range_that_capped_its_error_counts_leaves_the_serial_scan_to_count(tmp_path, sharded, monkeypatch):
    from assay.results import accumulators, aggregate

    for module in (aggregate, accumulators):
        monkeypatch.setattr(module, "MAX_DISTINCT_ERRORS", 2)  # the run has five distinct error messages
    run = _mergeable_varied(tmp_path / "run")
    serial, parallel = _serial_and_sharded(tmp_path, run, 4, sharded, bootstrap_iters=50)
    assert sharded == [False]
    assert parallel == serial
    assert "(other errors)" in parallel["results.json"].decode()


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.integers(0, 30), st.sampled_from([None, "a", "b", "c", "d", "e"]), st.sampled_from([0.0, 1.0])),
        max_size=60,
    ),
    cut=st.integers(0, 60),
    cap=st.integers(1, 4),
)
def test_merged_columns_equal_one_scan_of_all_rows(rows, cut, cap):
    """Error counts under a cap of distinct messages, the first errors by doc_id, values: exactly one scan's."""
    from assay.results import accumulators, aggregate

    saved = aggregate.MAX_DISTINCT_ERRORS, accumulators.MAX_DISTINCT_ERRORS
    aggregate.MAX_DISTINCT_ERRORS = accumulators.MAX_DISTINCT_ERRORS = cap
    try:

        def fed(part: list[tuple[int, str | None, float]], start: int) -> accumulators.MetricAcc:
            acc = accumulators.MetricAcc()
            for seq, (doc_id, error, value) in enumerate(part, start):
                rv = (value, value, 1, int(value), int(error is not None), 0, error, [error] if error else [])
                acc.add(seq - start, doc_id, rv)
            return acc

        whole, first = fed(rows, 0), fed(rows[:cut], 0)
        merged = first.merge(fed(rows[cut:], len(rows[:cut])), len(rows[:cut]))
    finally:
        aggregate.MAX_DISTINCT_ERRORS, accumulators.MAX_DISTINCT_ERRORS = saved
    later_capped = len({e for _, e, _ in rows[cut:] if e}) > cap
    assert merged == (not later_capped)
    if merged:
        assert first.counts == whole.counts and list(first.counts) == list(whole.counts)  # order: first seen
        assert sorted(first.examples) == sorted(whole.examples)
        order, doc_ids = np.arange(len(rows)), np.array([d for d, _, _ in rows], dtype=np.int64)
        ours, one_scan = first.finish(order, doc_ids), whole.finish(order, doc_ids)
        for column in ("values", "passed_frac", "n_attempts", "n_passed"):
            assert getattr(ours, column).tolist() == getattr(one_scan, column).tolist()
        assert first.n_err == whole.n_err


def test_a_malformed_line_is_reported_with_its_line_in_the_whole_file(tmp_path, sharded):
    run = _mergeable_varied(tmp_path / "run")
    lines = (run / "samples.jsonl").read_bytes().split(b"\n")
    lines[90] = lines[90].replace(b'"doc_id":', b'"doc_id":"x","was":', 1)  # in the last ranges
    (run / "samples.jsonl").write_bytes(b"\n".join(lines))
    with pytest.raises(DataError, match=r"samples\.jsonl:91: invalid sample record at doc_id"):
        write_results(run, processes=3, bootstrap_iters=0)
    assert sorted(p.name for p in run.iterdir()) == ["run.json", "samples.jsonl"]  # no sample log, no spool left


def test_a_failed_write_leaves_no_spool_of_any_process(tmp_path, sharded):
    run = varied_runs.build("in_order", tmp_path / "run")
    with pytest.raises(ErroredVerdictsError, match="error_policy is 'fail'"):
        write_results(run, processes=3, bootstrap_iters=0, error_policy="fail")
    assert sharded == [True]
    assert sorted(p.name for p in run.iterdir()) == ["run.json", "samples.jsonl"]


def test_a_worker_that_dies_leaves_the_serial_scan_to_finish(tmp_path, sharded, monkeypatch):
    scan_range = shardscan._scan_range

    def dies_on_a_later_range(root: Path, manifest: Any, start: int, *rest: Any) -> Any:
        if start > 0:
            os._exit(1)  # killed (out of memory, say) mid-scan
        return scan_range(root, manifest, start, *rest)

    monkeypatch.setattr(shardscan, "_scan_range", dies_on_a_later_range)
    run = _mergeable_varied(tmp_path / "run")
    serial, parallel = _serial_and_sharded(tmp_path, run, 3, sharded, bootstrap_iters=50)
    assert sharded == [False]
    assert parallel == serial


def test_ctrl_c_while_ranges_are_scanned_leaves_no_spool_of_any_process(tmp_path, sharded, monkeypatch):
    from concurrent.futures import ProcessPoolExecutor

    class InterruptedPool(ProcessPoolExecutor):
        """Ctrl-C arrives while this process waits for the second range (once it is scanned)."""

        def submit(self, *args: Any, **kwargs: Any) -> Any:
            job = super().submit(*args, **kwargs)
            self.jobs = [*getattr(self, "jobs", []), job]
            if len(self.jobs) == 2:
                wait, asked = job.result, []

                def result(timeout: float | None = None) -> Any:
                    value = wait(timeout)
                    if not asked:
                        asked.append(True)
                        raise KeyboardInterrupt
                    return value

                job.result = result  # type: ignore[method-assign]
            return job

    monkeypatch.setattr(shardscan, "ProcessPoolExecutor", InterruptedPool)
    run = _mergeable_varied(tmp_path / "run")
    with pytest.raises(KeyboardInterrupt):
        write_results(run, processes=3, bootstrap_iters=0)
    assert sorted(p.name for p in run.iterdir()) == ["run.json", "samples.jsonl"]  # no sample log, no spool left


def test_a_process_running_other_threads_scans_serially(tmp_path, sharded, monkeypatch):
    monkeypatch.setattr(shardscan, "other_threads", _OTHER_THREADS)  # the real guard
    run = _mergeable_varied(tmp_path / "run")
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        serial, parallel = _serial_and_sharded(tmp_path, run, 3, sharded, bootstrap_iters=50)
    finally:
        stop.set()
        other.join()
    assert sharded == [False]
    assert parallel == serial


def test_line_ranges_cover_the_file_on_line_boundaries(tmp_path):
    path = tmp_path / "samples.jsonl"
    lines = [f'{{"i": {i}, "t": "{"ü" * (i % 17)}"}}\n'.encode() for i in range(500)]
    path.write_bytes(b"".join(lines))
    size = path.stat().st_size
    starts = {0}
    for line in lines[:-1]:
        starts.add(max(starts) + len(line))
    for parts in (1, 2, 3, 7, 64):
        ranges = shardscan.line_ranges(path, parts, min_bytes=1)
        assert 1 <= len(ranges) <= parts
        assert ranges[0][0] == 0 and ranges[-1][1] is None
        for (start, end), (following, _) in itertools.pairwise(ranges):
            assert start in starts and start < end == following  # adjacent, non-empty, on a line start
    assert shardscan.line_ranges(path, 8, min_bytes=size // 2) == shardscan.line_ranges(path, 2, min_bytes=1)
    assert len(shardscan.line_ranges(path, 8, min_bytes=size + 1)) == 1
