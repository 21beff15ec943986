"""call_with_retries: backoff, Retry-After, per-attempt timeouts, non-retryable errors, giving up."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest
from pydantic import ValidationError

from assay.models.base import ModelError
from assay.models.retry import RetryBudget, RetryPolicy, call_with_retries
from tests.support import await_for

QUICK = RetryPolicy(max_attempts=4, initial_backoff_s=0.001, max_backoff_s=1.0, jitter=False, timeout_s=None)


def failing(errors: list[BaseException], result: str = "ok") -> tuple[Callable[[], Awaitable[str]], list[int]]:
    """A function raising ``errors`` in turn, then returning ``result``; and its call counter."""
    calls = [0]

    async def fn() -> str:
        calls[0] += 1
        if errors:
            raise errors.pop(0)
        return result

    return fn, calls


async def test_success_on_first_attempt() -> None:
    fn, calls = failing([])
    retried: list[int] = []
    assert await call_with_retries(fn, QUICK, on_retry=lambda n, e: retried.append(n)) == ("ok", 1)
    assert calls == [1] and retried == []


async def test_retryable_errors_are_retried_and_reported() -> None:
    first, second = ModelError("busy", retryable=True), ModelError("down", retryable=True)
    fn, calls = failing([first, second])
    retried: list[tuple[int, ModelError]] = []
    result = await call_with_retries(fn, QUICK, on_retry=lambda n, e: retried.append((n, e)))
    assert result == ("ok", 3) and calls == [3]
    assert retried == [(1, first), (2, second)]


async def test_non_retryable_error_is_raised_at_once_unchanged() -> None:
    error = ModelError("bad request", retryable=False)
    fn, calls = failing([error])
    with pytest.raises(ModelError) as raised:
        await call_with_retries(fn, QUICK)
    assert raised.value is error and calls == [1]


async def test_other_exceptions_propagate_at_once() -> None:
    fn, calls = failing([KeyError("bug")])
    with pytest.raises(KeyError):
        await call_with_retries(fn, QUICK)
    assert calls == [1]


async def test_gives_up_after_max_attempts_with_the_count() -> None:
    errors: list[BaseException] = [ModelError(f"HTTP 503 #{i}", retryable=True, retry_after=0.0) for i in range(5)]
    last = errors[2]
    fn, calls = failing(errors)
    policy = QUICK.model_copy(update={"max_attempts": 3})
    with pytest.raises(ModelError) as raised:
        await call_with_retries(fn, policy)
    assert str(raised.value) == "HTTP 503 #2 (gave up after 3 attempts)"
    assert raised.value.retryable and raised.value.__cause__ is last and calls == [3]


async def test_single_attempt_policy() -> None:
    fn, _ = failing([ModelError("busy", retryable=True)])
    with pytest.raises(ModelError, match=r"busy \(gave up after 1 attempt\)$"):
        await call_with_retries(fn, QUICK.model_copy(update={"max_attempts": 1}))


async def test_per_attempt_timeout_is_a_retryable_error() -> None:
    calls = [0]

    async def fn() -> str:
        calls[0] += 1
        if calls[0] == 1:
            await asyncio.sleep(30)
        return "second try"

    retried: list[str] = []
    start = time.perf_counter()
    policy = QUICK.model_copy(update={"timeout_s": 0.1})
    result = await call_with_retries(fn, policy, on_retry=lambda n, e: retried.append(f"{e} {e.retryable}"))
    assert result == ("second try", 2)
    assert retried == ["no response within 0.1s True"]
    assert time.perf_counter() - start < 5


async def test_timeout_exhaustion_message() -> None:
    async def never() -> str:
        await asyncio.sleep(30)
        return "x"

    with pytest.raises(ModelError, match=r"^no response within 0\.05s \(gave up after 2 attempts\)$"):
        await call_with_retries(never, QUICK.model_copy(update={"timeout_s": 0.05, "max_attempts": 2}))


async def test_timeout_error_raised_by_fn_itself_is_not_converted() -> None:
    fn, calls = failing([TimeoutError("socket")])
    with pytest.raises(TimeoutError, match="socket"):
        await call_with_retries(fn, QUICK.model_copy(update={"timeout_s": 10.0}))
    assert calls == [1]


async def test_no_timeout_when_none() -> None:
    async def slowish() -> str:
        await asyncio.sleep(0.15)
        return "done"

    assert await call_with_retries(slowish, QUICK) == ("done", 1)


async def test_retry_after_is_honoured() -> None:
    fn, _ = failing([ModelError("429", retryable=True, retry_after=0.3)])
    start = time.perf_counter()
    assert await call_with_retries(fn, QUICK) == ("ok", 2)
    assert 0.3 <= time.perf_counter() - start < 3


async def test_a_retry_after_past_the_deadline_fails_at_once_saying_so() -> None:
    """Before, a 600 s Retry-After was cut to max_backoff_s and waited; now no retry may start past the deadline,
    so the request fails at once and says why (one long hint cannot stall a run either way)."""
    fn, calls = failing([ModelError("429", retryable=True, retry_after=600, status=429)])
    start = time.perf_counter()
    with pytest.raises(ModelError, match=r"^429 \(gave up after 1 attempt: the server asked to wait 600s, past the "
                       r"120s retry deadline\)$"):  # fmt: skip
        await call_with_retries(fn, QUICK.model_copy(update={"deadline_s": 120.0}))
    assert calls == [1] and time.perf_counter() - start < 3


def transient(status: int | None = 500) -> ModelError:
    return ModelError("down", retryable=True, status=status)


def test_backoff_grows_exponentially_up_to_the_cap() -> None:
    policy = RetryPolicy(initial_backoff_s=0.5, max_backoff_s=3.0, jitter=False)
    assert [policy.backoff(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert [policy.backoff(n, transient()) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert policy.backoff(1000) == 3.0


def test_retry_after_is_the_wait_exactly_not_a_floor_under_the_backoff() -> None:
    """Before, the wait was max(backoff, Retry-After): a 1 s hint after the fourth failure waited the 3 s backoff."""
    policy = RetryPolicy(initial_backoff_s=0.5, max_backoff_s=3.0, jitter=False)
    hint = ModelError("429", retryable=True, retry_after=1.0, status=429)
    assert [policy.backoff(n, hint) for n in (1, 4, 50)] == [1.0, 1.0, 1.0]
    jittered = RetryPolicy()
    assert {jittered.backoff(n, hint) for n in range(1, 10) for _ in range(20)} == {1.0}
    assert policy.backoff(3, ModelError("503", retryable=True, retry_after=0.25, status=503)) == 0.25


def test_the_default_backoffs_per_error_class() -> None:
    policy = RetryPolicy()
    fast = [policy.backoff(n, transient(status)) for n in (1, 2, 8) for status in (500, 503, None) for _ in range(50)]
    assert all(0.0 <= d <= 1.0 for d in fast)  # 5xx and dropped connections: from 25 ms, capped at 1 s
    assert all(0.0 <= policy.backoff(1, transient()) <= 0.025 for _ in range(50))
    assert max(policy.backoff(20, transient()) for _ in range(200)) > 0.5  # the cap is reached, not exceeded
    limited = ModelError("429", retryable=True, status=429)  # a 429 without Retry-After: from about 1 s
    assert all(0.5 <= policy.backoff(1, limited) <= 1.0 for _ in range(50))
    assert all(15.0 <= policy.backoff(10, limited) <= 30.0 for _ in range(50))
    exact = RetryPolicy(jitter=False)
    assert [exact.backoff(n, limited) for n in (1, 2, 3, 6, 7)] == [1.0, 2.0, 4.0, 30.0, 30.0]
    assert [exact.backoff(n, transient()) for n in (1, 2, 3, 6, 7)] == [0.025, 0.05, 0.1, 0.8, 1.0]


def test_full_jitter_stays_within_the_ceiling() -> None:
    policy = RetryPolicy(initial_backoff_s=1.0, max_backoff_s=30.0)
    draws = [policy.backoff(3) for _ in range(500)]
    assert all(0.0 <= d <= 4.0 for d in draws)
    assert min(draws) < 1.0 and max(draws) > 3.0  # spread over the range, not a fixed value


async def test_no_retry_starts_past_the_deadline() -> None:
    errors: list[BaseException] = [transient() for _ in range(1000)]
    fn, calls = failing(errors)
    policy = QUICK.model_copy(update={"max_attempts": 1000, "initial_backoff_s": 0.05, "deadline_s": 0.3})
    with pytest.raises(ModelError, match=r"another retry would pass the 0\.3s retry deadline\)$"):
        await call_with_retries(fn, policy)
    assert 2 <= calls[0] < 20  # it retried, then stopped long before max_attempts


def test_the_default_deadline_leaves_room_for_one_retry_after_a_timeout() -> None:
    assert RetryPolicy().deadline == 120.0  # the 60 s timeout: two of them fit
    assert RetryPolicy(timeout_s=300.0).deadline == 600.0  # a long --timeout: a timed-out attempt is tried again
    assert RetryPolicy(timeout_s=None).deadline == 120.0
    assert RetryPolicy(timeout_s=300.0, deadline_s=5.0).deadline == 5.0  # a deadline given wins


def test_the_budget_allows_a_share_of_the_requests_plus_the_floor() -> None:
    budget = RetryBudget(0.5, 10, concurrency=4)
    assert budget.capacity == 10 + 0.5 * 10 * 4
    assert sum(budget.spend() for _ in range(50)) == 10  # a run that fails from the start: the floor only
    for _ in range(100):
        budget.sent()
    assert sum(budget.spend() for _ in range(200)) == 30  # the capacity (10 + 20) holds what 100 requests earned
    assert budget.spent == 40 and budget.refused == 40 + 170


async def test_a_spent_budget_fails_the_retry_at_once_with_a_clear_message() -> None:
    budget = RetryBudget(0.5, 1)
    fn, calls = failing([transient(), transient(), transient()])
    with pytest.raises(ModelError, match=r"gave up after 2 attempts: the run's retry budget is spent \(retries may "
                       r"add at most 50% to the requests sent, plus 1\)"):  # fmt: skip
        await call_with_retries(fn, QUICK, budget=budget)
    assert calls == [2]  # the first attempt added 0.5 tokens: one retry was allowed by the floor, none after


async def test_429s_do_not_spend_the_budget() -> None:
    budget = RetryBudget(0.0, 0)
    limited = [ModelError("429", retryable=True, retry_after=0.0, status=429) for _ in range(3)]
    fn, _ = failing(list(limited))
    assert await call_with_retries(fn, QUICK, budget=budget) == ("ok", 4)
    assert budget.spent == 0 and budget.refused == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_attempts": 0},
        {"initial_backoff_s": -1},
        {"timeout_s": 0},
        {"deadline_s": 0},
        {"retry_budget": -0.1},
        {"max_atempts": 3},
    ],
)
def test_invalid_policy(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValidationError, match=next(iter(kwargs))):
        RetryPolicy(**kwargs)


async def test_cancellation_during_backoff_propagates() -> None:
    fn, calls = failing([ModelError("busy", retryable=True, retry_after=30)])
    task = asyncio.create_task(call_with_retries(fn, QUICK.model_copy(update={"max_backoff_s": 30.0})))
    # once the first attempt has failed the task waits out its 30 s backoff (its next step after that failure)
    await await_for(lambda: calls[0] == 1, 10, "the first attempt")
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
