"""The shards of a Ray run handed to its workers as they free up: read from the work as it is reached (so the driver
never holds the whole run), with lost shards sent again before new ones."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, Generic, TypeVar, cast

S = TypeVar("S")


class ShardQueue(Generic[S]):
    """What a run's feeders share: the shards still to read, the lost ones to send again, how many are out."""

    def __init__(self, shards: Iterator[S]) -> None:
        self.shards: Iterator[S] | None = shards
        self.redo: deque[S] = deque()
        self.busy = 0
        self.changed = asyncio.Event()
        self.done = asyncio.Event()

    def take(self) -> S | None:
        """A lost shard to redo, else the next one read from the work, else None (for now)."""
        if self.redo:
            return self.redo.popleft()
        if self.shards is not None:
            shard = next(self.shards, None)
            if shard is not None:
                return shard
            self.shards = None
        return None

    def settled(self) -> bool:
        """True once every shard was read and finished (none out, none to redo)."""
        if self.shards is None and not self.redo and self.busy == 0:
            self.done.set()
            return True
        return False

    def poke(self) -> None:
        """A shard ended (finished or lost): wake the feeders waiting for one."""
        self.changed.set()
        self.settled()


async def feed_all(
    queue: ShardQueue[Any],
    feeders: list[Coroutine[Any, Any, None]],
    none_left: Callable[[], BaseException] | None = None,
) -> None:
    """Run the feeders until every shard is finished; the first feeder that raises stops the others and raises.
    A feeder may end early (its worker was given up); once every one has ended with shards left, ``none_left()``
    is raised (there is nobody left to run them)."""
    jobs: list[asyncio.Task[Any]] = [asyncio.create_task(feeder) for feeder in feeders]
    finished: asyncio.Task[Any] = asyncio.create_task(queue.done.wait())
    try:
        running = set(jobs)
        while running:
            done, running = await asyncio.wait({finished, *running}, return_when=asyncio.FIRST_COMPLETED)
            for job in done:
                if job is not finished and not job.cancelled() and job.exception() is not None:
                    raise cast(BaseException, job.exception())
            if finished.done():
                return
            running.discard(finished)
        if not queue.settled():
            raise (none_left() if none_left is not None else RuntimeError("every shard feeder ended early"))
    finally:
        for job in [finished, *jobs]:
            job.cancel()
        await asyncio.gather(finished, *jobs, return_exceptions=True)


async def next_shard(queue: ShardQueue[S]) -> S | None:
    """The next shard for a feeder, waiting while others are out (a lost one may come back); None when all done."""
    while True:
        shard = queue.take()
        if shard is not None:
            queue.busy += 1
            return shard
        if queue.settled():
            return None
        queue.changed.clear()
        await queue.changed.wait()
