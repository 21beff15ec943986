"""Runner speed against a real local OpenAI-compatible server (in a separate process).

1. Throughput: 2,000 samples, 50 ms server latency, concurrency 64, printed as achieved ÷ the latency bound
   (samples × latency ÷ concurrency is the fastest any client could finish).
2. Client CPU per sample, with no server latency: the whole per-sample pipeline (request, HTTP, scoring, record
   written to samples.jsonl) and the HTTP call alone.
3. Start-up: from starting `assay run` as a process to the server receiving its first request, and the tail: from
   the server's last reply to the process exiting, for 2,000 samples (``ASSAY_BENCH_BASELINE_SRC=/path/to/src``
   also measures another source tree, e.g. main's, in the same session, for before/after figures).
4. Faults: the same 2,000 samples with 30 % injected faults (10 % 429 with Retry-After, 10 % 500, 10 % dropped
   connections) against the run without faults (target: ≤ 2.0×), each sample exactly once, at the default retry
   settings of ``assay run`` (nothing tuned for the benchmark); and a bare aiohttp loop with the same attempts and
   backoffs (no retry budget, no deadline) as the plain baseline. ``benchmarks/bench_retries.py`` measures this in
   more rounds, with the errored share and the slots busy.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from assay.models.base import Request
from assay.models.openai_compat import OpenAIModel
from assay.models.retry import RetryPolicy, call_with_retries
from assay.runner.progress import RunProgress
from assay.runner.scheduler import Scheduler, SchedulerConfig
from assay.runner.settings import RunSettings
from assay.store.rundir import SampleWriter
from assay.tasks import Task, load_task
from assay.testing.server import OpenAITestServer

ASSAY = [sys.executable, "-m", "assay"]


def _task(n: int) -> Task:
    rows = [{"id": f"q{i}", "question": f"What is {i} + 1?", "answer": str(i + 1)} for i in range(n)]
    return load_task(
        {
            "name": "bench",
            "dataset": {"rows": rows},
            "fields": {"id": "id", "input": "question", "target": "answer"},
            "template": "{{ question }}",
            "evaluators": [{"name": "exact_match", "strip": True}],
        }
    )


class ServerProcess:
    """``python -m assay.testing.server`` in its own process, so its CPU is not counted as the client's."""

    def __init__(self, latency_s: float, *extra: str, cmd: list[str] | None = None) -> None:
        """The test server replying "42" after ``latency_s``; ``cmd``: another server command printing its URL."""
        default = [sys.executable, "-m", "assay.testing.server", "--latency", str(latency_s), "--reply", "42", *extra]
        self.proc = subprocess.Popen(
            cmd or default,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


async def _scheduler_run(
    task: Task, base_url: str, concurrency: int, out: Path, retry: RetryPolicy | None = None
) -> tuple[float, float, int]:
    model = OpenAIModel("bench", base_url=base_url, api_key="not-a-secret", max_connections=concurrency)
    work = [(task, s) for s in task.samples()]
    # one warm-up request opens the session; it is not counted
    warm = Request(sample_id="warm", messages=[{"role": "user", "content": "hi"}])
    await call_with_retries(lambda: model.generate(warm), RetryPolicy(initial_backoff_s=0.01))
    config = SchedulerConfig(concurrency=concurrency, retry=retry or RetryPolicy())
    with SampleWriter(out) as writer:
        scheduler = Scheduler(model, writer, config, cache=None, progress=RunProgress(0, enabled=False))
        cpu0, wall0 = time.process_time(), time.perf_counter()
        stats = await scheduler.run(work)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    await model.aclose()
    ids = [json.loads(line)["sample_id"] for line in out.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == len(work), "every sample exactly once"
    return wall, cpu, len(work) - stats.errors


async def _http_only(base_url: str, n: int, concurrency: int) -> float:
    """Client CPU per request of OpenAIModel.generate alone, from ``concurrency`` workers (no runner around it)."""
    model = OpenAIModel("bench", base_url=base_url, api_key="not-a-secret", max_connections=concurrency)
    request = Request(sample_id="x", messages=[{"role": "user", "content": "What is 1 + 1?"}])
    await model.generate(request)

    async def worker(count: int) -> None:
        for _ in range(count):
            await model.generate(request)

    cpu0 = time.process_time()
    await asyncio.gather(*(worker(n // concurrency) for _ in range(concurrency)))
    cpu = time.process_time() - cpu0
    await model.aclose()
    return cpu / (n // concurrency * concurrency)


async def _bare_aiohttp(base_url: str, n: int, concurrency: int) -> float:
    """The plain baseline: the same requests from a minimal aiohttp loop (no runner, no scoring, no records)."""
    import aiohttp

    body = json.dumps({"model": "bench", "messages": [{"role": "user", "content": "What is 1 + 1?"}]}).encode()
    headers = {"Content-Type": "application/json"}
    url = base_url + "/chat/completions"
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:
        async with session.post(url, data=body, headers=headers) as warm:
            await warm.read()
        slots = asyncio.Semaphore(concurrency)

        async def one() -> None:
            async with slots, session.post(url, data=body, headers=headers) as resp:
                json.loads(await resp.read())

        start = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(n)))
        return time.perf_counter() - start


def throughput(tmp: Path, rounds: int = 3) -> None:
    n, latency, concurrency = 2000, 0.05, 64
    bound = n * latency / concurrency
    runner, bare = [], []
    with ServerProcess(latency) as server:
        for i in range(rounds):  # alternate, so both see the same machine load
            wall, _, _ = asyncio.run(_scheduler_run(_task(n), server.base_url, concurrency, tmp / f"t{i}.jsonl"))
            runner.append(wall)
            bare.append(asyncio.run(_bare_aiohttp(server.base_url, n, concurrency)))
    best, best_bare = min(runner), min(bare)
    print(f"throughput: {n} samples, {latency * 1000:.0f} ms latency, concurrency {concurrency} (best of {rounds})")
    print(f"  runner:       {best:.3f}s = {n / best:,.0f} samples/s; achieved / latency bound = {bound / best:.3f}")
    print(f"  bare aiohttp: {best_bare:.3f}s = {n / best_bare:,.0f} req/s; achieved / bound = {bound / best_bare:.3f}")
    print(f"  latency bound {bound:.3f}s (target >= 0.9 of it); runner / bare aiohttp = {best_bare / best:.3f}")


def cpu_per_request(tmp: Path, rounds: int = 3) -> None:
    n, concurrency = 5000, 64
    pipeline, http = [], []
    with ServerProcess(0.0) as server:
        for i in range(rounds):  # best of a few rounds: the 2 cores are shared with the server process
            _, cpu, written = asyncio.run(_scheduler_run(_task(n), server.base_url, concurrency, tmp / f"c{i}.jsonl"))
            pipeline.append(cpu / written)
            http.append(asyncio.run(_http_only(server.base_url, n, concurrency)))
    print(
        f"client CPU per sample, whole pipeline (request, HTTP, scoring, record), best of {rounds}: "
        f"{min(pipeline) * 1e3:.3f} ms"
    )
    print(
        f"client CPU per request, OpenAIModel.generate alone, best of {rounds}: {min(http) * 1e3:.3f} ms "
        "(target <= 0.2 ms)"
    )


FAULTS = ("--rate-429", "0.1", "--retry-after", "0.05", "--rate-500", "0.1", "--rate-drop", "0.1", "--seed", "7")
FAULT_RETRY = RunSettings().retry_policy(60.0)  # the defaults of `assay run`


async def _bare_with_retries(base_url: str, n: int, concurrency: int, policy: RetryPolicy) -> tuple[float, int]:
    """The plain baseline under faults: aiohttp, a semaphore held only while a request is on the wire, the same
    backoff and Retry-After as the runner's policy; returns (seconds, requests that succeeded)."""
    import aiohttp

    from assay.models.base import ModelError
    from assay.models.openai_compat import parse_retry_after

    headers = {"Content-Type": "application/json"}
    url = base_url + "/chat/completions"
    slots = asyncio.Semaphore(concurrency)

    async def one(session: aiohttp.ClientSession, i: int) -> bool:
        body = json.dumps({"model": "bench", "messages": [{"role": "user", "content": f"What is {i} + 1?"}]})
        for attempt in range(1, policy.max_attempts + 1):
            error = ModelError("dropped", retryable=True)
            try:
                async with slots, session.post(url, data=body.encode(), headers=headers) as resp:
                    raw = await resp.read()
                    if resp.status == 200:
                        json.loads(raw)
                        return True
                    retry_after = parse_retry_after(resp.headers)
                    error = ModelError("http", retryable=True, retry_after=retry_after, status=resp.status)
            except aiohttp.ClientError:
                pass
            if attempt < policy.max_attempts:
                await asyncio.sleep(policy.backoff(attempt, error))
        return False

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:
        while not await one(session, -1):  # warm-up
            pass
        start = time.perf_counter()
        ok = await asyncio.gather(*(one(session, i) for i in range(n)))
        return time.perf_counter() - start, sum(ok)


def faults(tmp: Path, rounds: int = 3) -> None:
    n, latency, concurrency = 2000, 0.05, 64
    figures: dict[str, list[tuple[float, int]]] = {"clean": [], "faults": [], "bare clean": [], "bare faults": []}
    with ServerProcess(latency) as clean, ServerProcess(latency, *FAULTS) as faulty:
        for i in range(rounds):  # alternate, so every variant sees the same machine load
            for name, url in (("clean", clean.base_url), ("faults", faulty.base_url)):
                out = tmp / f"f{name}{i}.jsonl"
                wall, _, ok = asyncio.run(_scheduler_run(_task(n), url, concurrency, out, FAULT_RETRY))
                figures[name].append((wall, ok))
                figures[f"bare {name}"].append(asyncio.run(_bare_with_retries(url, n, concurrency, FAULT_RETRY)))
    best = {name: min(values) for name, values in figures.items()}
    print(f"faults: {n} samples, {latency * 1000:.0f} ms latency, concurrency {concurrency}, 30 % faults "
          f"(429 + Retry-After 50 ms, 500, drop), the default retry settings: {FAULT_RETRY.max_attempts} attempts, "
          f"5xx/drops from {FAULT_RETRY.initial_backoff_s:g}s up to {FAULT_RETRY.max_backoff_s:g}s, Retry-After "
          f"exactly (best of {rounds}; every sample written exactly once)")  # fmt: skip
    for name, (wall, ok) in best.items():
        print(f"  {name:<12} {wall:.3f}s  ({ok} of {n} answered)")
    print(f"  runner with faults / without = {best['faults'][0] / best['clean'][0]:.2f} (target <= 2.0); "
          f"bare aiohttp with faults / without = {best['bare faults'][0] / best['bare clean'][0]:.2f}; "
          f"runner / bare aiohttp, with faults = {best['faults'][0] / best['bare faults'][0]:.2f}")  # fmt: skip


def startup(tmp: Path) -> None:
    baseline = os.environ.get("ASSAY_BENCH_BASELINE_SRC")
    trees = {"this tree": None, **({f"baseline {baseline}": baseline} if baseline else {})}
    for label, src in trees.items():
        first = _startup(tmp, src)
        tail = _tail(tmp, src)
        print(f"start-up ({label}): process start to first request, best {first:.3f}s; last reply to exit "
              f"(2,000 samples, -q) best {tail:.3f}s")  # fmt: skip
    print(f"  bare aiohttp process, start to first request: best {_bare_startup():.3f}s")
    bytecode = "not written (PYTHONDONTWRITEBYTECODE)" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "written"
    print(f"  (bytecode caches are {bytecode}; modules without a .pyc are compiled at every start)")


def _bare_startup(rounds: int = 3) -> float:
    """A minimal aiohttp client process: import aiohttp, post one chat completion."""
    first: list[float] = []
    code = (
        "import sys, asyncio, aiohttp\n"
        "async def main():\n"
        "    async with aiohttp.ClientSession() as s:\n"
        "        body = {'model': 'x', 'messages': [{'role': 'user', 'content': 'hi'}]}\n"
        "        async with s.post(sys.argv[1] + '/chat/completions', json=body) as r: await r.read()\n"
        "asyncio.run(main())\n"
    )

    def reply(request: dict[str, Any]) -> str:
        first.append(time.perf_counter())
        return "1"

    times = []
    with OpenAITestServer(reply) as server:
        for _ in range(rounds):
            first.clear()
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", code, server.base_url], check=True)
            times.append(first[0] - start)
    return min(times)


def _env(tmp: Path, src: str | None) -> dict[str, str]:
    env = {**os.environ, "ASSAY_CACHE_DIR": str(tmp / "cache")}
    if src is not None:
        env["PYTHONPATH"] = src
    return env


def _tail(tmp: Path, src: str | None, n: int = 2000, rounds: int = 3) -> float:
    last: list[float] = []

    def reply(request: dict[str, Any]) -> str:
        last.append(time.perf_counter())
        return "1"

    rows = [{"q": f"What is {i} + 1?", "a": str(i + 1)} for i in range(n)]
    data = tmp / "tail.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    task_path = tmp / "tail.yaml"
    task_path.write_text(
        yaml.safe_dump(
            {
                "name": "tail",
                "dataset": {"path": str(data)},
                "fields": {"input": "q", "target": "a"},
                "template": "{{ q }}",
                "evaluators": [{"name": "exact_match"}],
            }
        )
    )
    times = []
    with OpenAITestServer(reply, latency_s=0.05) as server:
        for _ in range(rounds):
            last.clear()
            args = [*ASSAY, "run", str(task_path), "--model", "openai:x", "--base-url", server.base_url, "-q"]
            args += ["--no-cache", "-c", "64", "-o", str(tmp / "runs")]
            proc = subprocess.run(args, env=_env(tmp, src), capture_output=True, text=True)
            end = time.perf_counter()
            assert proc.returncode == 0, proc.stderr
            times.append(end - max(last))
    return min(times)


def _startup(tmp: Path, src: str | None) -> float:
    first: list[float] = []
    seen = threading.Event()

    def reply(request: dict[str, Any]) -> str:
        if not first:
            first.append(time.perf_counter())
            seen.set()
        return "1"

    task_path = tmp / "startup.yaml"
    task_path.write_text(
        yaml.safe_dump(
            {
                "name": "startup",
                "dataset": {"rows": [{"q": "What is 0 + 1?", "a": "1"}]},
                "fields": {"input": "q", "target": "a"},
                "template": "{{ q }}",
                "evaluators": [{"name": "exact_match"}],
            }
        )
    )
    env = _env(tmp, src)
    times = []
    with OpenAITestServer(reply) as server:
        model_args = ["--model", "openai:x", "--base-url", server.base_url]
        for _ in range(3):
            first.clear()
            seen.clear()
            start = time.perf_counter()
            proc = subprocess.run(
                [*ASSAY, "run", str(task_path), *model_args, "-q", "--no-cache", "-o", str(tmp / "runs")],
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            assert proc.returncode == 0, proc.stderr
            assert seen.wait(5)
            times.append(first[0] - start)
    return min(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        throughput(Path(tmp))
        cpu_per_request(Path(tmp))
        faults(Path(tmp))
        startup(Path(tmp))


if __name__ == "__main__":
    main()
