"""A Ray run's worker actors: how many fit on the cluster's live nodes, a bounded wait for each to start (the run
goes on with those that did and ends the others), and a bounded wait for a lost one to come back.

Why bounded: right after a node dies the cluster still counts it alive, with its CPUs, until its heartbeats are
missed (about 14 s measured here; Ray's defaults allow up to ~30 s), and an actor Ray places there, or one that
finds no free resources anywhere, waits for ever without a word. Workers are fed as soon as each one starts, so a
run never waits for the slow ones; only a run none of whose workers started stops (its samples stay pending).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable, Sequence
from typing import Any, cast

import ray
import ray.exceptions

from assay.errors import ConfigError
from assay.runner.executors import RayOptions
from assay.runner.outcomes import WorkerLost

DEFAULT_START_TIMEOUT_S = 60.0  # a worker starts in about a second; a cold node pulling its env takes longer
RETRY_S = 0.5  # between two asks whether a worker that Ray is restarting is back
CLOSE_S = 5.0  # what closing the workers' connections may take at the run's end
# failures that mean "the worker (or its node) is gone", not "the code raised": the shard is sent again
LOST = (
    ray.exceptions.RayActorError,
    ray.exceptions.ObjectLostError,
    ray.exceptions.WorkerCrashedError,
    ray.exceptions.OwnerDiedError,
    ray.exceptions.ObjectReconstructionFailedError,
)
_NOT_YET = (*LOST, ray.exceptions.ActorUnschedulableError)  # a worker that may still start, or come back


class WorkerLostError(WorkerLost):
    """A shard's samples could not be finished: the workers running them died too many times, or none is left."""


class WorkersDidNotStart(WorkerLostError):
    """None of the run's Ray workers started within the wait: the cluster has no room for them now."""


def start_timeout(options: RayOptions) -> float:
    """How long each worker may take to start, or to come back after it was lost."""
    return options.start_timeout_s if options.start_timeout_s is not None else DEFAULT_START_TIMEOUT_S


def live_nodes() -> list[dict[str, float]]:
    """The resources of each node the cluster counts alive (one that died moments ago may still be among them)."""
    return [dict(node.get("Resources") or {}) for node in ray.nodes() if node.get("Alive")]


def demand(options: RayOptions) -> dict[str, float]:
    """What one worker reserves, by Ray resource name (only what it asks for)."""
    wanted = {"CPU": options.num_cpus or 0.0, "GPU": options.num_gpus or 0.0}
    return {name: amount for name, amount in wanted.items() if amount > 0}


def describe(wants: dict[str, float]) -> str:
    """ "1 CPU and 0.5 GPU", or "no CPU or GPU"."""
    return " and ".join(f"{amount:g} {name}" for name, amount in wants.items()) or "no CPU or GPU"


def fits(node: dict[str, float], wants: dict[str, float]) -> int:
    """How many workers asking for ``wants`` fit on ``node`` (one per CPU when they ask for nothing)."""
    if not wants:
        return int(node.get("CPU", 0.0))
    return min(int(node.get(name, 0.0) / amount + 1e-9) for name, amount in wants.items())


def worker_count(options: RayOptions) -> int:
    """``--ray-workers`` if given, else as many workers as fit on the live nodes, node by node (an actor never
    spans nodes: two nodes with 1.5 CPUs each hold two 1-CPU workers, not three)."""
    if options.workers is not None:
        return options.workers
    wants = demand(options)
    return max(1, sum(fits(node, wants) for node in live_nodes()))


def check_resources(options: RayOptions) -> None:
    """A worker no live node can hold would wait for ever: say so now, naming what is missing."""
    wants = demand(options)
    nodes = live_nodes()
    if any(fits(node, wants) >= 1 for node in nodes) or (not wants and nodes):
        return
    flags = {"CPU": "--ray-num-cpus", "GPU": "--ray-num-gpus"}
    for name, amount in wants.items():
        most = max((node.get(name, 0.0) for node in nodes), default=0.0)
        if amount > most:
            raise ConfigError(
                f"each Ray worker asks for {amount:g} {name}(s) ({flags[name]} or a task's resources:) but no live "
                f"node of the cluster has that many (the most one has: {most:g}); lower it or add nodes that have them"
            )
    raise ConfigError(
        f"each Ray worker asks for {describe(wants)} (--ray-num-cpus, --ray-num-gpus or a task's resources:) but no "
        "live node of the cluster has all of that at once; lower it or add nodes that have them"
    )


class WorkerPool:
    """A run's worker actors while it runs: which have started (waited for at most ``timeout_s`` each), which were
    given up; with ``concurrency``, the run's concurrency is shared again among the workers left."""

    def __init__(
        self,
        actors: Sequence[Any],
        *,
        timeout_s: float,
        wants: dict[str, float],
        concurrency: int | None = None,
        shares: Callable[[int, int], list[int]] | None = None,
    ) -> None:
        self.actors = list(actors)
        self.timeout_s = timeout_s
        self.wants = wants
        self.concurrency = concurrency
        self._shares = shares
        self.given_up: set[int] = set()
        self._up: list[asyncio.Future[bool]] | None = None
        self._back: dict[int, asyncio.Task[bool]] = {}
        self._sharing: set[asyncio.Future[None]] = set()  # new shares on their way to the workers

    def _futures(self) -> list[asyncio.Future[bool]]:
        if self._up is None:
            loop = asyncio.get_running_loop()
            self._up = [loop.create_future() for _ in self.actors]
        return self._up

    @property
    def started(self) -> list[int]:
        """The workers that started (some may have been given up since)."""
        return [i for i, up in enumerate(self._up or []) if up.done() and not up.cancelled() and up.result()]

    def live(self) -> list[int]:
        """The workers that started and were not given up."""
        return [i for i in self.started if i not in self.given_up]

    async def up(self, i: int) -> bool:
        """Wait until worker ``i`` has started (True) or was given up at the end of the wait (False)."""
        return await asyncio.shield(self._futures()[i])

    async def watch(self) -> None:
        """Wait at most ``timeout_s`` for every worker to start; end those that did not, say so, and share the
        concurrency among the others. None started: :class:`WorkersDidNotStart`."""
        futures = self._futures()
        deadline = asyncio.get_running_loop().time() + self.timeout_s
        starts = [asyncio.ensure_future(self._start(i, deadline)) for i in range(len(self.actors))]
        try:
            await asyncio.wait(starts, return_when=asyncio.FIRST_EXCEPTION)
            for job in starts:
                if job.done() and job.exception() is not None:
                    raise cast(BaseException, job.exception())
        finally:
            for job in starts:
                job.cancel()
            for future in futures:
                if not future.done():
                    future.set_result(False)
        started, total = len(self.started), len(self.actors)
        if started == total:
            return
        for i, future in enumerate(futures):
            if not future.result():
                self._end(i)
        if not started:
            raise WorkersDidNotStart(
                f"none of the {total} Ray worker(s) started within {self.timeout_s:g} s: no live node had room for "
                f"one (each asks for {describe(self.wants)}; the cluster's are taken, or a node just lost is still "
                "counted); the run stops with its samples pending: try again once the cluster has room, or wait "
                "longer with --ray-start-timeout"
            )
        say(
            f"{started} of {total} Ray workers started within {self.timeout_s:g} s; going on with {started} "
            "(the others found no room on a live node; --ray-start-timeout waits longer)"
        )
        self._reshare()

    async def _start(self, i: int, deadline: float) -> None:
        """Ask worker ``i`` whether it runs until it answers or the deadline passes; one whose constructor
        raised will never start: a ConfigError (is assay installed on every node?)."""
        loop = asyncio.get_running_loop()
        future = self._futures()[i]
        while (left := deadline - loop.time()) > 0:
            try:
                await asyncio.wait_for(_awaited(self.actors[i].ready.remote()), left)
            except TimeoutError:
                return
            except _NOT_YET as err:
                if isinstance(err, ray.exceptions.RayActorError) and err.actor_init_failed:
                    raise ConfigError(
                        "a Ray worker could not start (is assay installed on every node, with the same version?): "
                        f"{err}"
                    ) from None
                await asyncio.sleep(min(RETRY_S, max(0.0, deadline - loop.time())))
                continue
            if not future.done():
                future.set_result(True)
            return

    async def back(self, i: int) -> bool:
        """Wait (at most ``timeout_s``, shared by the worker's feeders) until lost worker ``i`` answers again;
        False once it is given up (ended: it did not come back in time)."""
        if i in self.given_up:
            return False
        job = self._back.get(i)
        if job is None or job.done():
            job = self._back[i] = asyncio.ensure_future(self._restart(i))
        return await job

    async def _restart(self, i: int) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        while (left := deadline - loop.time()) > 0:
            try:
                await asyncio.wait_for(_awaited(self.actors[i].ready.remote()), left)
                return True
            except TimeoutError:
                break
            except _NOT_YET:
                await asyncio.sleep(min(RETRY_S, max(0.0, deadline - loop.time())))
        self._end(i)
        left_now = len(self.live())
        if left_now:
            say(
                f"a lost Ray worker did not come back within {self.timeout_s:g} s; going on with {left_now} "
                f"(--ray-start-timeout waits longer)"
            )
            self._reshare()
        return False

    def none_left(self) -> WorkerLostError:
        """The error when every feeder ended with samples left: no worker is left to run them."""
        return WorkerLostError(
            f"every Ray worker was lost and none came back within {self.timeout_s:g} s (each asks for "
            f"{describe(self.wants)}; no live node had room for it again); the run stops: its finished samples "
            "are kept, resume once the cluster has room"
        )

    def _end(self, i: int) -> None:
        self.given_up.add(i)
        with contextlib.suppress(Exception):  # already gone
            ray.kill(self.actors[i], no_restart=True)

    def _reshare(self) -> None:
        """Split the run's concurrency again among the live workers (the run's total stays the same)."""
        if self.concurrency is None or self._shares is None:
            return
        live = self.live()
        for i, share in zip(live, self._shares(self.concurrency, len(live)), strict=False):
            job = asyncio.ensure_future(_quietly(self.actors[i].share.remote(share)))
            self._sharing.add(job)
            job.add_done_callback(self._sharing.discard)

    async def stop(self) -> None:
        """Close the live workers' connections (briefly), then end every worker."""
        live = self.live()  # one that never started is not asked to close: it would not answer
        await close_and_kill([self.actors[i] for i in live], [a for i, a in enumerate(self.actors) if i not in live])


async def close_and_kill(live: list[Any], others: Sequence[Any] = ()) -> None:
    """Close ``live`` workers' connections (at most CLOSE_S), then end them and ``others``."""
    if live:
        closing = [asyncio.ensure_future(_quietly(actor.close.remote())) for actor in live]
        await asyncio.wait(closing, timeout=CLOSE_S)
    for actor in [*live, *others]:
        with contextlib.suppress(Exception):
            ray.kill(actor, no_restart=True)


def say(message: str) -> None:
    """A line for the person running the run, on stderr (as the executor's other messages)."""
    print(f"assay: {message}", file=sys.stderr, flush=True)


async def _awaited(ref: Any) -> Any:
    return await ref


async def _quietly(ref: Any) -> None:
    try:
        await ref
    except Exception:
        return
