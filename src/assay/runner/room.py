"""The samples a run has in progress, where a sample waiting only to retry holds no place (issue 25).

A sample is busy while it waits for a place of the attempt limiter, is on the wire or is being scored; it is parked
while every one of its unanswered requests backs off before a retry. The request loop starts a new sample while
fewer than ``2 × concurrency`` are busy, so a few unlucky samples sleeping through their backoffs never keep the
others from being sent (before, they filled the places: 20-28 of 64 attempt slots were busy in a run with 30 %
faults); the parked bound keeps an outage from piling up every sample of a run in memory. One event loop uses it.
"""

from __future__ import annotations

import asyncio

# samples that may wait to retry, outside the samples busy, per place of the concurrency (see Room)
PARKED_PER_SLOT = 8


class Room:
    """The samples in progress: at most ``size`` busy (waiting for a place of the limiter, on the wire, or being
    scored) and at most ``parked_size`` parked. A sample whose every unanswered request is backing off before a
    retry is parked: it holds no place among the busy ones, so a few unlucky samples sleeping through their
    backoffs never keep new samples from being sent; the parked bound keeps an outage from piling up every sample
    of a run in memory."""

    def __init__(self, size: int, parked_size: int) -> None:
        self.size = size
        self.parked_size = parked_size
        self.busy = 0
        self.parked = 0
        self.most_parked = 0  # the most samples parked at once (for tests and benchmarks)
        self._changed = asyncio.Event()

    async def enter(self) -> Place:
        """Wait until a new sample may start; the caller must :meth:`Place.left` the place it gets."""
        while self.busy >= self.size or self.parked >= self.parked_size:
            self._changed.clear()
            await self._changed.wait()
        self.busy += 1
        return Place(self)

    def _moved(self, busy: int, parked: int) -> None:
        self.busy += busy
        self.parked += parked
        self.most_parked = max(self.most_parked, self.parked)
        if busy < 0 or parked < 0:
            self._changed.set()


class Place:
    """One sample's place in the :class:`Room`: busy, or parked while all its unanswered requests back off."""

    def __init__(self, room: Room) -> None:
        self.room = room
        self.unanswered = 0  # requests not yet finished
        self.backing_off = 0  # of those, waiting to be retried
        self.parked = False
        self.gone = False

    def fetching(self, requests: int) -> None:
        """The sample's ``requests`` are about to be sent."""
        self.unanswered = requests
        self._update()

    def answered(self) -> None:
        """One request finished (answered or failed for good)."""
        self.unanswered -= 1
        self._update()

    def backoff(self, started: bool) -> None:
        """A request starts (``started``) or ends waiting to be retried."""
        self.backing_off += 1 if started else -1
        self._update()

    def left(self, _job: object = None) -> None:
        """The sample is done (written, failed or cancelled); a task's done callback."""
        if not self.gone:
            self.gone = True
            self.room._moved(0 if self.parked else -1, -1 if self.parked else 0)

    def _update(self) -> None:
        parked = 0 < self.unanswered == self.backing_off
        if parked != self.parked and not self.gone:
            self.parked = parked
            self.room._moved(-1 if parked else 1, 1 if parked else -1)
