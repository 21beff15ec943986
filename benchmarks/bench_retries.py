"""Retries at the default settings (issue 25): a run with 30 % faults against the same run without, several rounds.

2,000 samples, 50 ms server latency, concurrency 64, against ``python -m assay.testing.server`` in its own process.
The faults are 10 % 429 with Retry-After, 10 % 500 and 10 % dropped connections (seeded). The retry policy is the
one ``assay run`` builds from its default settings (``RunSettings().retry_policy``): nothing is tuned for the
benchmark. Printed per round: seconds, the ratio to the clean run of the same round, samples errored, requests
sent per sample, the time by which 99 % of samples were written, and the mean number of the 64 attempt slots busy
until then (sampled every 5 ms). Targets: with faults <= 2.0x the clean run and <= 0.1 % of samples errored; with
``--max-attempts 10`` no errors and <= 2.5x.

``python -m benchmarks retries`` (``ASSAY_BENCH_ROUNDS`` rounds, default 5; ``ASSAY_BENCH_RETRY_AFTER`` the 429s'
Retry-After in seconds, default 0.05).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from assay.models.base import Request
from assay.models.openai_compat import OpenAIModel
from assay.runner.progress import RunProgress
from assay.runner.scheduler import Scheduler, SchedulerConfig
from assay.runner.settings import RunSettings
from assay.store.rundir import SampleWriter
from benchmarks.bench_runner import ServerProcess, _task

N, LATENCY, CONCURRENCY = 2000, 0.05, 64


def _faults(retry_after: float) -> tuple[str, ...]:
    return ("--rate-429", "0.1", "--retry-after", f"{retry_after:g}", "--rate-500", "0.1", "--rate-drop", "0.1",
            "--seed", "7")  # fmt: skip


@dataclass
class Round:
    seconds: float
    errors: int
    attempts: int  # requests sent (first attempts and retries)
    p99_s: float  # when 99 % of the samples were written
    busy: float  # mean attempts in flight until then
    cpu_s: float  # this process's CPU time (the server runs in another)
    first_error: str | None  # what the first errored sample said


async def _run(base_url: str, settings: RunSettings, out: Path) -> Round:
    model = OpenAIModel("bench", base_url=base_url, api_key="not-a-secret", max_connections=CONCURRENCY)
    warm = Request(sample_id="warm", messages=[{"role": "user", "content": "hi"}])
    for _ in range(20):  # open the session; a fault on the warm-up request is simply tried again
        try:
            await model.generate(warm)
            break
        except Exception:
            await asyncio.sleep(0.01)
    task = _task(N)
    work = [(task, s) for s in task.samples()]
    config = SchedulerConfig(concurrency=settings.concurrency, retry=settings.retry_policy(model.timeout_s))
    trace: list[tuple[float, int, int]] = []  # (seconds, attempts in flight, samples written)
    with SampleWriter(out) as writer:
        scheduler = Scheduler(model, writer, config, cache=None, progress=RunProgress(0, enabled=False))

        async def sample_slots() -> None:
            while True:
                trace.append((time.perf_counter() - start, scheduler.limiter.in_flight, scheduler.stats.written))
                await asyncio.sleep(0.005)

        start, cpu = time.perf_counter(), time.process_time()
        sampler = asyncio.create_task(sample_slots())
        stats = await scheduler.run(work)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        sampler.cancel()
    await model.aclose()
    ids = [json.loads(line)["sample_id"] for line in out.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == len(work), "every sample exactly once"
    p99 = next((t for t, _, written in trace if written >= 0.99 * N), seconds)
    bulk = [busy for t, busy, _ in trace if t <= p99] or [0]
    attempts = stats.requests + stats.retries
    return Round(seconds, stats.errors, attempts, p99, statistics.fmean(bulk), cpu, stats.first_error)


def _line(name: str, r: Round, clean: Round) -> str:
    return (
        f"  {name:<16} {r.seconds:6.2f}s {r.seconds / clean.seconds:5.2f}x  errors {r.errors:2d} "
        f"({r.errors / N:.2%})  requests/sample {r.attempts / N:.2f}  99% by {r.p99_s:5.2f}s  "
        f"slots busy {r.busy:4.1f}/{CONCURRENCY}  client CPU {r.cpu_s:5.2f}s"
    )


def main() -> None:
    rounds = int(os.environ.get("ASSAY_BENCH_ROUNDS", "5"))
    retry_after = float(os.environ.get("ASSAY_BENCH_RETRY_AFTER", "0.05"))
    defaults = RunSettings(concurrency=CONCURRENCY)
    ten = RunSettings(concurrency=CONCURRENCY, max_attempts=10)
    policy = defaults.retry_policy(60.0)
    print(f"retries: {N} samples, {LATENCY * 1000:.0f} ms latency, concurrency {CONCURRENCY}; faults: 10 % 429 "
          f"(Retry-After {retry_after:g} s), 10 % 500, 10 % dropped connections; default retry settings:")  # fmt: skip
    print(f"  {policy!r}")
    ratios: dict[str, list[float]] = {"faults": [], "faults, 10 att.": []}
    errors: dict[str, list[int]] = {"faults": [], "faults, 10 att.": []}
    servers = ServerProcess(LATENCY), ServerProcess(LATENCY, *_faults(retry_after))
    with tempfile.TemporaryDirectory() as tmp, servers[0] as clean_server, servers[1] as faulty:
        for i in range(rounds):  # alternate, so every variant sees the same machine load
            clean = asyncio.run(_run(clean_server.base_url, defaults, Path(tmp) / f"c{i}.jsonl"))
            faults = asyncio.run(_run(faulty.base_url, defaults, Path(tmp) / f"f{i}.jsonl"))
            tens = asyncio.run(_run(faulty.base_url, ten, Path(tmp) / f"t{i}.jsonl"))
            print(f"round {i + 1}:", flush=True)
            for name, r in (("clean", clean), ("faults", faults), ("faults, 10 att.", tens)):
                print(_line(name, r, clean), flush=True)
                if r.first_error:
                    print(f"    first error: {r.first_error[-120:]}")
                if name != "clean":
                    ratios[name].append(r.seconds / clean.seconds)
                    errors[name].append(r.errors)
    for name, target, most in (("faults", 2.0, 0.001), ("faults, 10 att.", 2.5, 0.0)):
        print(f"{name}: {min(ratios[name]):.2f}-{max(ratios[name]):.2f}x the clean run (target <= {target}); "
              f"errored samples per round {errors[name]} of {N} (target <= {most:.1%})")  # fmt: skip


if __name__ == "__main__":
    main()
