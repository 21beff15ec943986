"""The HTML report of a large run: file size, render time, and load/filter/search times in headless Chromium.

50,000 short synthetic samples (one task, two metrics, a third failing, one in 50 with a judge error). Figures:
the time to load the run and render the page in Python, the file size, and in the browser the time from
navigation start until the sample table is drawn (``window.assayReadyAt``), then filtering to failed samples,
a text search and opening a sample by deep link. Run: ``python -m benchmarks report_html`` (or with
``BENCH_REPORT_SAMPLES=N``).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from assay.models.base import Response, Usage
from assay.record import FilterRecord, MetricInfo, RunManifest, SampleRecord, TaskInfo

SAMPLES = int(os.environ.get("BENCH_REPORT_SAMPLES", "50000"))
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]


def _record(i: int) -> SampleRecord:
    fails = i % 3 == 0
    target = str(2 * i + 1)
    output = str(2 * i + 2) if fails else target
    em = {"score": 0.0 if fails else 1.0, "passed": not fails, "reason": None, "feedback": None, "details": {}}
    if fails:
        em |= {"reason": f"expected {target!r}, got {output!r}", "feedback": f"The answer is {target}."}
    if i % 50 == 7:
        judge = {
            "score": None,
            "passed": False,
            "reason": None,
            "feedback": None,
            "details": {},
            "error": "unparseable",
        }
    else:
        judge = {"score": 0.25 if fails else 1.0, "passed": not fails, "reason": "wrong sum" if fails else None}
    return SampleRecord(
        task="arith",
        task_hash="0" * 64,
        doc_id=i,
        sample_id=f"q{i}",
        doc={"a": i, "b": i + 1},
        prompt=f"What is {i} + {i + 1}? Answer with a number.",
        messages=[{"role": "user", "content": f"What is {i} + {i + 1}? Answer with a number."}],
        target=target,
        responses=[
            Response(text=output, usage=Usage(input_tokens=14, output_tokens=2), latency_s=0.1 + (i % 97) / 200)
        ],
        response_errors=[None],
        filters={
            "none": FilterRecord(
                filtered=[output],
                verdicts={"exact_match": [em], "judge": [judge]},
                scores={"exact_match": em["score"], "judge": judge["score"]},
                passed={"exact_match": not fails, "judge": None if judge["score"] is None else not fails},
            )
        },
    )


def make_large_run(root: Path, n: int) -> Path:
    """A finished run folder of ``n`` short samples, with results.json."""
    from assay.results import write_results

    root.mkdir(parents=True, exist_ok=True)
    manifest = RunManifest(
        run_id="bench",
        assay_version="0.1.0",
        created_at=time.time(),
        finished_at=time.time(),
        total_seconds=600.0,
        status="finished",
        model={"provider": "python", "name": "bench-model"},
        tasks=[
            TaskInfo(
                name="arith",
                task_hash="0" * 64,
                config={},
                metrics=[
                    MetricInfo(name="exact_match", evaluator={"name": "exact_match"}),
                    MetricInfo(name="judge", evaluator={"name": "llm_judge"}),
                ],
                n_docs=n,
                n_selected=n,
            )
        ],
    )
    (root / "run.json").write_text(manifest.model_dump_json(), encoding="utf-8")
    with open(root / "samples.jsonl", "w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(_record(i).model_dump_json() + "\n")
    write_results(root, bootstrap_iters=1000, seed=1)
    return root


def main() -> None:
    from assay.report.html import write_html
    from assay.results import load_run

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        run_dir = make_large_run(Path(tmp) / "run", SAMPLES)
        print(f"samples: {SAMPLES:,} (run folder written in {time.perf_counter() - start:.1f}s)")
        start = time.perf_counter()
        run = load_run(run_dir)
        loaded = time.perf_counter() - start
        from assay.feedback.themes import group_failures

        start = time.perf_counter()
        group_failures(run)
        print(f"failure themes (assay.feedback, part of the render): {time.perf_counter() - start:.2f}s")
        start = time.perf_counter()
        page = write_html([run], Path(tmp) / "report.html")
        rendered = time.perf_counter() - start
        size = page.stat().st_size
        print(f"load_run: {loaded:.2f}s   render + write: {rendered:.2f}s")
        print(f"file size: {size / 1e6:.1f} MB ({size / SAMPLES:.0f} bytes per sample)")
        if not Path(CHROMIUM).exists():
            print(f"{CHROMIUM} not installed: browser timings skipped")
            return
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            tab = browser.new_page(viewport={"width": 1280, "height": 900})
            for attempt in (1, 2):
                tab.goto(page.as_uri())
                tab.wait_for_function("() => document.body.dataset.ready === '1'", timeout=120_000)
                ready = tab.evaluate("window.assayReadyAt")
                dom = tab.evaluate("performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd")
                print(f"load {attempt}: table drawn {ready / 1000:.2f}s after navigation start", end=" ")
                print(f"(DOMContentLoaded {dom / 1000:.2f}s)")
            heap = tab.evaluate("performance.memory ? performance.memory.usedJSHeapSize : 0")
            if heap:
                print(f"JS heap after load: {heap / 1e6:.0f} MB")
            change = (
                "([id, v]) => { const t = performance.now(); const s = document.getElementById(id);"
                " s.value = v; s.dispatchEvent(new Event('change')); return performance.now() - t; }"
            )
            for name, args in {"filter to failed": ["f-status", "fail"], "sort by score": ["f-sort", "asc"]}.items():
                ms = tab.evaluate(change, args)
                print(f"{name}: {ms:.0f} ms ({tab.get_attribute('#sample-count', 'data-count')} samples)")
            tab.evaluate(change, ["f-status", ""])
            # search for failing samples (every third): the page holds at most 20,000 samples of a run (the
            # default --html-samples), errored and failing ones first, so a passing one past that is not in it
            tab.fill("#f-q", f"q{(SAMPLES - 1) // 3 * 3}")
            start = time.perf_counter()
            tab.wait_for_function("() => document.getElementById('sample-count').dataset.count === '1'", timeout=60_000)
            print(
                f"first search (builds the index, plus 150 ms debounce): {(time.perf_counter() - start) * 1000:.0f} ms"
            )
            tab.fill("#f-q", f"q{SAMPLES // 6 * 3}")
            start = time.perf_counter()
            tab.wait_for_function("() => document.getElementById('sample-count').dataset.count === '1'", timeout=60_000)
            print(f"next search (plus 150 ms debounce): {(time.perf_counter() - start) * 1000:.0f} ms")
            start = time.perf_counter()
            tab.evaluate("() => { location.hash = '#sample=arith/q0'; }")
            tab.wait_for_selector("#detail:not([hidden])")
            print(f"deep link to a sample: {(time.perf_counter() - start) * 1000:.0f} ms")
            browser.close()


if __name__ == "__main__":
    main()
