"""What isolating each ``assert_eval`` from the test session costs (the pytest plugin's default, ``fork``).

Each call evaluates the bundled demo agent on the 21-sample ``examples/qa_tools`` task, the way a test does: in
this process (``none``), and in a forked child per call (``fork``). Printed: seconds per call (median of the rounds)
and the ratio fork ÷ none; the first call of each mode (imports) is left out. Run: ``python -m
benchmarks.bench_pytest_isolation [calls]``.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from assay.demo.agent import answer
from assay.testing import assert_eval, evaltest

TASK = Path(__file__).resolve().parents[1] / "examples" / "qa_tools" / "task.yaml"


def per_call(mode: str, calls: int, out: Path) -> float:
    """Median seconds of one assert_eval call with ``mode`` isolation."""
    token = evaltest.ISOLATION.set(mode)
    try:
        assert_eval(TASK, answer, min_score={"exact_match": 0.5}, output_dir=out)  # warm: imports, caches
        times = []
        for _ in range(calls):
            started = time.perf_counter()
            assert_eval(TASK, answer, min_score={"exact_match": 0.5}, output_dir=out)
            times.append(time.perf_counter() - started)
    finally:
        evaltest.ISOLATION.reset(token)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    calls = int(argv[0]) if argv else 20
    with tempfile.TemporaryDirectory() as tmp:
        plain = per_call("none", calls, Path(tmp) / "none")
        forked = per_call("fork", calls, Path(tmp) / "fork")
    print(f"assert_eval on {TASK.parent.name} (21 samples), median of {calls} calls")
    print(f"  none (this process): {plain * 1000:8.1f} ms per call")
    extra = (forked - plain) * 1000
    print(f"  fork (a child each): {forked * 1000:8.1f} ms per call  ({forked / plain:.2f}x; +{extra:.1f} ms)")


if __name__ == "__main__":
    main(sys.argv[1:])
