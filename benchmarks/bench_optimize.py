"""Optimisation overhead: everything ``assay optimize`` does besides waiting on models, per candidate evaluation.

The bundled demo (reflective strategy) runs against a real local OpenAI-compatible server in its own process that
answers after 50 ms, as the task model and as the optimiser model. Both models are timed from the client side:
the time with at least one request in flight is "waiting on models"; the rest of the wall time (run folders,
scoring, results, the journal and the call log, Optuna/Pareto bookkeeping, the final comparison) is the overhead,
reported per candidate evaluation and as a share of wall time (target: under 5 %). The plain baseline sends the
same number of requests with the same concurrency and nothing else.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

import yaml

from assay.models.base import Model, Request, Response
from assay.models.openai_compat import OpenAIModel

LATENCY_S = 0.05
CONCURRENCY = 8
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "optimize_format"
SERVER = (
    "import sys, threading\n"
    "from assay.optimize.demo import reply_text\n"
    "from assay.testing.server import OpenAITestServer, last_user_text\n"
    "srv = OpenAITestServer(lambda r: reply_text(last_user_text(r)), latency_s=float(sys.argv[1]))\n"
    "srv.start(); print(srv.base_url, flush=True); threading.Event().wait()\n"
)


class Timed(Model):
    """Delegates to a model and records when requests were in flight (union of intervals = waiting on models)."""

    provider: ClassVar[str] = "openai"

    def __init__(self, inner: OpenAIModel, log: list[tuple[float, float]]) -> None:
        self.inner = inner
        self.name = inner.name
        self.log = log
        self.log_own: list[tuple[float, float]] | None = None

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    async def generate(self, request: Request) -> Response:
        t0 = time.perf_counter()
        try:
            return await self.inner.generate(request)
        finally:
            self.log.append((t0, time.perf_counter()))
            if self.log_own is not None:
                self.log_own.append((t0, time.perf_counter()))

    async def aclose(self) -> None:
        await self.inner.aclose()


def busy(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of intervals."""
    total, end = 0.0, -1.0
    for a, b in sorted(intervals):
        if a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


async def plain(base_url: str, n: int) -> float:
    """The same number of requests, same concurrency, nothing else: the floor."""
    model = OpenAIModel("assay-test", base_url=base_url)
    slots = asyncio.Semaphore(CONCURRENCY)
    req = Request(sample_id="x", messages=[{"role": "user", "content": "Question: Is 3 greater than 2?"}])

    async def one() -> None:
        async with slots:
            await model.generate(req)

    t0 = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(n)))
    wall = time.perf_counter() - t0
    await model.aclose()
    return wall


def warm_up() -> None:
    """Import everything an optimisation uses, so that one-time import costs are not counted per evaluation."""
    import assay.optimize.reflective
    import assay.report.table
    import assay.results.compare
    import assay.results.writer
    import assay.runner.session  # noqa: F401
    from assay.tasks import load_task

    load_task(EXAMPLE / "task.yaml")  # imports what building a task needs (jsonschema, the evaluators)


def measure(base_url: str, label: str, budget: int, **overrides: Any) -> None:
    """One optimisation of the demo with both models timed; prints where the wall time went."""
    import assay.api
    from assay.optimize import aoptimize

    log: list[tuple[float, float]] = []
    task_model = Timed(OpenAIModel("assay-test", base_url=base_url), log)
    opt_model = Timed(OpenAIModel("assay-test", base_url=base_url), log)
    opt_model.log_own = []
    task = yaml.safe_load((EXAMPLE / "task.yaml").read_text())
    task["dataset"] = {"path": str(EXAMPLE / "questions.jsonl")}
    runs: list[tuple[float, float]] = []
    plain_arun = assay.api.arun_outcome

    async def timed_run(*args: Any, **kwargs: Any) -> Any:  # the runner's share: time inside each run
        t = time.perf_counter()
        try:
            return await plain_arun(*args, **kwargs)
        finally:
            runs.append((t, time.perf_counter()))

    with tempfile.TemporaryDirectory() as tmp:
        assay.api.arun_outcome = timed_run  # type: ignore[assignment]
        try:
            t0 = time.perf_counter()
            result = asyncio.run(
                aoptimize(
                    task, task_model, optimizer_model=opt_model, budget=budget, output_dir=Path(tmp),
                    run_settings={"concurrency": CONCURRENCY}, **overrides,  # the response cache is off by default
                )
            )  # fmt: skip
            t_end = time.perf_counter()
        finally:
            assay.api.arun_outcome = plain_arun  # type: ignore[assignment]
        evals = sum(1 for line in (result.folder / "journal.jsonl").open() if '"kind": "eval"' in line)
    wall = t_end - t0
    requests = len(log)
    waiting = busy(log)
    overhead = wall - waiting
    own_waits = set(opt_model.log_own)
    runner = sum(b - a for a, b in runs) - busy([iv for iv in log if iv not in own_waits])
    fixed = (runs[0][0] - t0) + (t_end - runs[-1][1])  # set-up before the first run, verdict after the last
    own = overhead - runner - fixed
    floor = asyncio.run(plain(base_url, requests))
    print(
        f"{label}: {evals} candidate evaluations (ordinary runs), {requests} model requests, "
        f"improved: {result.improved}"
    )
    print(
        f"  wall {wall:.2f} s; waiting on models {waiting:.2f} s; overhead {overhead:.2f} s = {overhead / wall:.1%} "
        f"of wall time (target < 5%)"
    )
    print(
        f"  per candidate evaluation: {overhead / evals * 1000:.1f} ms overhead, of which the runner (folder, "
        f"manifest and results fsyncs, scoring, results) {runner / evals * 1000:.1f} ms and the optimiser's own "
        f"(task build, reading the run back, journal, strategy) {own / evals * 1000:.1f} ms = {own / wall:.1%}"
    )
    print(f"  once per optimisation: set-up and final verdict (paired test, outputs) {fixed * 1000:.0f} ms")
    print(
        f"  plain baseline (the same {requests} requests, same concurrency, nothing else): {floor:.2f} s; "
        f"ratio {wall / floor:.2f}x"
    )


def main() -> None:
    t_import = time.perf_counter()
    warm_up()
    print(
        f"(one-time imports, before the clock: {time.perf_counter() - t_import:.2f} s; model latency "
        f"{LATENCY_S * 1000:.0f} ms, concurrency {CONCURRENCY}; the server runs in its own process)"
    )
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(LATENCY_S)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    base_url = proc.stdout.readline().strip()
    try:
        measure(base_url, "reflective demo", 400)
        space = {"temperature": {"type": "float", "low": 0.0, "high": 1.0}}
        measure(base_url, "search, 15 TPE trials in 3 parts each", 2000, strategy="search", space=space,
                trials=15, prune=False)  # fmt: skip
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
