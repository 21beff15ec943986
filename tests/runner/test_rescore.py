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
from assay.runner.session import execute
from assay.store.rundir import MANIFEST
from assay.store.sampleindex import SAMPLES
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


async def test_the_lines_ray_workers_get_make_the_local_rescores_answered_samples(tmp_path: Path) -> None:
    """A re-score on Ray sends logged lines unparsed with the sample the driver found by their first keys; a
    worker makes of them what the local re-score makes of the parsed records (lines in another layout, a sample
    the dataset no longer has at that place, a torn tail: all alike)."""
    from assay.runner.logged import answered_from_line, answered_from_record
    from assay.runner.rescore import _chunks, _logged_lines, _string

    rows, preds = write_inputs(tmp_path)
    task = load_task(task_config(rows))
    run_dir = (await execute([task], PredictionsModel(preds), settings(tmp_path, "a"))).run_dir
    lines = (run_dir / SAMPLES).read_bytes().splitlines(keepends=True)
    moved = json.loads(lines[1])
    moved["doc_id"] = 0  # not the sample at doc 0: rebuilt from the record, input unknown
    reordered = {"sample_id": json.loads(lines[2])["sample_id"], **json.loads(lines[2])}
    lines[1] = (json.dumps(moved) + "\n").encode()  # json.dumps' spacing
    lines[2] = (json.dumps(reordered) + "\n").encode()  # its first keys elsewhere: parsed by the driver
    path = tmp_path / "edited.jsonl"
    path.write_bytes(b"".join(lines) + b'{"task": "torn')
    by_name = {task.name: task}
    samples = {task.name: task.samples()}

    local = [answered_from_record(r, samples[task.name]) for _, records in _chunks(path, by_name) for r in records]
    sent = [item for _, items in _logged_lines(path, by_name, samples, 7) for item in items]
    on_worker = [answered_from_line(item, str(path)) for item in sent]
    assert len(on_worker) == len(local) == N
    assert on_worker == local
    assert on_worker[1].sample.input is None and on_worker[0].sample.input is not None
    assert isinstance(sent[0][1], bytes) and isinstance(sent[2][1], dict)
    assert _string(b'"q\\"1\\u00e9"') == 'q"1\u00e9' and _string('"ünï"'.encode()) == "ünï"


def test_a_corrupt_line_sent_to_a_ray_worker_is_an_error_naming_it(tmp_path: Path) -> None:
    from assay.runner.logged import answered_from_line

    with pytest.raises(DataError, match=r"samples.jsonl:7: corrupt sample line"):
        answered_from_line(
            (None, b'{"task": "t", "task_hash": "h", "doc_id": 0, "sample_id": "x", \x00}\n', 7), "samples.jsonl"
        )
