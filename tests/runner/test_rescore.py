"""`assay score`: a new run folder by default (naming the run it came from), --in-place under the run lock, and the
same records as a fresh run of the changed task."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.errors import DataError
from assay.models.predictions import PredictionsModel
from assay.runner.lock import RunLockedError, run_lock
from assay.runner.rescore import rescore
from assay.runner.rundir import MANIFEST, SAMPLES
from assay.runner.session import execute
from assay.tasks import load_task
from tests.runner.offline_support import N, task_config, write_inputs
from tests.runner.test_offline import figures, records, settings


def changed(config: dict) -> dict:
    """The same requests, other evaluators and filters."""
    config = json.loads(json.dumps(config))
    config["filters"] = [*config["filters"][:1], {"name": "low", "steps": [{"type": "lowercase"}]}]
    config["evaluators"] = [
        {"name": "exact_match", "filters": ["num"]},
        {"name": "contains", "substrings": ["antwort"], "filters": ["low"]},
        {"name": "token_f1", "threshold": 0.2},
    ]
    return config


async def test_rescore_writes_a_new_run_that_matches_a_fresh_run_and_leaves_the_original(tmp_path: Path) -> None:
    rows, preds = write_inputs(tmp_path)
    original = (await execute([load_task(task_config(rows))], PredictionsModel(preds), settings(tmp_path, "a"))).run_dir
    before = {name: (original / name).read_bytes() for name in (SAMPLES, MANIFEST, "results.json")}
    fresh = await execute([load_task(changed(task_config(rows)))], PredictionsModel(preds), settings(tmp_path, "b"))

    outcome = await rescore(original, [load_task(changed(task_config(rows)))])

    assert not outcome.in_place and outcome.samples == N
    assert outcome.run_dir != original and outcome.run_dir.parent == original.parent
    assert {name: (original / name).read_bytes() for name in before} == before  # nothing of the original changed
    manifest = json.loads((outcome.run_dir / MANIFEST).read_text())
    assert manifest["rescored_from"] == str(original.resolve()) and manifest["status"] == "finished"
    assert manifest["run_id"] == outcome.run_dir.name and manifest["config"]["rescored"] is True
    assert records(outcome.run_dir) == records(fresh.run_dir)
    assert figures(outcome.run_dir) == figures(fresh.run_dir)
    assert not (outcome.run_dir / ".lock").read_text()  # the lock was released


async def test_rescore_in_place_holds_the_run_lock_and_rewrites_the_run(tmp_path: Path) -> None:
    rows, preds = write_inputs(tmp_path)
    original = (await execute([load_task(task_config(rows))], PredictionsModel(preds), settings(tmp_path, "a"))).run_dir
    fresh = await execute([load_task(changed(task_config(rows)))], PredictionsModel(preds), settings(tmp_path, "b"))
    before = (original / SAMPLES).read_bytes()
    with run_lock(original), pytest.raises(RunLockedError, match="cannot re-score"):
        await rescore(original, [load_task(changed(task_config(rows)))], in_place=True)
    assert (original / SAMPLES).read_bytes() == before

    outcome = await rescore(original, [load_task(changed(task_config(rows)))], in_place=True)

    assert outcome.in_place and outcome.run_dir == original
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == [original.name]  # no new folder
    assert records(original) == records(fresh.run_dir)
    assert figures(original) == figures(fresh.run_dir)
    assert json.loads((original / MANIFEST).read_text())["rescored_from"] is None
    assert not list(original.glob(".samples.jsonl.*"))


async def test_a_failed_rescore_leaves_no_half_written_folder(tmp_path: Path) -> None:
    rows, preds = write_inputs(tmp_path)
    original = (await execute([load_task(task_config(rows))], PredictionsModel(preds), settings(tmp_path, "a"))).run_dir
    lines = (original / SAMPLES).read_text(encoding="utf-8").splitlines(keepends=True)
    lines[30] = '{"task": "mix", broken\n'
    (original / SAMPLES).write_text("".join(lines), encoding="utf-8")
    for in_place in (False, True):
        with pytest.raises(DataError, match=r"samples\.jsonl:31: corrupt sample line"):
            await rescore(original, in_place=in_place)
        assert sorted(p.name for p in (tmp_path / "a").iterdir()) == [original.name]
        assert (original / SAMPLES).read_text(encoding="utf-8") == "".join(lines)
