"""The log-likelihood tasks of this folder on a tiny model made offline (docs/how-to/loglikelihood-tasks.md).

``assay.testing.make_tiny_lm`` trains a small tokenizer and saves a 2-layer GPT-2 with random weights, so nothing is
downloaded; its figures are those of a random model. Needs ``assay[hf]`` (torch and transformers).
Run it from anywhere: ``python examples/loglikelihood/run_tiny.py``; the model goes to ``build/tiny-lm``, the runs
under ``runs/``. Point ``--model hf:...`` at a real checkpoint for real figures.
"""

from __future__ import annotations

from pathlib import Path

import assay
from assay.testing import make_tiny_lm

HERE = Path(__file__).resolve().parent

model_dir = make_tiny_lm("build/tiny-lm")  # a folder any `hf:` spec can name, like a downloaded checkpoint
for task in ("multiple_choice.yaml", "perplexity.yaml"):
    run = assay.run(HERE / task, f"hf:{model_dir}", output_dir="runs", quiet=True)
    for row in run.metric_rows():
        print(f"{row.task:12} {row.metric:16} {row.mean:10.4f}  {row.ci_method}  n={row.n_scored}")
