"""The Ray executor's pure parts: how concurrency is split, shards are cut, and worker resources are settled."""

from __future__ import annotations

import asyncio
import pickle
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray", reason="the Ray executor's tests need ray: pip install 'assay[ray]' (make test does)")

from assay.runner.executors import RayOptions
from assay.runner.executors.ray import _shards, _shares, with_resources
from assay.tasks import Task, load_task


def _task(name: str, resources: dict[str, float] | None = None) -> Task:
    config = {
        "name": name,
        "dataset": {"rows": [{"q": str(i), "a": str(i)} for i in range(5)]},
        "fields": {"input": "q", "target": "a"},
        "evaluators": ["exact_match"],
    }
    if resources is not None:
        config["resources"] = resources
    return load_task(config)


def test_concurrency_is_split_so_the_cluster_never_exceeds_it() -> None:
    assert _shares(32, 3) == [11, 11, 10]
    assert _shares(2, 5) == [1, 1]  # fewer workers than slots: no worker without a slot
    assert sum(_shares(7, 2)) == 7


def test_shards_hold_one_task_each_and_every_sample_once() -> None:
    a, b = _task("a"), _task("b")
    work = [(a, s) for s in a.samples()] + [(b, s) for s in b.samples()]
    shards = list(_shards(work, 2))
    assert [(s.task.name, [x.id for x in s.samples]) for s in shards] == [
        ("a", ["0", "1"]), ("a", ["2", "3"]), ("a", ["4"]), ("b", ["0", "1"]), ("b", ["2", "3"]), ("b", ["4"]),
    ]  # fmt: skip


def test_worker_resources_come_from_the_command_line_else_the_tasks_else_one_cpu() -> None:
    plain, gpu, cpus = _task("plain"), _task("gpu", {"num_gpus": 0.5}), _task("cpus", {"num_cpus": 2})
    assert with_resources(RayOptions(), [plain]).num_cpus == 1.0
    assert with_resources(RayOptions(), [plain]).num_gpus == 0.0
    settled = with_resources(RayOptions(), [plain, gpu, cpus])
    assert (settled.num_cpus, settled.num_gpus) == (2.0, 0.5)
    given = with_resources(RayOptions(num_cpus=0.25, num_gpus=0), [gpu, cpus])
    assert (given.num_cpus, given.num_gpus) == (0.25, 0.0)


def test_resources_are_how_a_task_runs_not_what_it_evaluates() -> None:
    plain, gpu = _task("t"), _task("t", {"num_gpus": 1})
    assert plain.hash == gpu.hash
    assert gpu.to_config()["resources"] == {"num_gpus": 1.0}
    assert Task.from_config(gpu.to_config()).config.resources == gpu.config.resources


def test_a_predictions_run_on_ray_goes_to_the_offline_workers(tmp_path: Path) -> None:
    from assay.models.predictions import PredictionsModel
    from assay.runner.executors.choose import make_executor
    from assay.runner.executors.ray_offline import RayOfflineExecutor
    from assay.runner.progress import RunProgress
    from assay.runner.scheduler import SchedulerConfig

    (tmp_path / "p.jsonl").write_text('{"id": "0", "prediction": "0"}\n')
    model = PredictionsModel(tmp_path / "p.jsonl")
    progress = RunProgress(1, enabled=False)
    executor = make_executor("ray", model, None, SchedulerConfig(), cache=None, progress=progress, offline=True)  # type: ignore[arg-type]
    assert isinstance(executor, RayOfflineExecutor)
    assert executor.options == RayOptions()


def test_offline_workers_render_the_prompts_the_driver_would_without_the_dataset() -> None:
    from ray import cloudpickle

    from assay.runner.executors.ray_offline import for_offline_workers
    from assay.runner.offline import render

    task = load_task(
        {
            "name": "fs",
            "dataset": {"rows": [{"q": f"question {i}", "a": str(i)} for i in range(20)]},
            "fields": {"input": "q", "target": "a"},
            "system": "Answer {{ 'briefly' }}.",
            "template": "Q: {{ q }}",
            "fewshot": {"n": 3},
            "evaluators": ["exact_match"],
        }
    )
    samples = task.samples()
    shipped = pickle.loads(cloudpickle.dumps(for_offline_workers(task)))
    assert shipped._dataset is None and shipped._samples is None
    assert shipped.hash == task.hash and shipped.params_for(0) == task.params_for(0)
    assert [render(shipped, s) for s in samples] == [render(task, s) for s in samples]


def test_offline_workers_render_few_shot_prompts_of_a_dataset_read_on_demand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large JSONL dataset is read on demand: its few-shot pool goes to the workers as the file's path and
    offsets (read there), never as its rows."""
    import json

    from ray import cloudpickle

    from assay.data import readers
    from assay.runner.executors.ray_offline import for_offline_workers
    from assay.runner.offline import render

    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"q": f"question {i}", "a": str(i)}) + "\n" for i in range(50)))
    monkeypatch.setattr(readers, "LAZY_MIN_BYTES", 0)
    config = {
        "name": "lazy",
        "dataset": {"path": str(rows)},
        "fields": {"input": "q", "target": "a"},
        "template": "Q: {{ q }}",
        "fewshot": {"n": 2},
        "evaluators": ["exact_match"],
    }
    task = load_task(config)
    assert type(task.dataset.rows).__name__ == "JsonlRows"
    samples = task.samples()
    blob = cloudpickle.dumps(for_offline_workers(task))
    assert b"question 17" not in blob
    shipped = pickle.loads(blob)
    assert [render(shipped, s) for s in samples] == [render(task, s) for s in samples]


class _FakeWorker:
    """An offline worker in this process: dies (RayActorError) on any shard holding a sample in ``kills``, once or
    for ever, else 'scores' each sample as a line naming it."""

    def __init__(self, kills: set[str], *, forever: bool) -> None:
        self.kills, self.forever = kills, forever
        self.score = _Method(self._score)
        self.ready = _Method(self._ready)

    async def _ready(self) -> None:
        return None

    async def _score(self, task_name: str, items: list, started_at: float, model_seconds: float) -> object:
        import ray.exceptions

        from assay.runner.executors.ray_worker import Scored

        await asyncio.sleep(0)
        doomed = self.kills & {sample.id for sample, _, _ in items}
        if doomed:
            if not self.forever:
                self.kills -= doomed
            raise ray.exceptions.RayActorError()
        return Scored([s.id.encode() for s, _, _ in items], [None] * len(items), [0] * len(items), [None] * len(items))


class _Method:
    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def remote(self, *args: Any) -> Any:
        return asyncio.ensure_future(self.fn(*args))


def _pool_with(workers: list[_FakeWorker]) -> Any:
    from assay.runner.executors.ray_offline import OfflinePool

    pool = OfflinePool(RayOptions(), [], max_response_chars=None)
    pool._actors = workers
    return pool


def _offline_shards(task: Task, size: int) -> Any:
    from assay.runner.executors.ray_offline import OfflineShard

    samples = task.samples()
    for i in range(0, len(samples), size):
        yield OfflineShard(task, [(s, [None], ["no answer"]) for s in samples[i : i + size]])


async def test_a_shard_lost_with_its_worker_is_scored_again_and_written_once() -> None:
    task = _task("t")
    written: list[bytes] = []
    pool = _pool_with([_FakeWorker({"1", "3"}, forever=False), _FakeWorker(set(), forever=False)])
    await pool.score(_offline_shards(task, 2), lambda shard, scored: written.extend(scored.lines))
    assert sorted(written) == [b"0", b"1", b"2", b"3", b"4"]
    assert pool.shards_redone >= 1


async def test_a_sample_that_keeps_killing_workers_stops_the_score_naming_it() -> None:
    from assay.runner.executors.ray import WorkerLostError

    task = _task("t")
    written: list[bytes] = []
    pool = _pool_with([_FakeWorker({"3"}, forever=True), _FakeWorker({"3"}, forever=True)])
    with pytest.raises(WorkerLostError, match=r"sample '3' of task 't': the Ray workers scoring it died \d+ times"):
        await pool.score(_offline_shards(task, 5), lambda shard, scored: written.extend(scored.lines))
    assert b"3" not in written and len(written) == len(set(written))


@pytest.mark.parametrize(
    "failure",
    [
        "Initialization failure from server:\nRuntimeError: Starting Ray client server failed. See "
        "ray_client_server_23000.err for detailed logs.",
        # seen in CI: the proxy's check of the server it had started raised
        "Initialization failure from server:\nTraceback (most recent call last):\n  ...\n"
        "psutil.ZombieProcess: PID still exists but it's a zombie (pid=21183)",
    ],
)
def test_a_ray_client_server_that_fails_to_start_is_asked_again(
    monkeypatch: pytest.MonkeyPatch, capsys, failure: str
) -> None:
    import ray

    from assay.runner.executors import ray as ray_executor

    calls: list[str] = []

    def flaky_init(address: str, **_: Any) -> None:
        calls.append(address)
        if len(calls) < 3:
            raise ConnectionAbortedError(failure)

    monkeypatch.setattr(ray, "init", flaky_init)
    monkeypatch.setattr(ray, "shutdown", lambda: None)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray_executor.time, "sleep", lambda s: None)
    assert ray_executor.connect(RayOptions(address="ray://127.0.0.1:1"))
    assert calls == ["ray://127.0.0.1:1"] * 3
    assert capsys.readouterr().err.count("connecting again") == 2

    calls.clear()

    def refused(address: str, **_: Any) -> None:
        calls.append(address)
        raise ConnectionError("ray client connection timeout")

    monkeypatch.setattr(ray, "init", refused)
    with pytest.raises(ConnectionError, match="timeout"):
        ray_executor.connect(RayOptions(address="ray://127.0.0.1:1"))
    assert len(calls) == 1  # other failures are not retried
