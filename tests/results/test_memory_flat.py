"""Results, compare, the HTML report, JUnit XML and feedback themes hold no list of records: their peak memory grows by
a few hundred bytes a sample, not by the size of a record (here about 6 KB of text each)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from assay.feedback.themes import build_report
from assay.report.html import write_html
from assay.report.junit import write_junit
from assay.results import compare_runs, load_run, write_results
from tests.results import runfactory as rf

LONG = "длинный ответ — " * 400  # ~6 KB of non-ASCII text per sample


def _run(path: Path, n: int, *, reverse: bool = False) -> Path:
    """A run of ``n`` samples; ``reverse`` writes them last first, as a local model's batches (longest first) finish
    out of order, so that the sample log is put back in doc_id order."""
    recs = [
        rf.record("t", i, {"em": [rf.verdict(float(i % 4 != 0))]}, texts=[f"{i} {LONG}"], doc={"id": i, "q": LONG})
        for i in range(n)
    ]
    return rf.write_run(path, rf.manifest([rf.task("t", (("em", True),), n=n)]), recs[::-1] if reverse else recs)


def _peak(action: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


OPERATIONS: dict[str, Callable[[Path], Any]] = {
    "write_results": lambda run: write_results(run, bootstrap_iters=0),
    "write_results, samples out of order": lambda run: write_results(run, bootstrap_iters=0),
    "compare": lambda run: compare_runs(run, run, iters=10),
    "html": lambda run: write_html([run], run / "report.html"),
    "feedback": lambda run: build_report(run),
    "junit": lambda run: write_junit(load_run(run), run / "junit.xml"),
}


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_peak_memory_does_not_grow_with_the_records(tmp_path, operation):
    reverse = operation.endswith("out of order")
    small, large = _run(tmp_path / "small", 100, reverse=reverse), _run(tmp_path / "large", 400, reverse=reverse)
    for run in (small, large):
        if not operation.startswith("write_results"):
            write_results(run, bootstrap_iters=0)
    assert load_run(small).results  # warm imports and caches outside the measurement
    OPERATIONS[operation](small)
    grown = _peak(lambda: OPERATIONS[operation](large)) - _peak(lambda: OPERATIONS[operation](small))
    per_sample = grown / 300
    assert per_sample < 1500, f"{operation}: {per_sample:.0f} bytes more per sample (a record is ~15 KB in memory)"
