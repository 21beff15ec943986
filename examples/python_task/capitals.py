"""A task written in Python, run against a Python function (docs/how-to/python-tasks.md).

Run it from anywhere: ``python examples/python_task/capitals.py``; the run folder goes under ``runs/``.
"""

from __future__ import annotations

import assay
from assay.evaluators import exact_match

ROWS = [
    {"id": "fr", "country": "France", "capital": "Paris"},
    {"id": "jp", "country": "Japan", "capital": "Tokyo"},
    {"id": "pe", "country": "Peru", "capital": "Lima"},
    {"id": "ke", "country": "Kenya", "capital": ["Nairobi", "Nairobi City"]},  # any of these answers is right
]

task = assay.Task(
    "capitals",
    ROWS,  # a list of dicts; or a file path, or {"path": "hf:...", "split": ...}
    fields={"id": "id", "input": "country", "target": "capital"},
    template="What is the capital of {{ country }}? Answer with the city only.",
    evaluators=[
        exact_match(ignore_case=True, ignore_punctuation=True),  # a typed factory: its keywords are its options
        "token_f1",  # or by name (with options: {"name": "token_f1", ...}), as a task file names it
    ],
    generation={"temperature": 0, "max_tokens": 16},
)

KNOWN = {"France": "Paris.", "Japan": "Tokyo", "Kenya": "nairobi"}


def answer(prompt: str, doc: dict) -> str:
    """The model: any function taking the keywords it declares (here the rendered prompt and the dataset row)."""
    return KNOWN.get(doc["country"], "I am not sure.")


if __name__ == "__main__":
    for sample in task.samples():  # the rows as Samples: id, input, target, the row itself (doc)
        print(sample.id, repr(sample.input), "->", sample.target)
    print(task.build_request(task.samples()[0]).messages)  # what the model is sent
    run = assay.run(task, answer, output_dir="runs", quiet=True)
    for row in run.metric_rows():
        print(f"{row.metric}: {row.mean:.3f} (95% CI {row.ci[0]:.3f}-{row.ci[1]:.3f}, n={row.n_scored})")
    print("run folder:", run.path)
