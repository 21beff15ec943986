"""The custom evaluator of concise.py used on its own, in a Python task and in a YAML task."""

from __future__ import annotations

import sys
from pathlib import Path

import assay

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # so that `import concise` works wherever this is run from
from concise import ConciseAnswer  # noqa: E402  (importing it registers "concise_answer")

# On its own: options are checked when it is built, verdicts say why.
judge = ConciseAnswer(max_words=3)
print(judge.evaluate("Paris", "Paris"))
print(judge.evaluate("The capital of France is Paris.", "Paris"))
print(judge.evaluate(42, "Paris"))  # an error verdict: counted apart, never a zero
print(assay.evaluators.get("concise_answer", max_words=3).to_config())  # the same evaluator, by its name
try:
    ConciseAnswer(max_words=0)
except assay.ConfigError as err:
    print("ConfigError:", err)

# In a Python task: the object itself, or its name and options.
task = assay.Task(
    "concise_py",
    [{"q": "What is the capital of Italy?", "a": "Rome"}, {"q": "Name the capital of Spain.", "a": "Madrid"}],
    fields={"input": "q", "target": "a"},
    template="{{ q }}",
    evaluators=[ConciseAnswer(max_words=2), {"name": "concise_answer", "max_words": 6, "metric": "concise6"}],
)
run = assay.run(task, lambda prompt: "It is Rome." if "Italy" in prompt else "Madrid", output_dir="runs", quiet=True)
print({row.metric: row.mean for row in run.metric_rows()})

# In a YAML task: the name, once the module is imported (assay run finds it through an entry point instead).
run = assay.run(HERE / "task.yaml", output_dir="runs", quiet=True)
print({row.metric: round(row.mean or 0.0, 3) for row in run.metric_rows()})
