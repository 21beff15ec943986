"""``assay audit`` of a large task against scoring its samples once: the whole battery (every probe and the oracle
check) through the same scoring path, at the defaults.

    python -m benchmarks.bench_audit [--rows 100000]     (python -m benchmarks audit: the defaults)

Prints the wall time of scoring the samples once as a user does (a predictions run, end to end), of one bare scoring
pass (each row's own target through the filters and evaluators, nothing read or written), and of the audit, and
the ratios (issue 44's target: the battery within 20x of scoring the samples once). The task: ``exact_match`` and
``token_f1`` on non-ASCII questions with 5 % long answers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path

WORDS = ["Zürich", "naïve", "café", "東京", "München", "straße", "Ελλάδα", "river", "mountain", "library", "année"]


def _dataset(path: Path, preds: Path, rows: int) -> None:
    """The task's rows, and a predictions file answering each one (right four times in five)."""
    rng = random.Random(7)
    with path.open("w", encoding="utf-8") as f, preds.open("w", encoding="utf-8") as p:
        for i in range(rows):
            n = 60 if rng.random() < 0.05 else 3
            answer = " ".join(rng.choice(WORDS) for _ in range(n))
            f.write(json.dumps({"id": f"q{i}", "question": f"Question {i}: {rng.choice(WORDS)}?", "answer": answer}))
            f.write("\n")
            prediction = answer if rng.random() < 0.8 else " ".join(rng.choice(WORDS) for _ in range(4))
            p.write(json.dumps({"id": f"q{i}", "prediction": prediction}) + "\n")


def _times(fn: object) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()  # type: ignore[operator]
    return time.perf_counter() - wall, time.process_time() - cpu


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_audit")
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args(argv if argv is not None else [a for a in sys.argv[1:] if a != "audit"])
    from assay.audit import audit_task
    from assay.audit.battery import CHUNK, _score
    from assay.runner.offline import prompt_of, render
    from assay.tasks import Task

    with tempfile.TemporaryDirectory() as tmp:
        data, preds = Path(tmp) / "data.jsonl", Path(tmp) / "preds.jsonl"
        _dataset(data, preds, args.rows)
        task = Task.from_config(
            {
                "name": "bench",
                "dataset": {"path": str(data)},
                "fields": {"id": "id", "input": "question", "target": "answer"},
                "template": "{{ question }}",
                "evaluators": ["exact_match", "token_f1"],
            }
        )
        samples = list(task.samples())

        def one_pass() -> None:
            async def go() -> None:
                for start in range(0, len(samples), CHUNK):
                    chunk = samples[start : start + CHUNK]
                    prompts = [prompt_of(render(task, s)) for s in chunk]
                    await _score(task, chunk, [str(s.target) for s in chunk], prompts)

            asyncio.run(go())

        results: dict[str, object] = {}

        def audit() -> None:
            results["audit"] = audit_task(task)

        def scored_run() -> None:  # what a user runs to score these samples once: a predictions run, end to end
            import assay

            config = {
                "name": "bench",
                "dataset": {"path": str(data)},
                "fields": {"id": "id", "input": "question", "target": "answer"},
                "template": "{{ question }}",
                "evaluators": ["exact_match", "token_f1"],
            }
            assay.run(config, f"predictions:{preds}", output_dir=Path(tmp) / "runs", progress=False)

        base_wall, base_cpu = _times(one_pass)
        run_wall, _ = _times(scored_run)
        audit_wall, audit_cpu = _times(audit)
        found = results["audit"]
        n_probes = len({p.probe for p in found.probes})  # type: ignore[attr-defined]
    print(f"{args.rows:,} samples, {n_probes} probes + the oracle check, exact_match and token_f1")
    print(f"scoring the samples once, end to end (assay run --model predictions:FILE): {run_wall:.1f} s wall")
    print(f"one scoring pass alone (the filters and evaluators, nothing read or written): {base_wall:.1f} s wall")
    print(f"assay audit: {audit_wall:.1f} s wall, {audit_cpu:.1f} s CPU")
    print(f"ratio to the run: {audit_wall / run_wall:.1f}x wall (target: within 20x)")
    print(f"ratio to the pass alone: {audit_wall / base_wall:.1f}x wall, {audit_cpu / base_cpu:.1f}x CPU")


if __name__ == "__main__":
    main()
