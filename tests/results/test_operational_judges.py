"""Judge requests are counted one by one, under their own model, apart from the model under test."""

from __future__ import annotations

import pytest

from assay.results.operational import operational_figures
from tests.results.runfactory import manifest, record, task, verdict


def call(model: str, tin: int, tout: int, *, cached: bool = False, error: str | None = None) -> dict:
    out = {"model": model, "usage": {"input_tokens": tin, "output_tokens": tout}, "latency_s": 0.2, "cached": cached}
    if error:
        out["error"] = error
    return out


def test_two_judges_are_tallied_per_call_and_priced_apart():
    calls = [call("judge-a", 100, 10), call("judge-b", 200, 20), call("judge-b", 50, 5, error="HTTP 503")]
    details = {
        "judge": {"model": "judge-a, judge-b", "usage": {"input_tokens": 350, "output_tokens": 35}, "cached": False},
        "judges": calls,
    }
    recs = [record("t", i, {"llm_judge": [verdict(1.0, details=details)]}, tokens=(10, 2)) for i in range(3)]
    prices = {"judge-a": {"input": 1.0, "output": 2.0}, "judge-b": {"input": 3.0, "output": 4.0}}
    figures = operational_figures(recs, manifest([task("t", (("llm_judge", True),), n=3)]), prices=prices)
    judges = figures["roles"]["judge"]
    assert set(judges) == {"judge-a", "judge-b"}  # never the joined name "judge-a, judge-b"
    assert judges["judge-a"]["requests"] == 3 and judges["judge-a"]["input_tokens"] == 300
    assert judges["judge-b"]["requests"] == 6 and judges["judge-b"]["errors"] == 3
    assert judges["judge-b"]["input_tokens"] == 3 * 250 and judges["judge-b"]["output_tokens"] == 3 * 25
    assert judges["judge-a"]["cost_usd"] == pytest.approx((300 * 1.0 + 30 * 2.0) / 1e6)
    assert judges["judge-b"]["cost_usd"] == pytest.approx((750 * 3.0 + 75 * 4.0) / 1e6)
    assert figures["roles"]["model"]["org/test-model:v1"]["input_tokens"] == 30  # the model under test, apart


def test_a_summary_without_per_call_entries_still_counts():
    details = {"judge": call("judge-a", 100, 10)}
    recs = [record("t", 0, {"llm_judge": [verdict(1.0, details=details)]})]
    figures = operational_figures(recs, manifest([task("t", (("llm_judge", True),), n=1)]))
    assert figures["roles"]["judge"]["judge-a"]["requests"] == 1
