"""Client CPU per request: a bare aiohttp loop vs OpenAIModel.generate (and the retry wrapper, the response cache).

The test server runs in a separate process (``python -m assay.testing.server``) with no latency, so the figures
are the client process's CPU time (``time.process_time``) divided by the number of requests. Target: OpenAIModel
at most 0.2 ms of client CPU per request.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp

from assay.models.base import Request, Response, Usage
from assay.models.cache import ResponseCache
from assay.models.openai_compat import OpenAIModel
from assay.models.retry import RetryPolicy, call_with_retries

REQUESTS = int(os.environ.get("BENCH_CLIENT_REQUESTS", "5000"))
CONCURRENCY = 64
ROUNDS = int(os.environ.get("BENCH_CLIENT_ROUNDS", "3"))
WARMUP = 300
MESSAGES = [
    {"role": "system", "content": "Answer with a single word."},
    {"role": "user", "content": "What is the capital of France? Think about it and answer briefly."},
]


def start_server() -> tuple[subprocess.Popen[str], str]:
    """The test server as a child process; returns it and its base URL (the first line it prints)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "assay.testing.server", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http://"):
        proc.kill()
        raise RuntimeError(f"the test server did not start (printed {url!r})")
    return proc, url


async def drive(call: Callable[[int], Awaitable[object]], n: int, concurrency: int) -> None:
    """Run ``call(i)`` for i in range(n) with ``concurrency`` workers."""
    counter = iter(range(n))

    async def worker() -> None:
        for i in counter:
            await call(i)

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def measure(call: Callable[[int], Awaitable[object]], n: int) -> tuple[float, float]:
    """(CPU ms per request, requests per second) of ``n`` calls after a warm-up."""
    await drive(call, WARMUP, CONCURRENCY)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    await drive(call, n, CONCURRENCY)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return cpu / n * 1000, n / wall


async def bench_bare(url: str) -> tuple[float, float]:
    """A bare aiohttp loop posting the same JSON body and decoding the reply."""
    body = json.dumps({"model": "bench", "messages": MESSAGES, "temperature": 0}).encode()
    headers = {"Content-Type": "application/json", "Authorization": "Bearer sk-bench"}
    connector = aiohttp.TCPConnector(limit=256)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as session:

        async def call(_: int) -> object:
            async with session.post(url + "/chat/completions", data=body, headers=headers) as resp:
                return json.loads(await resp.read())

        return await measure(call, REQUESTS)


async def bench_model(url: str, *, retries: bool) -> tuple[float, float]:
    """OpenAIModel.generate, optionally wrapped in call_with_retries (with its per-attempt timeout)."""
    model = OpenAIModel("bench", base_url=url, api_key="sk-bench", params={"temperature": 0})
    request = Request(sample_id="s", messages=MESSAGES)
    policy = RetryPolicy()

    async def call(_: int) -> object:
        if retries:
            return await call_with_retries(lambda: model.generate(request), policy)
        return await model.generate(request)

    try:
        return await measure(call, REQUESTS)
    finally:
        await model.aclose()


def bench_cache(n: int = 5000) -> tuple[float, float, float]:
    """CPU ms per key(), put() and get() (hit) of the SQLite response cache."""
    model = OpenAIModel("bench", base_url="http://127.0.0.1:1/v1", params={"temperature": 0})
    with tempfile.TemporaryDirectory() as tmp:
        cache = ResponseCache(Path(tmp) / "responses.sqlite")
        requests = [
            Request(sample_id=str(i), messages=[*MESSAGES, {"role": "user", "content": str(i)}]) for i in range(n)
        ]
        response = Response(text="Paris", usage=Usage(input_tokens=20, output_tokens=1), latency_s=0.2, model="bench")
        t0 = time.process_time()
        keys = [cache.key(model, r) for r in requests]
        t1 = time.process_time()
        for k in keys:
            cache.put(k, response)
        t2 = time.process_time()
        for k in keys:
            assert cache.get(k) is not None
        t3 = time.process_time()
        cache.close()
    return (t1 - t0) / n * 1000, (t2 - t1) / n * 1000, (t3 - t2) / n * 1000


def main() -> None:
    """Print client CPU ms per request for each variant, the ratio to bare aiohttp, and the cache's costs.

    The variants run in alternating rounds and the lowest CPU figure of each is reported: on a shared machine the
    minimum is the least noisy estimate of the work a request costs.
    """
    proc, url = start_server()
    variants: dict[str, Callable[[], Awaitable[tuple[float, float]]]] = {
        "bare aiohttp": lambda: bench_bare(url),
        "OpenAIModel.generate": lambda: bench_model(url, retries=False),
        "+ call_with_retries": lambda: bench_model(url, retries=True),
    }
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    try:
        print(f"{REQUESTS} requests at concurrency {CONCURRENCY}, {ROUNDS} rounds, against {url} (a separate process)")
        for _ in range(ROUNDS):
            for name, run in variants.items():
                figures[name].append(asyncio.run(run()))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    bare = min(cpu for cpu, _ in figures["bare aiohttp"])
    for name, runs in figures.items():
        cpu = min(c for c, _ in runs)
        rounds = " ".join(f"{c:.3f}" for c, _ in runs)
        rps = max(r for _, r in runs)
        print(
            f"  {name:<22} {cpu:.3f} ms CPU/request  x{cpu / bare:.2f} bare  (rounds: {rounds}; up to {rps:,.0f} req/s)"
        )
    model = min(c for c, _ in figures["OpenAIModel.generate"])
    verdict = "meets" if model <= 0.2 else "MISSES"
    print(f"  OpenAIModel {verdict} the 0.2 ms target (overhead over bare aiohttp: {model - bare:+.3f} ms)")
    key_ms, put_ms, get_ms = bench_cache()
    print(f"  response cache: key {key_ms:.3f} ms, put {put_ms:.3f} ms, get (hit) {get_ms:.3f} ms CPU per call")


if __name__ == "__main__":
    main()
