"""A run over a large JSONL dataset (rows read on demand) writes the records and results of the same run over the
rows held in memory, through the batch path and the per-sample path, and resumes to them after a crash."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.data import readers as readers_module
from assay.models.predictions import PredictionsModel
from assay.runner.offline import OfflineScheduler
from assay.runner.session import execute
from assay.store.rundir import MANIFEST
from assay.store.sampleindex import SAMPLES
from assay.tasks import load_task
from tests.runner.offline_support import Delegate, N, task_config, write_inputs
from tests.runner.test_offline import figures, records, settings


def file_task(tmp_path: Path, rows: list[dict[str, Any]]) -> dict[str, Any]:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return {**task_config(rows), "dataset": {"path": str(path)}}


async def test_lazy_and_eager_datasets_give_the_same_records_and_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(OfflineScheduler, "chunk_size", 9)
    rows, preds = write_inputs(tmp_path)
    config = file_task(tmp_path, rows)
    eager = await execute([load_task(config)], PredictionsModel(preds), settings(tmp_path, "eager"))
    monkeypatch.setattr(readers_module, "LAZY_MIN_BYTES", 0)
    lazy_task = load_task(config)
    assert type(lazy_task.dataset.rows).__name__ == "JsonlRows"
    lazy = await execute([lazy_task], PredictionsModel(preds), settings(tmp_path, "lazy"))
    single = await execute([load_task(config)], Delegate(PredictionsModel(preds)), settings(tmp_path, "one"))
    assert eager.status == lazy.status == single.status == "finished"
    assert records(lazy.run_dir) == records(eager.run_dir) == records(single.run_dir)
    assert len(records(lazy.run_dir)) == N
    assert figures(lazy.run_dir) == figures(eager.run_dir)


async def test_a_crashed_lazy_run_resumes_to_the_same_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readers_module, "LAZY_MIN_BYTES", 0)
    rows, preds = write_inputs(tmp_path)
    config = file_task(tmp_path, rows)
    full = await execute([load_task(config)], PredictionsModel(preds), settings(tmp_path, "full"))
    crashed = await execute([load_task(config)], PredictionsModel(preds), settings(tmp_path, "crash"))
    lines = (crashed.run_dir / SAMPLES).read_bytes().split(b"\n")
    kept = lines[:17] + lines[30:41]  # finished samples not in dataset order: the pending ones are skipped by id
    (crashed.run_dir / SAMPLES).write_bytes(b"\n".join(kept) + b"\n")
    manifest = json.loads((crashed.run_dir / MANIFEST).read_text())
    manifest["status"] = "interrupted"
    (crashed.run_dir / MANIFEST).write_text(json.dumps(manifest))
    (crashed.run_dir / "results.json").unlink()
    from assay.api import arun_outcome

    resumed = await arun_outcome(resume=crashed.run_dir, progress=False)
    assert resumed.status == "finished" and resumed.skipped == 28 and resumed.written == N - 28
    assert records(crashed.run_dir) == records(full.run_dir)
    assert figures(crashed.run_dir) == figures(full.run_dir)


def test_pending_work_skips_done_samples_and_indexes_like_a_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from assay.runner.pending import PendingWork

    monkeypatch.setattr(readers_module, "LAZY_MIN_BYTES", 0)
    rows, _ = write_inputs(tmp_path)
    first = load_task({**file_task(tmp_path, rows), "name": "a"})
    second = load_task({**task_config(rows[:5]), "name": "b"})  # inline rows: a list
    done = {("a", "s1"), ("a", "s7"), ("b", "s0"), ("zzz", "s2")}
    work = PendingWork([first, second], None, done)
    expected = [("a", s.id) for s in first.samples() if s.id not in ("s1", "s7")]
    expected += [("b", s.id) for s in second.samples()[1:]]
    assert [(t.name, s.id) for t, s in work] == expected
    assert len(work) == len(expected) and work.skipped == 3
    assert [(work[i][0].name, work[i][1].id) for i in (0, 1, 5, len(work) - 1, -1)] == [
        expected[i] for i in (0, 1, 5, len(work) - 1, -1)
    ]
    assert [(t.name, s.id) for t, s in work[2:4]] == expected[2:4]
    assert len(PendingWork([first], 10, set())) == 10
    assert [t.name for t in work.tasks()] == ["a", "b"]
    assert [t.name for t in PendingWork([first, second], None, {("b", s.id) for s in second.samples()}).tasks()] == [
        "a"
    ]
    with pytest.raises(IndexError):
        work[len(work)]


@pytest.mark.parametrize("limit", [None, 23])
def test_pending_work_by_positions_gives_the_samples_iteration_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int | None
):
    """What a forked worker reads from the positions it is sent is what the driver would have sent."""
    from assay.runner.pending import PendingWork, runs

    monkeypatch.setattr(readers_module, "LAZY_MIN_BYTES", 0)
    rows, _ = write_inputs(tmp_path)
    first = load_task({**file_task(tmp_path, rows), "name": "a"})
    second = load_task({**task_config(rows[:20]), "name": "b"})  # inline rows: a list
    scattered = {("a", f"s{i}") for i in range(60) if i % 5} | {("b", "s4")}  # positions read one by one
    clustered = {("a", "s1"), ("a", "s2"), ("a", "s30"), ("b", "s0")}  # positions read as a block, then picked
    for done in (set(), scattered, clustered):
        work = PendingWork([first, second], limit, done)
        for size in (7, 100):
            chunks = [(task.name, samples) for task, samples in runs(work, size)]
            by_positions = [
                (task.name, work.samples_at(part, positions)) for part, task, positions in work.position_runs(size)
            ]
            assert by_positions == chunks


@pytest.mark.parametrize("processes", [1, 2])
async def test_a_prompt_that_cannot_render_fails_a_lazy_run_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, processes: int
) -> None:
    """The rows are screened as the file is read; the one whose template fails is still rendered before the run
    folder exists, and named (file and line) as with the rows in memory."""
    from assay.errors import DataError

    monkeypatch.setattr(OfflineScheduler, "chunk_size", 9)
    rows, preds = write_inputs(tmp_path)
    config = {**file_task(tmp_path, rows), "template": "Frage: {{ question }} ({{ alt }})"}  # rows 5, 16, ... lack alt
    config["evaluators"] = [{"name": "exact_match"}]
    messages = []
    for threshold in (1 << 40, 0):
        monkeypatch.setattr(readers_module, "LAZY_MIN_BYTES", threshold)
        task = load_task(config)
        assert (type(task.dataset.rows).__name__ == "JsonlRows") == (threshold == 0)
        out = tmp_path / f"runs-{threshold}"
        with pytest.raises(DataError) as caught:
            await execute([task], PredictionsModel(preds), settings(tmp_path, out.name, processes=processes))
        assert not out.exists() or not any(out.iterdir())
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert "rows.jsonl:6" in messages[0] and "alt" in messages[0]
