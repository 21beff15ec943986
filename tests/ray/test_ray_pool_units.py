"""The Ray worker pool's pure parts, with stand-in actors in this process: workers sized to the live nodes, a
bounded wait for each to start (the run goes on with those that did), and a bounded wait for a lost one."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

pytest.importorskip("ray", reason="the Ray executor's tests need ray: pip install 'assay[ray]' (make test does)")

import ray
import ray.exceptions

from assay.errors import ConfigError
from assay.runner.executors import RayOptions, ray_pool
from assay.runner.executors.ray_pool import WorkerLostError, WorkersDidNotStart, check_resources, worker_count
from assay.tasks import Task, load_task


def _task() -> Task:
    return load_task(
        {
            "name": "t",
            "dataset": {"rows": [{"q": str(i), "a": str(i)} for i in range(6)]},
            "fields": {"input": "q", "target": "a"},
            "evaluators": ["exact_match"],
        }
    )


def _nodes(monkeypatch: pytest.MonkeyPatch, *nodes: tuple[bool, dict[str, float]]) -> None:
    listed = [{"Alive": alive, "Resources": resources} for alive, resources in nodes]
    monkeypatch.setattr(ray, "nodes", lambda: listed)


def test_workers_are_sized_node_by_node_from_the_live_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    _nodes(monkeypatch, (True, {"CPU": 1.5}), (True, {"CPU": 1.5, "GPU": 1.0}), (False, {"CPU": 64.0}))
    assert worker_count(RayOptions(num_cpus=1)) == 2  # not 3 (= 3.0 // 1): a worker never spans two nodes
    assert worker_count(RayOptions(num_cpus=0.5)) == 6  # the dead node's 64 CPUs count for nothing
    assert worker_count(RayOptions(num_cpus=1, num_gpus=1)) == 1  # one GPU: one worker, not one per CPU
    assert worker_count(RayOptions(num_cpus=0, num_gpus=0)) == 2  # asking for nothing: one per whole CPU
    assert worker_count(RayOptions(workers=7, num_cpus=1)) == 7  # as asked (those that do not fit: bounded wait)


def test_a_worker_no_live_node_can_hold_is_refused_naming_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    _nodes(monkeypatch, (True, {"CPU": 2.0}), (True, {"CPU": 2.0}), (False, {"CPU": 8.0, "GPU": 4.0}))
    wanted = r"asks for 3 CPU\(s\) \(--ray-num-cpus .*no live node .*the most one has: 2\)"
    with pytest.raises(ConfigError, match=wanted):
        check_resources(RayOptions(num_cpus=3, num_gpus=0))  # 4 CPUs in all, but 2 per node
    with pytest.raises(ConfigError, match=r"asks for 1 GPU\(s\) \(--ray-num-gpus .*the most one has: 0\)"):
        check_resources(RayOptions(num_cpus=1, num_gpus=1))  # only the dead node had GPUs
    check_resources(RayOptions(num_cpus=2, num_gpus=0))
    _nodes(monkeypatch, (True, {"CPU": 4.0}), (True, {"CPU": 1.0, "GPU": 1.0}))
    with pytest.raises(ConfigError, match=r"asks for 2 CPU and 1 GPU .*no live node of the cluster has all of that"):
        check_resources(RayOptions(num_cpus=2, num_gpus=1))


class _Method:
    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def remote(self, *args: Any) -> Any:
        return asyncio.ensure_future(self.fn(*args))


class _Worker:
    """An offline worker in this process that starts (or never does), and may die on its first shard for good."""

    def __init__(self, *, starts: bool = True, dies: bool = False) -> None:
        self.starts, self.dies, self.dead = starts, dies, False
        self.scored: list[str] = []
        self.ready = _Method(self._ready)
        self.score = _Method(self._score)

    async def _ready(self) -> None:
        if self.dead:
            raise ray.exceptions.RayActorError()
        if not self.starts:
            await asyncio.sleep(3600)  # no room for it anywhere: Ray keeps it pending, without a word

    async def _score(self, task_name: str, items: list, started_at: float, model_seconds: float) -> object:
        from assay.runner.executors.ray_worker import Scored

        await asyncio.sleep(0.01)
        if self.dies:
            self.dead = True
            raise ray.exceptions.RayActorError()
        self.scored += [s.id for s, _, _ in items]
        return Scored([s.id.encode() for s, _, _ in items], [None] * len(items), [0] * len(items), [None] * len(items))


def _pool(workers: list[_Worker], timeout_s: float) -> Any:
    from assay.runner.executors.ray_offline import OfflinePool

    pool = OfflinePool(RayOptions(start_timeout_s=timeout_s), [], max_response_chars=None)
    pool._actors = workers
    return pool


def _shards(task: Task, size: int) -> Any:
    from assay.runner.executors.shards import OfflineShard

    samples = task.samples()
    for i in range(0, len(samples), size):
        yield OfflineShard(task, [(s, [None], ["no answer"]) for s in samples[i : i + size]])


@pytest.fixture(autouse=True)
def _no_kills(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """``ray.kill`` on the stand-ins: recorded (the pool ends the workers it gives up)."""
    killed: list[Any] = []
    monkeypatch.setattr(ray, "kill", lambda actor, no_restart=True: killed.append(actor))
    return killed


async def test_the_run_goes_on_with_the_workers_that_started_and_ends_the_others(
    capsys: pytest.CaptureFixture[str], _no_kills: list[Any]
) -> None:
    stuck, fine = _Worker(starts=False), _Worker()
    pool = _pool([stuck, fine], timeout_s=0.3)
    written: list[bytes] = []
    await pool.score(_shards(_task(), 1), lambda shard, scored: written.extend(scored.lines))
    assert sorted(written) == [str(i).encode() for i in range(6)]  # fed at once, not after the wait
    assert pool.workers_started == 1


async def test_after_the_wait_the_stragglers_are_ended_and_the_run_says_so(
    capsys: pytest.CaptureFixture[str], _no_kills: list[Any]
) -> None:
    stuck, fine = _Worker(starts=False), _Worker()
    pool = ray_pool.WorkerPool([stuck, fine], timeout_s=0.2, wants={"CPU": 1.0})
    await pool.watch()
    assert pool.live() == [1] and _no_kills == [stuck]
    err = capsys.readouterr().err
    assert "1 of 2 Ray workers started within 0.2 s; going on with 1" in err


async def test_no_worker_started_within_the_wait_stops_with_a_clear_error(_no_kills: list[Any]) -> None:
    pool = _pool([_Worker(starts=False), _Worker(starts=False)], timeout_s=0.3)
    written: list[bytes] = []
    started = time.monotonic()
    with pytest.raises(WorkersDidNotStart, match=r"none of the 2 Ray worker\(s\) started within 0.3 s"):
        await pool.score(_shards(_task(), 2), lambda shard, scored: written.extend(scored.lines))
    assert time.monotonic() - started < 5
    assert written == [] and len(_no_kills) == 2


async def test_every_worker_lost_and_none_back_within_the_wait_stops_with_a_clear_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pool = _pool([_Worker(dies=True)], timeout_s=0.3)
    with pytest.raises(WorkerLostError, match=r"every Ray worker was lost and none came back within 0.3 s"):
        await pool.score(_shards(_task(), 2), lambda shard, scored: None)


async def test_a_lost_worker_not_back_in_time_is_given_up_and_the_others_finish(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doomed, fine = _Worker(dies=True), _Worker()
    pool = _pool([doomed, fine], timeout_s=0.3)
    written: list[bytes] = []
    await pool.score(_shards(_task(), 1), lambda shard, scored: written.extend(scored.lines))
    assert sorted(written) == [str(i).encode() for i in range(6)]
    assert len(written) == len(set(written))


def test_a_worker_takes_a_new_share_of_the_concurrency_in_place() -> None:
    from assay.runner.executors.ray_worker import ShardWorker
    from assay.runner.limiter import AttemptLimiter
    from assay.runner.scheduler import SchedulerConfig

    worker = ShardWorker([], None, SchedulerConfig(concurrency=8))  # type: ignore[arg-type]
    worker._limit = AttemptLimiter(8)
    worker._limit.limit = 5.0  # shrunk by 429s
    worker.share(16)
    assert worker.config.concurrency == 16
    assert (worker._limit.concurrency, worker._limit.limit) == (16, 13.0)
    worker.share(2)
    assert (worker._limit.concurrency, worker._limit.limit) == (2, 2.0)
