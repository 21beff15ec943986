"""``assay feedback`` on a large run: grouping throughput and peak memory against plain baselines.

A run of N short synthetic samples (default 300,000; ``BENCH_FEEDBACK_SAMPLES=N``) with three metrics: an
exact-match failure on a third of them (reasons differing in values and asides), a json_match failure naming two
checks on a fifth, and a judge failure with one of four stated problems on a seventh. Each figure is measured in
a fresh subprocess (peak RSS of that process):

* ``read lines``: the floor any streaming reader pays — read ``samples.jsonl`` and ``json.loads`` every line;
* ``themes``: ``build_report`` (one streaming pass, bounded state per theme);
* ``load all``: the previous approach's first step alone — every record validated into memory (``read_records``).

Run: ``python -m benchmarks feedback``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SAMPLES = int(os.environ.get("BENCH_FEEDBACK_SAMPLES", "300000"))
PROBLEMS = ("names the wrong city", "answer is incomplete", "ignores the format", "hedges the answer")


def _line(i: int) -> str:
    target = f"city {i % 997}"
    output = f"town {i}" if i % 3 == 0 else target
    aside = f" (after normalisation: 'town {i}' vs '{target}')" if i % 2 else ""
    em: dict[str, object] = {"score": 1.0, "passed": True, "reason": None, "feedback": None, "details": {}}
    if i % 3 == 0:
        em |= {
            "score": 0.0,
            "passed": False,
            "reason": f"output {output!r} does not equal expected {target!r}{aside}",
            "feedback": f"Answer with exactly {target!r}; the output was {output!r}.",
        }
    jm: dict[str, object] = {"score": 1.0, "passed": True, "reason": None, "feedback": None, "details": {}}
    if i % 5 == 0:
        jm = {
            "score": 0.0,
            "passed": False,
            "reason": f"2 of 2 fields differ: $.pop: expected number {i}, got string '{i}'; $.city: missing",
            "feedback": f'Fix the JSON: set $.pop to {i}, a JSON number without quotes (not string "{i}").',
            "details": {
                "check": "$.pop is a JSON string, not a number",
                "failed_checks": ["$.pop is a JSON string, not a number", "missing field $.city"],
            },
        }
    judge: dict[str, object] = {"score": 1.0, "passed": True, "reason": None, "feedback": None, "details": {}}
    if i % 7 == 0:
        judge = {
            "score": 0.0,
            "passed": False,
            "reason": f"judge j graded 'fail' on the binary scale: 'It says {output}, which is wrong.'",
            "feedback": f"Answer {target}.",
            "details": {"mode": "grade", "judges": [], "grade": "fail", "problem": PROBLEMS[i % 4]},
        }
    verdicts = {"exact_match": [em], "json_match": [jm], "judge": [judge]}
    record = {
        "task": "bench",
        "task_hash": "0" * 64,
        "doc_id": i,
        "sample_id": f"q{i}",
        "doc": {"i": i},
        "prompt": f"Where is {i}?",
        "messages": [{"role": "user", "content": f"Where is {i}?"}],
        "target": target,
        "filters": {"none": {"filtered": [output], "verdicts": verdicts}},
    }
    return json.dumps(record)


def make_run(root: Path, n: int) -> Path:
    """A run folder with ``run.json`` and ``n`` sample lines."""
    from assay.record import MetricInfo, RunManifest, TaskInfo
    from assay.store.rundir import write_manifest
    from assay.store.sampleindex import SAMPLES as SAMPLES_FILE

    metrics = [MetricInfo(name=m, evaluator={"name": m}) for m in ("exact_match", "json_match")]
    metrics.append(MetricInfo(name="judge", evaluator={"name": "llm_judge", "criteria": "Names the city."}))
    task = TaskInfo(name="bench", task_hash="0" * 64, config={}, metrics=metrics, n_docs=n, n_selected=n)
    manifest = RunManifest(run_id="bench", assay_version="0", created_at=time.time(), model={"name": "m"}, tasks=[task])
    root.mkdir(parents=True, exist_ok=True)
    write_manifest(root, manifest)
    with open(root / SAMPLES_FILE, "w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(_line(i) + "\n")
    return root


_CHILD = {  # (imports, timed work)
    "read lines": (
        "import json\nfrom assay.store.sampleindex import SAMPLES",
        "n = 0\nwith open(RUN / SAMPLES, encoding='utf-8') as fh:\n    for line in fh:\n        json.loads(line)\n"
        "        n += 1\nOUT = n",
    ),
    "themes": ("from assay.feedback.themes import build_report", "OUT = len(build_report(RUN).themes)"),
    "load all": ("from assay.store.sampleindex import read_records", "OUT = len(read_records(RUN))"),
}


def _measure(run: Path, name: str) -> tuple[float, float, object]:
    imports, work = _CHILD[name]
    code = (
        f"import json, resource, time\nfrom pathlib import Path\n{imports}\n"
        f"RUN = Path({str(run)!r})\nstart = time.perf_counter()\n{work}\n"
        "elapsed = time.perf_counter() - start\n"
        "print(json.dumps([elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, OUT]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    elapsed, rss_mb, out = json.loads(done.stdout.strip().splitlines()[-1])
    return elapsed, rss_mb, out


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        run = make_run(Path(tmp) / "run", SAMPLES)
        size = (run / "samples.jsonl").stat().st_size / 1e6
        print(f"{SAMPLES:,} samples ({size:.0f} MB) written in {time.perf_counter() - started:.1f}s")
        figures = {name: _measure(run, name) for name in _CHILD}
        base = figures["read lines"][0]
        for name, (elapsed, rss, out) in figures.items():
            print(
                f"{name:>10}: {SAMPLES / elapsed / 1e3:7.1f}k samples/s  {elapsed:6.2f}s  "
                f"({elapsed / base:4.2f}× the plain read)  peak RSS {rss:6.0f} MB  [{out}]"
            )
        from assay.feedback.themes import build_report

        report = build_report(run)
        print("themes found:")
        for theme in report.themes:
            print(f"  {theme.n_samples:>7,}  {theme.label}")


if __name__ == "__main__":
    main()
