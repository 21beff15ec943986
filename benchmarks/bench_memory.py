"""Peak memory of results, report, compare, feedback, the HTML report and JUnit XML on a large run folder.

Builds two synthetic run folders of N samples each (default 1,000,000; ``--quick`` 50,000; or
``BENCH_MEMORY_SAMPLES=N``): one task, ``exact_match`` and ``token_f1``, Cyrillic/CJK text, one sample in
100 with a 20 KB output, one in 50 with a model error and one in 40 with an evaluator error; run B differs from
A in one sample in 20. Each step runs in its own subprocess, which reports its peak RSS (``ru_maxrss``), wall and
CPU time; figures are printed with the ratio to the run folder's size and to a bare ``import assay`` process (the
floor), and the records read per CPU second (samples of one run / the step's CPU time).
With N <= 200,000 the list-based baseline (every record in one list, as results were written before) is measured
too. Run: ``python -m benchmarks memory`` or ``python -m benchmarks.bench_memory --quick``
(``BENCH_MEMORY_STEPS="write_results A,HTML report"`` runs only those steps).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_SAMPLES = 1_000_000
QUICK_SAMPLES = 50_000
LIST_BASELINE_MAX = 200_000
WORDS = ["ответ", "вопрос", "данные", "модель", "数据", "模型", "評価", "réponse", "naïve", "Straße", "42", "x"]


def _manifest(n: int, run_id: str) -> str:
    from assay.record import MetricInfo, RunManifest, TaskInfo

    return RunManifest(
        run_id=run_id,
        assay_version="0.1.0",
        created_at=1_700_000_000.0,
        finished_at=1_700_000_600.0,
        total_seconds=600.0,
        status="finished",
        model={"provider": "predictions", "name": "bench-model"},
        tasks=[
            TaskInfo(
                name="qa",
                task_hash="0" * 64,
                config={"task": "qa"},
                metrics=[
                    MetricInfo(name="exact_match", evaluator={"name": "exact_match"}),
                    MetricInfo(name="token_f1", evaluator={"name": "token_f1"}),
                ],
                n_docs=n,
                n_selected=n,
            )
        ],
    ).model_dump_json(indent=2)


def _verdict(score: float | None, error: str | None = None) -> dict[str, object]:
    if error is not None:
        return {"score": None, "passed": False, "reason": None, "feedback": None, "details": {}, "error": error}
    ok = score == 1.0
    reason = None if ok else "expected the reference answer"
    return {"score": score, "passed": ok, "reason": reason, "feedback": None, "details": {}, "error": None}


def _line(i: int, rng: random.Random, variant: int) -> str:
    question = " ".join(WORDS[(i * 7 + j * 13) % len(WORDS)] for j in range(12))  # the same row in A and B
    target = f"{WORDS[i % len(WORDS)]} {i}"
    failed = i % 50 == 7
    wrong = (i % 3 == 0) != (variant == 1 and i % 20 == 0)
    text = None if failed else (target if not wrong else f"{rng.choice(WORDS)} {i + 1}")
    if text is not None and i % 100 == 11:
        text += " " + "длинный вывод модели " * 1000  # ~20 KB
    prompt = f"Вопрос: {question}\nОтвет:"
    if failed:
        verdicts = {m: [_verdict(None, "no response to evaluate: HTTP 500")] for m in ("exact_match", "token_f1")}
    else:
        em = _verdict(None, "evaluator raised ValueError") if i % 40 == 13 else _verdict(0.0 if wrong else 1.0)
        verdicts = {"exact_match": [em], "token_f1": [_verdict(round(rng.random(), 4) if wrong else 1.0)]}
    scores = {m: vs[0]["score"] for m, vs in verdicts.items()}
    record = {
        "task": "qa",
        "task_hash": "0" * 64,
        "doc_id": i,
        "sample_id": f"q{i}",
        "doc": {"id": f"q{i}", "question": question, "answer": target},
        "prompt": prompt,
        "messages": [{"role": "user", "content": prompt}],
        "gen_kwargs": {"temperature": 0.0, "max_tokens": 64},
        "target": target,
        "metadata": {},
        "responses": [
            None
            if text is None
            else {
                "text": text,
                "tool_calls": [],
                "usage": {"input_tokens": 21, "output_tokens": 5},
                "latency_s": 0.05 + (i % 97) / 1000,
                "finish_reason": "stop",
                "model": "bench-model",
                "cached": False,
            }
        ],
        "response_errors": ["HTTP 500: server error" if failed else None],
        "cache_hits": 0,
        "filters": {
            "none": {
                "filtered": [] if text is None else [text],
                "verdicts": verdicts,
                "scores": scores,
                "passed": {m: (None if s is None else s == 1.0) for m, s in scores.items()},
            }
        },
        "started_at": 1_700_000_000.0 + i / 2000,
        "model_seconds": 0.05,
        "eval_seconds": 0.0001,
    }
    return json.dumps(record, ensure_ascii=False)


def build_run(root: Path, n: int, variant: int = 0) -> Path:
    """A finished run folder (run.json + samples.jsonl) of ``n`` samples; ``variant`` 1 changes one in 20."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "run.json").write_text(_manifest(n, f"bench-{variant}"), encoding="utf-8")
    rng = random.Random(variant)
    with open(root / "samples.jsonl", "w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(_line(i, rng, variant) + "\n")
    return root


STEPS = {
    "import assay (floor)": "import assay.results",
    "write_results A": "from assay.results import write_results; write_results(A, bootstrap_iters=1000)",
    "write_results B": "from assay.results import write_results; write_results(B, bootstrap_iters=1000)",
    "report (table)": (
        "from assay.results import load_run; from assay.report.table import render_table, render_operational;"
        "r = load_run(A); render_table(r, 'markdown'); render_operational(r, 'markdown')"
    ),
    "compare A B": "from assay.results import compare_runs; compare_runs(A, B, iters=1000)",
    "feedback themes": "from assay.feedback.themes import build_report; build_report(A)",
    "HTML report": "from assay.report.html import write_html; write_html([A], OUT / 'report.html')",
    "JUnit XML": "from assay.report.junit import write_junit; from assay.results import load_run;"
    "write_junit(load_run(A), OUT / 'junit.xml')",
}
LIST_BASELINE = "from assay.store.sampleindex import read_samples; records, _ = read_samples(A)"


def _measure(code: str, a: Path, b: Path, out: Path) -> tuple[float, float, float]:
    """(peak RSS in MiB, wall seconds, CPU seconds) of a fresh Python process running ``code`` (the times leave
    out starting Python; CPU time is user + system, the figure to trust on a machine other work shares, of the
    process and the children it forked; the peak RSS is the process's own)."""
    script = (
        "import resource, sys, time\nfrom pathlib import Path\n"
        f"A, B, OUT = Path({str(a)!r}), Path({str(b)!r}), Path({str(out)!r})\n"
        "def cpu():\n"
        "    s, k = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "    return s.ru_utime + s.ru_stime + k.ru_utime + k.ru_stime\n"
        "t, c = time.perf_counter(), cpu()\n"
        f"{code}\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, time.perf_counter() - t, cpu() - c)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"step failed:\n{done.stderr[-2000:]}")
    rss, seconds, cpu = done.stdout.split()[-3:]
    return float(rss), float(seconds), float(cpu)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    n = QUICK_SAMPLES if "--quick" in args else int(os.environ.get("BENCH_MEMORY_SAMPLES", DEFAULT_SAMPLES))
    with tempfile.TemporaryDirectory(prefix="assay-bench-memory-") as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        a, b = build_run(root / "a", n, 0), build_run(root / "b", n, 1)
        size = (a / "samples.jsonl").stat().st_size
        print(f"samples: {n:,} per run; samples.jsonl {size / 2**20:,.0f} MiB", end=" ")
        print(f"(two run folders written in {time.perf_counter() - start:.0f} s)", flush=True)
        steps = dict(STEPS)
        only = os.environ.get("BENCH_MEMORY_STEPS")  # e.g. "write_results A,HTML report"
        if only:
            steps = {name: code for name, code in steps.items() if name in only.split(",") or "floor" in name}
        if n <= LIST_BASELINE_MAX:
            steps = {"records in one list (before)": LIST_BASELINE, **steps}
        floor = None
        print(f"{'step':<30} {'peak RSS':>10} {'÷ folder':>9} {'÷ floor':>8} {'wall':>8} {'CPU':>8} {'records/s':>10}")
        for name, code in steps.items():
            rss, seconds, cpu = _measure(code, a, b, root)
            floor = floor if floor is not None or "floor" not in name else rss
            ratio_floor = f"{rss / floor:.1f}x" if floor else "—"
            rate = f"{n / cpu:>10,.0f}" if "floor" not in name and cpu > 0 else f"{'—':>10}"
            print(
                f"{name:<30} {rss:>7,.0f} MiB {rss * 2**20 / size:>8.2f}x {ratio_floor:>8} {seconds:>7.1f}s"
                f" {cpu:>7.1f}s {rate}",
                flush=True,
            )
        html = root / "report.html"
        if html.exists():
            print(f"HTML report: {html.stat().st_size / 2**20:,.0f} MiB")


if __name__ == "__main__":
    main()
