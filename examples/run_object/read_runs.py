"""Two runs of the same task, read back and compared in Python (docs/how-to/run-object.md).

Offline: the baseline is the bundled demo agent, the candidate the test server answering "Paris" to everything.
Run it from anywhere: ``python examples/run_object/read_runs.py``; the run folders go under ``runs/``.
"""

from __future__ import annotations

from pathlib import Path

import assay
from assay.demo.agent import answer
from assay.testing import OpenAITestServer

TASK = Path(__file__).resolve().parents[1] / "qa_tools" / "task.yaml"

# 1. Two runs. assay.run returns the finished run as a Run; its folder is run.path.
baseline = assay.run(TASK, answer, output_dir="runs", name="demo-agent", quiet=True)
with OpenAITestServer(reply="Paris") as server:
    candidate = assay.run(
        TASK, "openai:assay-test", base_url=server.base_url, output_dir="runs", name="always-paris", quiet=True
    )

# 2. A run folder read back, later or elsewhere: load_run takes the folder (or any file in it).
run = assay.load_run(baseline.path)
print(run.name, run.task_names, run.n_records, "samples")

# 3. Figures: one row per task, filter and metric, with the interval and how it was computed.
for row in run.metric_rows():
    low, high = row.ci or (float("nan"), float("nan"))
    print(f"{row.key:32} {row.mean:.3f}  [{low:.3f}, {high:.3f}] {row.ci_method}  n={row.n_scored} err={row.n_errored}")
exact = run.row("qa_tools", "exact_match")
assert exact is not None
print("exact_match:", round(exact.mean or 0.0, 3))
print("results.json:", run.results["results"]["qa_tools"]["exact_match,none"])  # lm-eval's schema, as a dict
print("cost and latency:", sorted(run.operational))

# 4. Samples: each record has the prompt, the responses, and per filter the verdicts of every metric.
for record in run.iter_records():  # read one at a time: fine for millions of samples
    verdict = record.filters["none"].verdicts["exact_match"][0]
    if not verdict["passed"]:
        reply = record.responses[0].text if record.responses[0] else record.error
        print(f"failed {record.sample_id}: {reply!r} expected {record.target!r}: {verdict['reason']}")

# 5. Compare: samples pair by id; each metric gets both means, the difference, its interval and a paired test.
comparison = assay.compare_runs(baseline.path, candidate.path)  # A = baseline, B = candidate
for m in comparison.metrics:
    print(f"{m.key:32} A {m.mean_a:.3f}  B {m.mean_b:.3f}  diff {m.diff:+.3f}  p={m.p_value:.4f}  ({m.test})")
print("significantly worse:", [m.key for m in comparison.significantly_worse])
