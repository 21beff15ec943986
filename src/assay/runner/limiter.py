"""How many request attempts may be in flight: a cap that 429s shrink and successes grow back (AIMD).

A retrying request gives its place back while it backs off, so the cap counts attempts on the wire, never waits.
A 429 lowers the cap by ``decrease`` (down to 1) and each success raises it by one (up to ``concurrency``). As in
TCP, only a 429 to an attempt sent after the last decrease lowers the cap again, so one burst of 429s (all sent under
the old cap) counts once: a server that keeps rate limiting the client (most answers are 429) slows the whole client
down round trip after round trip, while occasional 429s cost little. At the floor, a 429's Retry-After pauses every
new attempt until it has passed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque


class AttemptLimiter:
    """A fair (first come, first served) semaphore whose size adapts to 429s; see the module docstring."""

    # 0.9, measured (`python -m benchmarks runner`, 30 % faults of which 10 % are 429s): 0.75 made the run take
    # 1.64-1.85x the clean one, more than a bare aiohttp loop (1.35-1.47x); 0.9 gives 1.28-1.50x, and a server
    # that keeps answering 429 still brings the cap from 64 to 1 in about 40 round trips
    def __init__(self, concurrency: int, *, decrease: float = 0.9) -> None:
        self.concurrency = concurrency
        self.limit = float(concurrency)
        self.decrease = decrease
        self.in_flight = 0
        self.throttled = 0  # 429s seen
        self.pauses = 0  # times the client paused for a Retry-After
        self._pause_until = 0.0
        self._last_decrease = float("-inf")
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def cap(self) -> int:
        """Attempts allowed in flight now."""
        return max(1, int(self.limit))

    def _now(self) -> float:
        return asyncio.get_running_loop().time()

    def _open(self) -> bool:
        return self.in_flight < self.cap and self._now() >= self._pause_until

    async def acquire(self) -> None:
        """Wait for a place (behind earlier waiters); the caller must :meth:`release` it."""
        if not self._waiters and self._open():
            self.in_flight += 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut  # granted: in_flight was counted for us
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release()  # granted and cancelled at once: give the place on
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(fut)
            raise

    def release(self) -> None:
        self.in_flight -= 1
        self._grant()

    def _grant(self) -> None:
        while self._waiters and self._open():
            fut = self._waiters.popleft()
            if fut.done():
                continue
            self.in_flight += 1
            fut.set_result(None)

    def succeeded(self) -> None:
        """An attempt got an answer: one more place, up to ``concurrency``."""
        if self.limit < self.concurrency:
            self.limit = min(float(self.concurrency), self.limit + 1.0)
            self._grant()

    def now(self) -> float:
        """The clock ``rate_limited`` expects for ``sent_at``."""
        return self._now()

    def rate_limited(self, retry_after: float | None, sent_at: float | None = None) -> None:
        """An attempt (sent at ``sent_at``, by :meth:`now`) got a 429: fewer places, once per round trip; at the
        floor, pause new attempts for the server's Retry-After."""
        self.throttled += 1
        at_floor = self.limit <= 1.0
        if sent_at is None or sent_at >= self._last_decrease:
            self.limit = max(1.0, self.limit * self.decrease)
            self._last_decrease = self._now()
        if at_floor and retry_after:
            until = self._now() + retry_after
            if until > self._pause_until:
                self._pause_until = until
                self.pauses += 1
                asyncio.get_running_loop().call_at(until, self._grant)
