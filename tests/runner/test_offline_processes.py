"""Offline scoring in forked worker processes writes the records and results of scoring in this process, in the
same order; keeps in this process what cannot be forked; and a worker that dies stops the run, which resumes to
every sample exactly once."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from assay.evaluators.registry import get as create
from assay.forking import default_processes
from assay.models.predictions import PredictionsModel
from assay.runner.executors.processes import ProcessOfflineExecutor, can_fork
from assay.runner.exits import EXIT_STOPPED, exit_code
from assay.runner.offline import OfflineScheduler
from assay.runner.rescore import rescore
from assay.runner.session import RunSettings, execute
from assay.store.rundir import MANIFEST
from assay.store.sampleindex import SAMPLES
from assay.tasks import load_task
from tests.runner.offline_support import N, task_config, write_inputs

TIMINGS = ("started_at", "model_seconds", "eval_seconds")
PIDS = "ASSAY_TEST_PIDS"  # where `noting_pid` writes the process it ran in
KILL = "ASSAY_TEST_KILL_MARK"  # `dies_once`: the file whose absence makes it kill its process on sample s31


def noting_pid(actual: Any, expected: Any) -> float:
    """A fork-safe custom evaluator that notes which process scored (outside the record, which stays the same)."""
    with open(os.environ[PIDS], "a", encoding="utf-8") as fh:
        fh.write(f"{os.getpid()}\n")
    return float(str(expected) in str(actual))


def dies_once(actual: Any, expected: Any, context: dict[str, Any]) -> float:
    """Kills the process scoring sample s31 the first time (as the OOM killer would), then judges normally."""
    mark = Path(os.environ[KILL])
    if context["metadata"].get("id") == "s31" and not mark.exists():
        mark.write_text("killed")
        os.kill(os.getpid(), signal.SIGKILL)
    return float(str(expected) in str(actual))


def forkable_config(rows: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The offline mix without its async evaluator (which keeps a run in this process)."""
    config = task_config(rows)
    config["evaluators"] = [e for e in config["evaluators"] if e.get("metric") != "slow"]
    config["evaluators"].append({"name": "custom", "fn": "tests.runner.test_offline_processes:noting_pid"})
    if extra is not None:
        config["evaluators"].append(extra)
    config["fields"]["metadata"] = {"id": "id"}
    return config


def lines(run_dir: Path) -> list[dict[str, Any]]:
    """samples.jsonl's records in file order, without what depends on the clock."""
    out = []
    for line in (run_dir / SAMPLES).read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        for key in TIMINGS:
            record.pop(key)
        out.append(record)
    return out


def figures(run_dir: Path) -> dict[str, Any]:
    results = json.loads((run_dir / "results.json").read_text())
    return {"results": results["results"], "tasks": results["assay"]["tasks"], "n": results.get("n-samples")}


def settings(tmp_path: Path, name: str, processes: int) -> RunSettings:
    return RunSettings(
        output_dir=tmp_path / name,
        progress=False,
        cache=False,
        bootstrap_iters=200,
        max_error_rate=1.0,
        max_response_chars=18,
        processes=processes,
    )


@pytest.fixture
def pids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "pids.txt"
    monkeypatch.setenv(PIDS, str(path))
    monkeypatch.setattr(OfflineScheduler, "chunk_size", 7)  # 60 samples: nine chunks, the last one short
    return path


def scored_in(path: Path) -> set[int]:
    found = {int(pid) for pid in path.read_text().split()}
    path.unlink()
    return found


async def test_processes_write_the_records_and_results_of_one_process_in_its_order(tmp_path: Path, pids: Path) -> None:
    rows, preds = write_inputs(tmp_path)
    one = await execute([load_task(forkable_config(rows))], PredictionsModel(preds), settings(tmp_path, "one", 1))
    assert scored_in(pids) == {os.getpid()}
    two = await execute([load_task(forkable_config(rows))], PredictionsModel(preds), settings(tmp_path, "two", 2))
    workers = scored_in(pids)
    assert os.getpid() not in workers and len(workers) == 2  # both forked workers scored, this process did not
    assert one.status == two.status == "finished"
    counts = ("written", "errors", "evaluator_errors", "requests", "truncated", "first_error")
    assert [getattr(two, c) for c in counts] == [getattr(one, c) for c in counts]
    assert two.errors > 0 and two.evaluator_errors > 0 and two.truncated > 0
    assert lines(two.run_dir) == lines(one.run_dir)  # the same records, in the same order
    assert len(lines(two.run_dir)) == N
    assert figures(two.run_dir) == figures(one.run_dir)
    assert not list(two.run_dir.glob(".chunks-*"))  # the workers' chunk files went with the run


async def test_a_rescore_in_processes_equals_one_in_this_process(
    tmp_path: Path, pids: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows, preds = write_inputs(tmp_path)
    done = await execute([load_task(forkable_config(rows))], PredictionsModel(preds), settings(tmp_path, "run", 1))
    changed = forkable_config(rows, {"name": "fuzzy_match", "threshold": 0.9, "metric": "strict"})  # a new metric
    monkeypatch.setattr("assay.runner.rescore.CHUNK", 7)
    scored_in(pids)
    here = await rescore(done.run_dir, [load_task(changed)], output_dir=tmp_path / "here", processes=1)
    assert scored_in(pids) == {os.getpid()}
    forked = await rescore(done.run_dir, [load_task(changed)], output_dir=tmp_path / "forked", processes=2)
    assert os.getpid() not in scored_in(pids)
    assert here.samples == forked.samples == N
    assert lines(forked.run_dir) == lines(here.run_dir)
    assert "strict" in lines(forked.run_dir)[0]["filters"]["none"]["scores"]
    assert figures(forked.run_dir) == figures(here.run_dir)


async def test_a_killed_worker_stops_the_run_and_resume_completes_it_exactly_once(
    tmp_path: Path, pids: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KILL, str(tmp_path / "killed"))
    rows, preds = write_inputs(tmp_path)
    dying = {"name": "custom", "fn": "tests.runner.test_offline_processes:dies_once", "metric": "dies"}
    died = await execute([load_task(forkable_config(rows, dying))], PredictionsModel(preds), settings(tmp_path, "r", 2))
    assert died.status == "failed" and died.stopped_by == "worker_lost" and exit_code(died) == EXIT_STOPPED
    assert died.message is not None and "a scoring process died while scoring task 'mix'" in died.message
    run_dir = died.run_dir
    kept = lines(run_dir)
    assert 0 < len(kept) < N and "s31" not in {r["sample_id"] for r in kept}  # the chunks before it are written
    assert json.loads((run_dir / MANIFEST).read_text())["status"] == "failed"
    from assay.api import arun_outcome

    stale = run_dir / ".chunks-left-by-a-killed-writer"  # what a SIGKILLed writer leaves: its next writer removes it
    stale.mkdir()
    (stale / "chunk.jsonl").write_bytes(b"{}\n" * 1000)
    spools = [run_dir / ".samples_mix.jsonl.k1ll3d.tmp", run_dir / ".results.json.abc123.tmp"]
    for spool in spools:  # a writer killed while writing results: the sample logs' spools, a half-written file
        spool.write_bytes(b"{}\n" * 1000)
    resumed = await arun_outcome(resume=run_dir, progress=False)
    assert not stale.exists() and not any(spool.exists() for spool in spools)
    assert resumed.status == "finished" and resumed.skipped == len(kept) and resumed.written == N - len(kept)
    ids = [r["sample_id"] for r in lines(run_dir)]
    assert sorted(ids) == sorted(f"s{i}" for i in range(N))  # every sample exactly once
    whole = await execute(
        [load_task(forkable_config(rows, dying))], PredictionsModel(preds), settings(tmp_path, "whole", 1)
    )
    assert sorted(lines(run_dir), key=lambda r: r["sample_id"]) == sorted(
        lines(whole.run_dir), key=lambda r: r["sample_id"]
    )


def test_only_fork_safe_evaluators_are_scored_in_forked_processes() -> None:
    rows = [{"id": "a", "question": "q", "answer": "1", "alt": "1"}]
    config = forkable_config(rows)
    assert can_fork([load_task(config)])
    awaited = {"name": "custom", "fn": "tests.runner.offline_support:slow_judge", "metric": "slow"}
    assert not can_fork([load_task(forkable_config(rows, awaited))])  # an async function may hold connections
    judge = create(
        "llm_judge", criteria="correct", model={"provider": "openai", "model": "j", "base_url": "http://127.0.0.1:9/v1"}
    )
    assert not judge.fork_safe()
    assert create("exact_match").fork_safe() and create("token_f1").fork_safe()
    assert 1 <= default_processes() <= 8


async def test_a_run_of_one_chunk_or_one_process_scores_here(tmp_path: Path, pids: Path) -> None:
    rows, preds = write_inputs(tmp_path, n=7)  # one chunk: nothing to share out
    task = load_task(forkable_config(rows))
    outcome = await execute([task], PredictionsModel(preds), settings(tmp_path, "small", 4))
    assert outcome.status == "finished" and outcome.written == 7
    assert scored_in(pids) == {os.getpid()}
    assert ProcessOfflineExecutor.chunk_size == 7


async def test_a_dataset_read_on_demand_is_scored_in_processes_as_in_memory(
    tmp_path: Path, pids: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assay.data import readers as readers_module

    rows, preds = write_inputs(tmp_path)
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    config = {**forkable_config(rows), "dataset": {"path": str(path)}}
    eager = await execute([load_task(config)], PredictionsModel(preds), settings(tmp_path, "eager", 1))
    monkeypatch.setattr(readers_module, "LAZY_MIN_BYTES", 0)
    lazy_task = load_task(config)
    assert type(lazy_task.dataset.rows).__name__ == "JsonlRows"
    scored_in(pids)
    lazy = await execute([lazy_task], PredictionsModel(preds), settings(tmp_path, "lazy", 2))
    assert os.getpid() not in scored_in(pids)
    assert lines(lazy.run_dir) == lines(eager.run_dir)
    assert figures(lazy.run_dir) == figures(eager.run_dir)


def test_a_containers_cpu_quota_bounds_the_default_processes(tmp_path: Path) -> None:
    from assay.forking import cgroup_cpu_quota

    path = tmp_path / "cpu.max"
    path.write_text("150000 100000\n")
    assert cgroup_cpu_quota(str(path)) == 1.5
    path.write_text("max 100000\n")
    assert cgroup_cpu_quota(str(path)) is None
    path.write_text("garbage\n")
    assert cgroup_cpu_quota(str(path)) is None
    assert cgroup_cpu_quota(str(tmp_path / "absent")) is None


async def test_chunks_go_through_the_pipe_when_no_file_can_hold_them(
    tmp_path: Path, pids: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers leave their encoded chunks in files for the writer to copy; where none can be written, the pipe
    carries them, and the records are the same."""
    import assay.runner.executors.processes as processes

    rows, preds = write_inputs(tmp_path)
    one = await execute([load_task(forkable_config(rows))], PredictionsModel(preds), settings(tmp_path, "one", 1))
    assert scored_in(pids) == {os.getpid()}
    monkeypatch.setattr(processes, "_spool_folder", lambda run_dir: str(tmp_path / "no-such-folder"))
    piped = await execute([load_task(forkable_config(rows))], PredictionsModel(preds), settings(tmp_path, "two", 2))
    assert os.getpid() not in scored_in(pids)  # the workers scored
    assert lines(piped.run_dir) == lines(one.run_dir) and figures(piped.run_dir) == figures(one.run_dir)


async def test_a_pool_found_broken_when_sending_a_chunk_stops_the_run_as_a_dead_worker_does(
    tmp_path: Path, pids: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that dies between two chunks breaks the pool before the next is sent: the chunks already sent are
    written in order and the run stops as when the dead worker's own chunk is taken."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    real = ProcessPoolExecutor.submit
    sent: list[int] = []

    def submit(self: ProcessPoolExecutor, *args: Any, **kwargs: Any) -> Any:
        sent.append(1)
        if len(sent) == 5:
            raise BrokenProcessPool("a child process terminated abruptly")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ProcessPoolExecutor, "submit", submit)
    rows, preds = write_inputs(tmp_path)
    died = await execute([load_task(forkable_config(rows))], PredictionsModel(preds), settings(tmp_path, "r", 2))
    assert died.status == "failed" and died.stopped_by == "worker_lost"
    assert [r["sample_id"] for r in lines(died.run_dir)] == [f"s{i}" for i in range(4 * 7)]  # four chunks of 7


async def test_the_runs_processes_setting_also_decides_how_its_results_are_scanned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--processes 1`` keeps the results scan in this process; more reads the records in forked ranges (of a
    run whose results read samples.jsonl back: here, one not scanned as it scored)."""
    from assay.results import shardscan
    from assay.runner import session

    monkeypatch.setattr(session, "_scan_ahead", lambda *args: None)

    monkeypatch.setattr(shardscan, "MIN_BYTES_PER_PROCESS", 1)  # shard even this small samples.jsonl
    monkeypatch.setattr(shardscan, "other_threads", lambda: False)
    merged: list[tuple[int, bool]] = []
    scan = shardscan.scan_sharded

    def spy(*args: Any, **kwargs: Any) -> Any:
        result = scan(*args, **kwargs)
        merged.append((kwargs["processes"], result is not None))
        return result

    monkeypatch.setattr(shardscan, "scan_sharded", spy)
    rows, preds = write_inputs(tmp_path)
    one = await execute([load_task(forkable_config(rows))], PredictionsModel(preds), settings(tmp_path, "one", 1))
    two = await execute([load_task(forkable_config(rows))], PredictionsModel(preds), settings(tmp_path, "two", 2))
    assert merged == [(1, False), (2, True)]
    assert figures(two.run_dir) == figures(one.run_dir)
