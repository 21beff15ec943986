"""The few-shot strategy against a real local server whose model imitates the format of the examples it is shown:
random, bootstrapped (the model's own passing outputs as answers) and greedy demo sets, all from the training split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.optimize import aoptimize
from assay.testing.server import OpenAITestServer
from tests.optimize.optimize_support import NO_CACHE, demo_rows, model_spec, task_config


def _train_ids(folder: Path) -> set[str]:
    manifest = json.loads((folder / "optimization.json").read_text())
    rows = demo_rows()
    return {rows[i]["id"] for i in manifest["splits"]["train"]}


def _demo_sets(folder: Path) -> list[list[dict]]:
    lineage = json.loads((folder / "lineage.json").read_text())
    return [c["candidate"]["demos"] for c in lineage if c["candidate"]["demos"]]


@pytest.mark.parametrize("method", ["random", "greedy"])
async def test_fewshot_demos_from_training_raise_the_score(
    tmp_path: Path, task_server: OpenAITestServer, method: str
) -> None:
    task = task_config(tmp_path, strategy="fewshot", fewshot={"method": method, "max_demos": 3, "candidates": 4})
    result = await aoptimize(
        str(task), model_spec(task_server), budget=400, output_dir=tmp_path / "out", run_settings=NO_CACHE
    )
    assert result.improved, result.summary
    assert result.test["best"]["mean"] > result.test["baseline"]["mean"] + 0.3
    train = _train_ids(result.folder)
    sets = _demo_sets(result.folder)
    assert sets and all(d["id"] in train for demos in sets for d in demos)
    assert all(len(demos) <= 3 for demos in sets)
    assert task_server.requests_total == result.calls["task_model"] + result.calls["final_test"]
    if method == "greedy":  # each round keeps the best demo, so kept sets grow one demo at a time
        assert sorted({len(d) for d in sets}) == list(range(1, max(len(d) for d in sets) + 1))


async def test_bootstrap_shows_the_models_own_passing_outputs(tmp_path: Path, task_server: OpenAITestServer) -> None:
    task = task_config(tmp_path, strategy="fewshot", fewshot={"method": "bootstrap", "max_demos": 2, "candidates": 3})
    result = await aoptimize(
        str(task), model_spec(task_server), budget=400, output_dir=tmp_path / "out", run_settings=NO_CACHE
    )
    rows = {r["id"]: r for r in demo_rows()}
    train = _train_ids(result.folder)
    sets = _demo_sets(result.folder)
    assert sets
    for demos in sets:
        for d in demos:
            assert d["id"] in train
            assert d["_output"] == rows[d["id"]]["answer"]  # it passed, so its own output is the right answer
            assert rows[d["id"]]["kind"] == "yesno"  # the only kind the unimproved model answers correctly
    # bare answers in the examples teach the model to drop the sentences: capitals now pass, sums still do not
    assert result.test["best"]["mean"] > result.test["baseline"]["mean"]
