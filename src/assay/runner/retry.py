"""Retries with exponential backoff and full jitter, honouring Retry-After, with a per-attempt timeout."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from assay.models.base import ModelError

T = TypeVar("T")


class RetryPolicy(BaseModel):
    """How often and how patiently a failed request is retried.

    Attempt ``n`` (from 1) that fails with a retryable ModelError waits a random time in
    ``[0, min(max_backoff_s, initial_backoff_s * 2**(n-1))]`` ("full jitter"; exactly the upper bound when
    ``jitter`` is False). When the error carries ``retry_after`` (a 429's Retry-After), the wait is at least
    ``min(retry_after, max_backoff_s)``: the server's hint is honoured up to ``max_backoff_s``, so one long hint
    cannot stall a run. ``timeout_s`` bounds each attempt (None: no bound); a timeout is a retryable error.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_attempts: int = Field(default=6, ge=1)
    initial_backoff_s: float = Field(default=0.5, ge=0)
    max_backoff_s: float = Field(default=30.0, ge=0)
    jitter: bool = True
    timeout_s: float | None = Field(default=60.0, gt=0)

    def backoff(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        ceiling = min(self.max_backoff_s, self.initial_backoff_s * 2.0 ** min(attempt - 1, 60))
        delay = random.uniform(0.0, ceiling) if self.jitter else ceiling
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.max_backoff_s))
        return delay


async def attempt_once(fn: Callable[[], Awaitable[T]], policy: RetryPolicy) -> T:
    """Await ``fn()`` once within ``policy.timeout_s``; running out of time is a retryable ModelError."""
    if policy.timeout_s is None:
        return await fn()
    try:
        async with asyncio.timeout(policy.timeout_s) as deadline:
            return await fn()
    except TimeoutError as err:
        if not deadline.expired():
            raise  # a TimeoutError raised by fn itself: not ours to interpret
        raise ModelError(f"no response within {policy.timeout_s:g}s", retryable=True) from err


def gave_up(error: ModelError, attempts: int) -> ModelError:
    """The error a request ends with after its last attempt, saying how many attempts were made."""
    plural = "s" if attempts > 1 else ""
    final = ModelError(
        f"{error} (gave up after {attempts} attempt{plural})", retryable=True, retry_after=error.retry_after
    )
    final.__cause__ = error
    return final


async def call_with_retries(
    fn: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    on_retry: Callable[[int, ModelError], None] | None = None,
) -> tuple[T, int]:
    """Await ``fn()`` until it succeeds; return (result, attempts used).

    Retryable ModelErrors (and attempts that exceed ``policy.timeout_s``) are retried after a backoff;
    ``on_retry(attempt, error)`` is called before each wait. A non-retryable ModelError is raised at once, unchanged;
    any other exception propagates. After ``max_attempts`` the last error is raised again as a ModelError whose
    message ends with the number of attempts.
    """
    attempt = 0
    while True:
        attempt += 1
        try:
            return await attempt_once(fn, policy), attempt
        except ModelError as err:
            error = err
        if not error.retryable:
            raise error
        if attempt >= policy.max_attempts:
            raise gave_up(error, attempt)
        if on_retry is not None:
            on_retry(attempt, error)
        await asyncio.sleep(policy.backoff(attempt, error.retry_after))
