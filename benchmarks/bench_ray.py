"""The Ray executor against the local one, on this machine (a local Ray instance with 2 CPUs).

1. CPU-bound scoring: a deliberately heavy custom evaluator (~25 ms of hashing per sample), local vs Ray with 1
   and 2 worker processes, as speed-up ratios (target: >= 1.7x with 2 workers on 2 cores).
2. Overhead per sample of the Ray path on a cheap evaluator (exact_match, an instant Python model).
3. Model-bound: the 50 ms-latency local server (its own process), 16,000 samples, as achieved / latency bound
   (target >= 0.8), end to end and over the request phase (first request to last answer, from the records).
4. The single writer's ceiling: records/s the driver can take in (render requests, receive, count, append).
5. Offline scoring engines: Ray Data ``map_batches`` vs actors fed shards, both over ``evaluate_batch``.
6. Offline scoring as users run it: a predictions run and ``assay score`` of 100,000 records, local vs Ray with 2
   workers, in records/s, with the driver's own CPU time per record (the single writer's share of the work).

``python -m benchmarks.bench_ray offline`` (or any of: writer, overhead, latency, cpu, engines) runs only those.

Ray's own start (a local instance) is timed apart: every Ray figure above runs on an instance already up, and
includes starting and stopping the run's worker actors.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import pickle
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from assay.api import arun_outcome
from assay.runner.executors import RayOptions
from assay.runner.progress import RunProgress
from assay.runner.scheduler import SchedulerConfig
from assay.store.rundir import SampleWriter
from assay.tasks import Task, load_task
from benchmarks.bench_runner import ServerProcess

ROOT = Path(__file__).resolve().parent.parent
HEAVY_ROUNDS = 80_000  # sha256 rounds per sample: about 25 ms of one core here (25,000 were 7.8 ms, measured)


def answer(prompt: str) -> str:
    """The benchmark's model: answers instantly (the last word of the prompt)."""
    return prompt.split()[-1]


def heavy(actual: Any, expected: str) -> bool:
    """A deliberately CPU-heavy check: hash the answer many times, then compare."""
    text = str(getattr(actual, "text", actual))
    digest = text.encode()
    for _ in range(HEAVY_ROUNDS):
        digest = hashlib.sha256(digest).digest()
    return text.strip() == str(expected)


def _task(n: int, evaluator: dict[str, Any]) -> Task:
    rows = [{"id": f"q{i}", "question": f"Repeat {i}", "answer": str(i)} for i in range(n)]
    return load_task(
        {
            "name": "bench",
            "dataset": {"rows": rows},
            "fields": {"id": "id", "input": "question", "target": "answer"},
            "template": "{{ question }}",
            "evaluators": [evaluator],
        }
    )


async def _timed(task: Task, model: Any, executor: str, out: Path, **ray: Any) -> float:
    settings: dict[str, Any] = {"executor": executor, "ray": RayOptions(**ray)} if executor == "ray" else {}
    started = time.perf_counter()
    outcome = await arun_outcome(
        task, model, output_dir=out, cache=False, progress=False, bootstrap_iters=0, concurrency=64, **settings
    )
    seconds = time.perf_counter() - started
    assert outcome.status == "finished" and outcome.errors == 0, outcome
    first = json.loads((outcome.run_dir / "samples.jsonl").open().readline())
    assert all(v["error"] is None for f in first["filters"].values() for vs in f["verdicts"].values() for v in vs)
    return seconds


def _cpu_bound(out: Path) -> None:
    n = 1200  # about 30 s locally: tens of seconds, as the issue asks (worker start, 0.5-1.3 s, is a fixed cost)
    task = _task(n, {"name": "custom", "fn": "benchmarks.bench_ray:heavy"})
    model = "python:benchmarks.bench_ray:answer"
    local = asyncio.run(_timed(task, model, "local", out))
    one = asyncio.run(_timed(task, model, "ray", out, workers=1))
    two = asyncio.run(_timed(task, model, "ray", out, workers=2))
    print(f"cpu-bound, {n} samples x ~{HEAVY_ROUNDS} sha256 rounds (custom evaluator):")
    print(f"  local executor          {local:7.2f} s   {n / local:7.1f} samples/s   1.00x")
    print(f"  ray, 1 worker           {one:7.2f} s   {n / one:7.1f} samples/s   {local / one:.2f}x")
    print(f"  ray, 2 workers          {two:7.2f} s   {n / two:7.1f} samples/s   {local / two:.2f}x  (target >= 1.7x)")


def _overhead(out: Path) -> None:
    n = 3000
    task = _task(n, {"name": "exact_match", "strip": True})
    model = "python:benchmarks.bench_ray:answer"
    one = _task(1, {"name": "exact_match", "strip": True})
    local = min(asyncio.run(_timed(task, model, "local", out)) for _ in range(2))
    ray2 = min(asyncio.run(_timed(task, model, "ray", out, workers=2)) for _ in range(2))
    fixed = min(asyncio.run(_timed(one, model, "ray", out, workers=2)) for _ in range(2))
    local_fixed = min(asyncio.run(_timed(one, model, "local", out)) for _ in range(2))
    per_local, per_ray = (local - local_fixed) / (n - 1), (ray2 - fixed) / (n - 1)
    print(f"cheap evaluator, {n} samples (exact_match, instant model), best of 2:")
    print(
        f"  local executor   {local:7.2f} s   {1e6 * per_local:6.0f} us/sample  (a 1-sample run: {local_fixed:.2f} s)"
    )
    print(f"  ray, 2 workers   {ray2:7.2f} s   {1e6 * per_ray:6.0f} us/sample  (a 1-sample run: {fixed:.2f} s)")
    extra = fixed - local_fixed
    print(
        f"  ray overhead     {1e6 * (per_ray - per_local):+7.0f} us/sample, plus {extra:.2f} s per run (worker start)"
    )


def _request_phase(run_dir: Path) -> float:
    """Seconds from the first request sent to the last answer in, from the records (each sample's ``started_at``
    and ``model_seconds``, stamped where it ran: a Ray worker on this machine shares the driver's clock)."""
    first, last = float("inf"), 0.0
    with open(run_dir / "samples.jsonl", "rb") as fh:
        for line in fh:
            record = json.loads(line)
            first = min(first, record["started_at"])
            last = max(last, record["started_at"] + record["model_seconds"])
    return last - first


def _latency_bound(out: Path) -> None:
    """End to end (worker start and results included) and over the request phase (first request to last answer,
    as issue 12 measured the local runner): a run's fixed costs (for Ray, starting its worker actors: 0.4-1.3 s
    here) weigh on a short run whatever each sample costs."""
    n, concurrency, latency = 16000, 64, 0.05
    task = _task(n, {"name": "exact_match", "strip": True})
    bound = n * latency / concurrency
    walls: dict[str, float] = {}
    phases: dict[str, float] = {}
    with ServerProcess(latency) as server:
        spec = {"provider": "openai", "model": "bench", "base_url": server.base_url, "api_key": "not-a-secret"}
        for name, executor, ray in (("local executor", "local", {}), ("ray, 2 workers", "ray", {"workers": 2})):
            runs = out / f"latency-{executor}"
            walls[name] = asyncio.run(_timed(task, spec, executor, runs, **ray))
            (run_dir,) = runs.iterdir()
            phases[name] = _request_phase(run_dir)
    print(f"model-bound, {n} samples, 50 ms server, concurrency {concurrency} (bound {bound:.2f} s):")
    for name, wall in walls.items():
        print(
            f"  {name:16s} {wall:7.2f} s   {bound / wall:.2f} of the latency bound end to end; request phase "
            f"{phases[name]:.2f} s = {bound / phases[name]:.2f} of the bound (target >= 0.8)"
        )


def _writer_ceiling(out: Path) -> None:
    """What the driver does per record, without any worker: render the request (and look the cache up, here
    off), unpickle the encoded record as Ray delivers it, count it and append it to samples.jsonl."""
    from assay.models.registry import load_model
    from assay.runner.executors.ray import RayExecutor, _Shard
    from assay.runner.executors.ray_worker import finished
    from assay.runner.scheduler import Scheduler
    from assay.testing.server import OpenAITestServer

    n = 5000
    task = _task(n, {"name": "exact_match", "strip": True})
    samples = task.samples()

    # real records, made once by the local loop against an instant server
    with OpenAITestServer("7") as server:
        spec = {"provider": "openai", "model": "m", "base_url": server.base_url, "api_key": "k"}
        asyncio.run(arun_outcome(task, spec, output_dir=out / "w", cache=False, progress=False, bootstrap_iters=0))
    from assay.results import load_run

    records = load_run(next((out / "w").iterdir())).records
    sent = [finished(record) for record in records]  # what workers send: encoded lines and counts
    blobs = [pickle.dumps(sent[i : i + 64]) for i in range(0, len(sent), 64)]
    with SampleWriter(out / "ceiling.jsonl") as writer:
        executor = RayExecutor(
            load_model("openai:m", base_url="http://127.0.0.1:9/v1"),  # never called here
            writer,
            SchedulerConfig(),
            cache=None,
            progress=RunProgress(n, enabled=False),
            options=RayOptions(),
        )
        started = time.perf_counter()
        for i in range(0, n, 64):
            executor._requests(_Shard(task, samples[i : i + 64]))
        for blob in blobs:
            executor._account(pickle.loads(blob))  # a worker's message: a list of finished samples
        seconds = time.perf_counter() - started
    assert isinstance(executor, Scheduler)
    print(f"single writer (driver), {n} records: {n / seconds:,.0f} records/s ({1e6 * seconds / n:.0f} us/record)")


def _engines() -> None:
    """Score 200,000 (output, expected) pairs with exact_match's columnar path, results back in the driver."""
    import ray

    from assay import evaluators

    n, chunk = 200_000, 2_000
    outputs = [str(i % 977) for i in range(n)]
    expected = [str(i % 977) if i % 5 else "x" for i in range(n)]
    em = evaluators.get("exact_match", strip=True)

    started = time.perf_counter()
    local = np.concatenate([em.evaluate_batch(outputs[i : i + chunk], expected[i : i + chunk]).scores
                            for i in range(0, n, chunk)])  # fmt: skip
    t_local = time.perf_counter() - started

    @ray.remote(num_cpus=1)
    class Scorer:
        def __init__(self) -> None:
            from assay import evaluators

            self.em = evaluators.get("exact_match", strip=True)

        def score(self, outs: list[str], exps: list[str]) -> Any:
            return self.em.evaluate_batch(outs, exps).scores

    started = time.perf_counter()
    actors = [Scorer.remote() for _ in range(2)]  # type: ignore[attr-defined]
    refs = [actors[k % 2].score.remote(outputs[i : i + chunk], expected[i : i + chunk])
            for k, i in enumerate(range(0, n, chunk))]  # fmt: skip
    core = np.concatenate(ray.get(refs))
    t_core = time.perf_counter() - started
    for actor in actors:
        ray.kill(actor)

    try:
        import ray.data

        ray.data.DataContext.get_current().enable_progress_bars = False
        logging.getLogger("ray.data").setLevel(logging.WARNING)
    except ImportError:
        print("offline engines: ray.data is not installed (pip install 'ray[data]'); Ray Data not measured")
        return

    def score_batch(batch: dict[str, Any]) -> dict[str, Any]:
        from assay import evaluators

        scorer = evaluators.get("exact_match", strip=True)
        return {"score": scorer.evaluate_batch(list(batch["output"]), list(batch["expected"])).scores}

    started = time.perf_counter()
    ds = ray.data.from_items([{"output": o, "expected": e} for o, e in zip(outputs, expected, strict=True)])
    parts = [b["score"] for b in ds.map_batches(score_batch, batch_size=chunk).iter_batches(batch_size=chunk)]
    data = np.concatenate(parts)
    t_data = time.perf_counter() - started
    assert np.array_equal(local, core) and np.array_equal(np.sort(local), np.sort(data))
    print(f"offline engines, {n:,} pairs through exact_match.evaluate_batch, results back in the driver:")
    print(f"  in-process loop         {t_local:7.2f} s   {n / t_local:10,.0f} pairs/s")
    print(f"  ray core, 2 actors      {t_core:7.2f} s   {n / t_core:10,.0f} pairs/s")
    print(f"  ray data, map_batches   {t_data:7.2f} s   {n / t_data:10,.0f} pairs/s")


def _offline_task(root: Path, n: int) -> tuple[Path, Path]:
    """A task file over ``n`` rows (exact_match and token_f1) and a predictions file answering 80 % of them right."""
    with open(root / "rows.jsonl", "w") as rows, open(root / "preds.jsonl", "w") as preds:
        for i in range(n):
            rows.write(json.dumps({"id": f"q{i}", "question": f"What is {i} + {i + 1}?", "answer": str(2 * i + 1)}))
            rows.write("\n")
            said = str(2 * i + 1) if i % 5 else f"about {2 * i}"
            preds.write(json.dumps({"id": f"q{i}", "prediction": said}) + "\n")
    config = {
        "name": "offline",
        "dataset": {"path": "rows.jsonl"},
        "fields": {"id": "id", "input": "question", "target": "answer"},
        "template": "Answer briefly. {{ question }}",
        "evaluators": [{"name": "exact_match", "strip": True}, "token_f1"],
    }
    (root / "task.json").write_text(json.dumps(config))
    return root / "task.json", root / "preds.jsonl"


def _offline(out: Path) -> None:
    """Wall seconds and the driver's CPU seconds (this process: reading, answering, writing) of a predictions
    run and of a re-score, local vs Ray with 2 workers (the workers' CPU is theirs, not counted)."""
    from assay.runner.rescore import rescore

    n = 100_000
    root = out / "offline"
    root.mkdir()
    task_file, preds = _offline_task(root, n)
    task = load_task(task_file)
    ray2 = {"executor": "ray", "ray": RayOptions(workers=2)}

    def timed(make: Any) -> tuple[float, float, Path]:
        wall, cpu = time.perf_counter(), time.process_time()
        run_dir = asyncio.run(make())
        return time.perf_counter() - wall, time.process_time() - cpu, run_dir

    async def run(**executor: Any) -> Path:
        outcome = await arun_outcome(
            task, f"predictions:{preds}", output_dir=root / "runs", progress=False, bootstrap_iters=0, **executor
        )
        assert outcome.status == "finished" and outcome.written == n, outcome
        return outcome.run_dir

    async def score(run_dir: Path, **executor: Any) -> Path:
        done = await rescore(run_dir, output_dir=root / "scored", bootstrap_iters=0, **executor)
        assert done.samples == n
        return done.run_dir

    print(f"offline scoring, {n:,} records (exact_match + token_f1), wall and driver CPU:")
    local_run = timed(run)
    ray_run = timed(lambda: run(**ray2))
    local_score = timed(lambda: score(local_run[2]))
    ray_score = timed(lambda: score(local_run[2], **ray2))
    for name, (wall, cpu, _) in (
        ("predictions run, local", local_run),
        ("predictions run, ray x2", ray_run),
        ("assay score, local", local_score),
        ("assay score, ray x2", ray_score),
    ):
        print(f"  {name:24s} {wall:6.2f} s  {n / wall:9,.0f} records/s   driver CPU {1e6 * cpu / n:5.0f} us/record")


SECTIONS = {"writer": _writer_ceiling, "overhead": _overhead, "latency": _latency_bound, "cpu": _cpu_bound}


def main() -> None:
    import ray

    wanted = [a for a in sys.argv[1:] if a in (*SECTIONS, "engines", "offline")] or [*SECTIONS, "engines", "offline"]

    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    sys.path.insert(0, str(ROOT))
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs (the machine is shared)")
    started = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", configure_logging=True)
    print(f"local Ray instance started in {time.perf_counter() - started:.1f} s (not counted below)")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            for name, section in SECTIONS.items():
                if name in wanted:
                    section(out)
            if "engines" in wanted:
                _engines()
            if "offline" in wanted:
                _offline(out)
    finally:
        ray.shutdown()
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
