"""The verdict on the test split (issue 25's case): the headline's two means, their difference and the paired test
are of the same outcomes, an errored sample counting as a failure on either side, as candidates are ranked.

The paired test used to drop the rows where either side errored while the means counted errors as failures:
"improved: 0.717 vs 0.667, difference +0.105, p=0.031" for a candidate with 6 wins and 3 losses (p = 0.51)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.optimize import aoptimize
from assay.testing.server import OpenAITestServer, last_user_text
from tests.optimize.optimize_support import NO_CACHE, journal, model_spec, task_config

# test rows: the candidate wins 6 (right where the original is wrong), loses 3 (errors where the original is right),
# and agrees on 11; validation rows show only its wins, so it is the best there
TEST = ["win"] * 6 + ["lose"] * 3 + ["right"] * 6 + ["wrong"] * 5
VAL = ["win"] * 6 + ["right"] * 3
TRAIN = ["right"] * 3


def reply(body: dict[str, Any]) -> Any:
    """The original (temperature 0.9) is right on 'right' and 'lose' rows; the candidate (0.0) on 'win' and 'right'
    rows, and fails with HTTP 400 on 'lose' rows."""
    tag = last_user_text(body).rsplit(" ", 1)[-1].strip()
    if (body.get("temperature") or 0) >= 0.5:
        return "yes" if tag in ("right", "lose") else "no"
    if tag == "lose":
        return {"status": 400, "error": "the model refuses"}
    return "yes" if tag in ("win", "right") else "no"


def rows() -> list[dict[str, Any]]:
    out = []
    for split, tags in (("train", TRAIN), ("val", VAL), ("test", TEST)):
        for tag in tags:
            out.append({"id": f"q{len(out)}", "question": f"item {len(out)} {tag}", "answer": "yes", "split": split})
    return out


@pytest.fixture
def server() -> Any:
    with OpenAITestServer(reply) as srv:
        yield srv


async def test_the_headline_counts_errors_as_failures_in_its_means_difference_and_test(
    tmp_path: Path, server: OpenAITestServer
) -> None:
    task = task_config(
        tmp_path, rows(), template="Question: {{ question }}\n", strategy="search", sampler="grid",
        space={"temperature": {"type": "choice", "choices": [0.0]}}, splits={"field": "split"},
    )  # fmt: skip
    task.write_text(task.read_text() + "generation: {temperature: 0.9}\n")
    settings = {**NO_CACHE, "max_error_rate": None}
    result = await aoptimize(str(task), model_spec(server), budget=100, output_dir=tmp_path / "out",
                             run_settings=settings)  # fmt: skip
    comp = result.test["comparison"]
    assert result.best != result.baseline  # the candidate won on validation
    assert not result.improved and not comp["better"]  # errors dropped: 6 wins, 0 losses, p = 0.031, "improved"
    assert comp["test"] == "mcnemar" and comp["p_value"] == pytest.approx(0.5078125)  # 6 wins vs 3 losses
    assert comp["errors"] == "as_failure" and "an errored sample counting as a failure" in comp["outcomes"]
    counts = (comp["n_shared"], len(comp["improved_ids"]), len(comp["regressed_ids"]), comp["errored_b"])
    assert counts == (20, 6, 3, 3)
    assert comp["mean_a"] == pytest.approx(9 / 20) and comp["mean_b"] == pytest.approx(12 / 20)
    assert comp["mean_b"] - comp["mean_a"] == pytest.approx(comp["diff"]) == pytest.approx(3 / 20)
    # the means shown are the test figures reported beside them (errors as failures there too)
    assert (result.test["best"]["mean"], result.test["baseline"]["mean"]) == (comp["mean_b"], comp["mean_a"])
    assert "0.600 vs 0.450 for the original" in result.summary and "difference +0.150" in result.summary
    assert "mcnemar p=0.508" in result.summary and "count as failures: 3 by the candidate" in result.summary
    assert result.summary.startswith("no candidate beat the baseline significantly")
    summary = json.loads((result.folder / "summary.json").read_text())
    assert summary["test"]["comparison"]["p_value"] == comp["p_value"] and summary["improved"] is False
    assert all(i.startswith("q") for i in comp["regressed_ids"])
    tests = [e for e in journal(result.folder) if e["kind"] == "eval" and e["split"] == "test"]
    assert len(tests) == 2 and server.requests_total == result.calls["used"] + result.calls["final_test"]
