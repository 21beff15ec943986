"""Retries that back off by error class, honour Retry-After exactly, stop at a deadline and spend from a budget."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from assay.models.base import ModelError

T = TypeVar("T")

# the defaults a run uses (RunSettings and `assay run` take theirs from here)
DEFAULT_MAX_ATTEMPTS = 8
DEFAULT_DEADLINE_S = 120.0
DEFAULT_RETRY_BUDGET = 0.5


class RetryPolicy(BaseModel):
    """How often, how patiently and how much a failed request is retried.

    The wait before retry ``n`` (after failed attempt ``n``, from 1) depends on what failed:

    - the server said when (``Retry-After`` / ``retry-after-ms`` on a 429 or a 503): exactly that long, for that
      request; the global 429 limiter (:mod:`assay.runner.limiter`) paces the whole client on top of it;
    - a 429 without a hint: ``[c/2, c]`` seconds, ``c = min(rate_limit_max_backoff_s, rate_limit_backoff_s *
      2**(n-1))`` (1 s, 2 s, 4 s, … up to 30 s by default);
    - anything else retryable (5xx, 408/409, a dropped or refused connection, a timeout): a random time in
      ``[0, min(max_backoff_s, initial_backoff_s * 2**(n-1))]`` ("full jitter": 25 ms, 50 ms, … up to 1 s).

    ``jitter=False`` waits the upper bound exactly. A request is retried at most ``max_attempts - 1`` times, and no
    retry starts later than the retry deadline after its first attempt was sent (a Retry-After that would end past
    it fails the request at once, saying so): ``deadline_s``, by default (None) the longer of 120 s and two attempt
    timeouts, so a request whose first attempt timed out is still tried once more. ``timeout_s`` bounds each attempt
    (None: no bound); a timeout is a retryable error. A request thus ends within about the deadline plus one
    ``timeout_s``, whatever ``max_attempts`` is.

    ``retry_budget`` (None: no budget) keeps an outage from multiplying the load: retries of errors other than 429s
    may add at most this share to the first attempts sent, plus a reserve of ``retry_budget_floor`` (a token bucket,
    see :class:`RetryBudget`). When it is spent, a failing request fails at once with a message that says so. 429s do
    not spend from it: the limiter already slows the client down for them.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_attempts: int = Field(default=DEFAULT_MAX_ATTEMPTS, ge=1)
    # 25 ms up to 1 s: measured (benchmarks/bench_retries.py), 50 ms up to 2 s left the few samples that fail 6-7
    # times in a row retrying for up to 5 s after the rest of a 30 %-fault run was done (1.3-2.4x the clean run)
    initial_backoff_s: float = Field(default=0.025, ge=0)
    max_backoff_s: float = Field(default=1.0, ge=0)
    rate_limit_backoff_s: float = Field(default=1.0, ge=0)
    rate_limit_max_backoff_s: float = Field(default=30.0, ge=0)
    jitter: bool = True
    timeout_s: float | None = Field(default=60.0, gt=0)
    deadline_s: float | None = Field(default=None, gt=0)  # None: max(DEFAULT_DEADLINE_S, 2 × timeout_s)
    retry_budget: float | None = Field(default=DEFAULT_RETRY_BUDGET, ge=0)
    retry_budget_floor: int = Field(default=100, ge=0)

    @property
    def deadline(self) -> float:
        """Seconds after a request's first attempt past which no retry starts."""
        if self.deadline_s is not None:
            return self.deadline_s
        return max(DEFAULT_DEADLINE_S, 2.0 * (self.timeout_s or 0.0))

    def backoff(self, attempt: int, error: ModelError | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based) that failed with ``error``."""
        if error is not None and error.retry_after is not None:
            return error.retry_after
        exponent = 2.0 ** min(attempt - 1, 60)
        if error is not None and error.status == 429:
            ceiling = min(self.rate_limit_max_backoff_s, self.rate_limit_backoff_s * exponent)
            return random.uniform(ceiling / 2, ceiling) if self.jitter else ceiling
        ceiling = min(self.max_backoff_s, self.initial_backoff_s * exponent)
        return random.uniform(0.0, ceiling) if self.jitter else ceiling


class RetryBudget:
    """A token bucket shared by a run's requests: retries may add at most ``ratio`` of the first attempts sent, plus
    a reserve, so a server that fails every request gets about ``(1 + ratio) × requests`` attempts, not
    ``max_attempts ×`` (as gRPC's retry throttling and Finagle's and AWS's retry budgets do).

    The bucket starts with ``floor`` tokens; each first attempt adds ``ratio`` tokens and each retry takes one. It
    holds at most ``floor + ratio × 10 × concurrency`` tokens (what about ten rounds of requests earn), so a burst of
    failures among the requests in flight is covered while a long healthy run does not save up retries for an
    outage: in any stretch of a run, retries <= that capacity + ``ratio`` × the first attempts sent in it. One event
    loop uses it (no lock).
    """

    ROUNDS = 10  # rounds of requests in flight whose tokens the bucket holds

    def __init__(self, ratio: float, floor: int, *, concurrency: int = 1) -> None:
        self.ratio = ratio
        self.floor = floor
        self.capacity = floor + ratio * self.ROUNDS * max(1, concurrency)
        self.tokens = float(floor)
        self.spent = 0  # retries allowed
        self.refused = 0  # retries refused: the budget was spent

    @classmethod
    def of(cls, policy: RetryPolicy, concurrency: int = 1) -> RetryBudget | None:
        """The budget ``policy`` asks for (None for none), for ``concurrency`` requests in flight."""
        if policy.retry_budget is None:
            return None
        return cls(policy.retry_budget, policy.retry_budget_floor, concurrency=concurrency)

    def sent(self) -> None:
        """A first attempt was sent: ``ratio`` more tokens, up to the capacity."""
        self.tokens = min(self.capacity, self.tokens + self.ratio)

    def spend(self) -> bool:
        """Take a token for a retry; False when there is none (the retry must not be made)."""
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            self.spent += 1
            return True
        self.refused += 1
        return False

    def describe(self) -> str:
        """The budget in words, for error messages."""
        return f"retries may add at most {self.ratio:.0%} to the requests sent, plus {self.floor}"


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


def gave_up(error: ModelError, attempts: int, why: str | None = None) -> ModelError:
    """The error a request ends with after its last attempt, saying how many attempts were made (and why no more)."""
    plural = "s" if attempts > 1 else ""
    reason = f": {why}" if why else ""
    final = ModelError(
        f"{error} (gave up after {attempts} attempt{plural}{reason})",
        retryable=True,
        retry_after=error.retry_after,
        status=error.status,
    )
    final.__cause__ = error
    return final


def next_wait(
    policy: RetryPolicy, error: ModelError, attempt: int, elapsed: float, budget: RetryBudget | None = None
) -> float:
    """Seconds to wait before retrying a request whose attempt number ``attempt`` failed with ``error``, ``elapsed``
    seconds after its first attempt started; raise the ModelError the request ends with when it must not be retried
    (``error`` itself when it is not retryable). A retry allowed here has spent its token of ``budget``."""
    if not error.retryable:
        raise error
    if attempt >= policy.max_attempts:
        raise gave_up(error, attempt)
    wait = policy.backoff(attempt, error)
    deadline = policy.deadline
    if elapsed + wait > deadline:
        if error.retry_after is not None and wait > 1.0:
            why = f"the server asked to wait {wait:g}s, past the {deadline:g}s retry deadline"
        else:
            why = f"another retry would pass the {deadline:g}s retry deadline"
        raise gave_up(error, attempt, why)
    if budget is not None and error.status != 429 and not budget.spend():
        why = f"the run's retry budget is spent ({budget.describe()}): the server fails too many requests"
        raise gave_up(error, attempt, why)
    return wait


async def call_with_retries(
    fn: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    on_retry: Callable[[int, ModelError], None] | None = None,
    budget: RetryBudget | None = None,
) -> tuple[T, int]:
    """Await ``fn()`` until it succeeds; return (result, attempts used).

    Retryable ModelErrors (and attempts that exceed ``policy.timeout_s``) are retried after :func:`next_wait`;
    ``on_retry(attempt, error)`` is called before each wait. A non-retryable ModelError is raised at once, unchanged;
    any other exception propagates. When no retry may follow (``max_attempts``, the deadline, the budget) the last
    error is raised again as a ModelError whose message ends with the number of attempts and why.
    """
    loop = asyncio.get_running_loop()
    started = loop.time()
    attempt = 0
    if budget is not None:
        budget.sent()
    while True:
        attempt += 1
        try:
            return await attempt_once(fn, policy), attempt
        except ModelError as err:
            error = err
        wait = next_wait(policy, error, attempt, loop.time() - started, budget)
        if on_retry is not None:
            on_retry(attempt, error)
        await asyncio.sleep(wait)
