"""call_with_retries: backoff, Retry-After, per-attempt timeouts, non-retryable errors, giving up."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest
from pydantic import ValidationError

from assay.models.base import ModelError
from assay.runner.retry import RetryPolicy, call_with_retries

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


async def test_retry_after_is_capped_by_max_backoff() -> None:
    fn, _ = failing([ModelError("429", retryable=True, retry_after=600)])
    start = time.perf_counter()
    assert await call_with_retries(fn, QUICK.model_copy(update={"max_backoff_s": 0.1})) == ("ok", 2)
    assert time.perf_counter() - start < 3


def test_backoff_grows_exponentially_up_to_the_cap() -> None:
    policy = RetryPolicy(initial_backoff_s=0.5, max_backoff_s=3.0, jitter=False)
    assert [policy.backoff(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert policy.backoff(1, retry_after=2.5) == 2.5 and policy.backoff(4, retry_after=1.0) == 3.0
    assert policy.backoff(1000) == 3.0


def test_full_jitter_stays_within_the_ceiling() -> None:
    policy = RetryPolicy(initial_backoff_s=1.0, max_backoff_s=30.0)
    draws = [policy.backoff(3) for _ in range(500)]
    assert all(0.0 <= d <= 4.0 for d in draws)
    assert min(draws) < 1.0 and max(draws) > 3.0  # spread over the range, not a fixed value
    assert all(policy.backoff(1, retry_after=2.0) >= 2.0 for _ in range(50))


@pytest.mark.parametrize(
    "kwargs", [{"max_attempts": 0}, {"initial_backoff_s": -1}, {"timeout_s": 0}, {"max_atempts": 3}]
)
def test_invalid_policy(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValidationError, match=next(iter(kwargs))):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


async def test_cancellation_during_backoff_propagates() -> None:
    fn, _ = failing([ModelError("busy", retryable=True, retry_after=30)])
    task = asyncio.create_task(call_with_retries(fn, QUICK.model_copy(update={"max_backoff_s": 30.0})))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
