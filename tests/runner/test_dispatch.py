"""Ray runs hand shards to workers as they free up: the work is read no further ahead than the shards out, lost
shards go first, and the first feeder that raises stops the run."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from assay.runner.executors.dispatch import ShardQueue, feed_all, next_shard


def test_shards_are_read_as_workers_free_up_and_lost_ones_are_redone_first() -> None:
    read: list[int] = []
    done: list[int] = []

    def shards() -> Iterator[int]:
        for i in range(10):
            read.append(i)
            yield i

    async def feeder(queue: ShardQueue[int], lose: set[int]) -> None:
        while (shard := await next_shard(queue)) is not None:
            try:
                assert len(read) - len(done) <= 3 + 1  # never more read than out (3 feeders) plus a redo
                await asyncio.sleep(0.001 * (shard % 3))
                if shard in lose:
                    lose.discard(shard)
                    queue.redo.append(shard)  # lost with its worker: sent again
                else:
                    done.append(shard)
            finally:
                queue.busy -= 1
                queue.poke()

    async def main() -> None:
        queue: ShardQueue[int] = ShardQueue(shards())
        lose = {2, 7}
        await feed_all(queue, [feeder(queue, lose) for _ in range(3)])

    asyncio.run(main())
    assert sorted(done) == list(range(10)) and len(done) == 10  # every shard once, lost ones included


def test_a_feeder_that_raises_stops_the_others() -> None:
    async def failing(queue: ShardQueue[int]) -> None:
        await next_shard(queue)
        raise RuntimeError("worker lost too often")

    async def waiting(queue: ShardQueue[int]) -> None:
        while (await next_shard(queue)) is not None:
            await asyncio.sleep(10)

    async def main() -> None:
        queue: ShardQueue[int] = ShardQueue(iter(range(5)))
        await feed_all(queue, [failing(queue), waiting(queue)])

    with pytest.raises(RuntimeError, match="worker lost too often"):
        asyncio.run(asyncio.wait_for(main(), 5))


def test_runs_cut_consecutive_values_of_one_key_at_most_size_at_a_time() -> None:
    from assay.runner.pending import runs

    a, b = object(), object()
    pairs = [(a, 1), (a, 2), (a, 3), (b, 4), (a, 5)]
    assert list(runs(iter(pairs), 2)) == [(a, [1, 2]), (a, [3]), (b, [4]), (a, [5])]
    assert list(runs([], 3)) == []
