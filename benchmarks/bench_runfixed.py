"""The runner's fixed cost per run: what a tiny run (20 samples, like each candidate run of ``assay optimize``)
spends outside waiting on the model.

A real local OpenAI-compatible server in its own process answers after 50 ms. Each row is the median wall time of
one ``arun_outcome`` over many runs, against the plain baseline in the same process: the same 20 requests at the
same concurrency and nothing else. The runner's old per-run cost (a ``git`` child per run: the commit is now asked
of git once per directory and repository state) is toggled back on for the "before" row, interleaved run by run
with "after" so a busy shared machine affects both alike. The phase table is wall-clock time per step of the
"after" runs.
"""

from __future__ import annotations

import asyncio
import collections
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SAMPLES = 20
CONCURRENCY = 8
LATENCY_S = 0.05
RUNS = 40
SERVER = (
    "import sys, threading\n"
    "from assay.testing.server import OpenAITestServer\n"
    "srv = OpenAITestServer(lambda body: 'yes', latency_s=float(sys.argv[1]))\n"
    "srv.start(); print(srv.base_url, flush=True); threading.Event().wait()\n"
)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


class Phases:
    """Wall-clock time spent in named functions of the runner, per run."""

    def __init__(self) -> None:
        self.current: dict[str, float] = collections.defaultdict(float)
        self.runs: dict[str, list[float]] = collections.defaultdict(list)
        self.undo: list[Callable[[], None]] = []

    def wrap(self, owner: Any, name: str, label: str) -> None:
        fn = getattr(owner, name)
        current = self.current

        if asyncio.iscoroutinefunction(fn):

            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                t = time.perf_counter()
                try:
                    return await fn(*args, **kwargs)
                finally:
                    current[label] += time.perf_counter() - t

            setattr(owner, name, timed_async)
        else:

            def timed(*args: Any, **kwargs: Any) -> Any:
                t = time.perf_counter()
                try:
                    return fn(*args, **kwargs)
                finally:
                    current[label] += time.perf_counter() - t

            setattr(owner, name, timed)
        self.undo.append(lambda: setattr(owner, name, fn))

    def end_run(self, keep: bool) -> None:
        if keep:
            for label, seconds in self.current.items():
                self.runs[label].append(seconds)
        self.current.clear()

    def restore(self) -> None:
        for undo in reversed(self.undo):
            undo()


async def _plain(base_url: str) -> float:
    from assay.models.base import Request
    from assay.models.openai_compat import OpenAIModel

    model = OpenAIModel("assay-test", base_url=base_url)
    slots = asyncio.Semaphore(CONCURRENCY)
    req = Request(sample_id="x", messages=[{"role": "user", "content": "Question: q1"}])

    async def one() -> None:
        async with slots:
            await model.generate(req)

    t0 = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(SAMPLES)))
    wall = time.perf_counter() - t0
    await model.aclose()
    return wall


def main() -> None:
    import assay.api as api
    import assay.results.writer as writer
    import assay.runner.gitinfo as gitinfo
    import assay.runner.session as session
    import assay.store.rundir as rundir
    from assay.models.openai_compat import OpenAIModel
    from assay.runner.scheduler import Scheduler

    server = subprocess.Popen([sys.executable, "-c", SERVER, str(LATENCY_S)], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    base_url = server.stdout.readline().strip()
    phases = Phases()
    for owner, name, label in [
        (api, "load_tasks", "load the task"),
        (session, "start_manifest", "start manifest (git hash, task info)"),
        (session, "write_manifest", "write run.json (start and end)"),
        (Scheduler, "run", "request loop (scheduler.run)"),
        (rundir.SampleWriter, "close", "close samples.jsonl (fsync)"),
        (writer, "write_results", "write_results"),
        (writer, "compute_results", "  write_results: compute_results (figures and sample logs)"),
        (writer, "atomic_write_text", "  write_results: atomic_write_text (results.json, fsync)"),
    ]:
        phases.wrap(owner, name, label)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp) / "data.jsonl"
            rows = (json.dumps({"id": str(i), "q": f"q{i}", "a": "yes"}) + "\n" for i in range(SAMPLES))
            data.write_text("".join(rows))
            task = {
                "name": "tiny",
                "dataset": {"path": str(data)},
                "fields": {"id": "id", "input": "q", "target": "a"},
                "template": "Question: {{ q }}",
                "evaluators": [{"name": "exact_match"}],
            }

            async def one() -> float:
                model = OpenAIModel("assay-test", base_url=base_url)
                t0 = time.perf_counter()
                await api.arun_outcome(
                    task, model, output_dir=Path(tmp) / "runs", cache=False, concurrency=CONCURRENCY, progress=False
                )
                return time.perf_counter() - t0

            asyncio.run(one())  # warm: imports, first git call
            phases.end_run(keep=False)
            walls: dict[str, list[float]] = {"before": [], "after": []}
            plains: list[float] = []
            for _ in range(RUNS):
                for label in ("before", "after"):
                    if label == "before":
                        gitinfo._CACHE.clear()  # a git child per run
                    walls[label].append(asyncio.run(one()))
                    phases.end_run(keep=label == "after")
                plains.append(asyncio.run(_plain(base_url)))
    finally:
        phases.restore()
        server.kill()
        server.wait()
    floor = _median(plains)
    print(f"{SAMPLES} samples, concurrency {CONCURRENCY}, {LATENCY_S * 1000:.0f} ms latency, median of {RUNS} runs")
    print(f"  plain baseline (same requests, nothing else): {floor * 1000:7.1f} ms")
    for label, values in walls.items():
        wall = _median(values)
        print(
            f"  assay run, {label:6s}: {wall * 1000:7.1f} ms  = {wall / floor:.2f}x plain; "
            f"fixed cost {(wall - floor) * 1000:5.1f} ms per run"
        )
    print("  per phase ('after' runs, median ms):")
    for label, values in phases.runs.items():
        print(f"    {label:58s} {_median(values) * 1000:7.1f}")
