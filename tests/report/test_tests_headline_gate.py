"""`--fail-under` on a `headline: tests` task gates the pass rate its headline shows, not the mean score; a matrix
cell of such a task shows its tests."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from assay.commands.report import check_thresholds, parse_threshold
from assay.report.matrix import Figure

TESTS = {"passed": 1, "failed": 2, "errored": 0, "pass_rate": 1 / 3, "ci": [0.0615, 0.7923], "mean_score": 0.9}


def _run(entry: dict[str, Any]) -> Any:
    row = SimpleNamespace(
        task="t", metric="row_checks", filter="none", key="t/row_checks,none", mean=0.9, entry=entry, is_group=False
    )
    return SimpleNamespace(name="r", metric_rows=lambda: [row])


def test_fail_under_gates_the_pass_rate_of_a_tests_headline() -> None:
    gate = [parse_threshold("row_checks=0.5")]
    failures = check_thresholds(_run({"tests": TESTS}), gate)  # the mean (0.9) would pass; the pass rate does not
    assert failures == ["t/row_checks,none pass rate = 0.3333 < 0.5 (1 passed · 2 failed · 0 errored)"]
    assert check_thresholds(_run({}), gate) == []  # without the headline: the mean, as before


def test_a_matrix_cell_of_a_tests_task_shows_its_tests() -> None:
    text = Figure(0.9, [0.8, 1.0], 3, 3, 0, tests=TESTS).text()
    assert text.splitlines()[0] == "1 passed · 2 failed · 0 errored" and "33.33%" in text
    assert Figure(0.9, None, 3, 3, 0).text() == "0.9000"
