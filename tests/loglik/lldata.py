"""Data for the log-likelihood tests: an ARC-style multiple-choice set, a wikitext-style rolling set, the same
tasks for assay and for lm-eval (its own YAML, reading the same JSONL files)."""

from __future__ import annotations

import json
import random
from pathlib import Path

from assay.testing.tiny_lm import CORPUS

SUBJECTS = ["Paris", "The sun", "Water", "A week", "The moon", "Plants", "Bees", "Seven plus five", "Rome", "A dog"]
ANSWERS = ["France", "the east", "one hundred degrees", "seven days", "the earth", "light and air", "honey", "twelve",
           "Italy", "the lazy fox", "blue", "zero", "a single step", "Spain", "shelter", "eight"]  # fmt: skip


def arc_rows(n: int = 40, seed: int = 7) -> list[dict]:
    """Questions with 2-5 choices of one to several tokens; the gold index varies."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        k = rng.randint(2, 5)
        choices = rng.sample(ANSWERS, k)
        if i % 7 == 3:
            choices[0] = "A"  # a one-token choice beside longer ones
        rows.append({"id": f"q{i}", "question": f"{rng.choice(SUBJECTS)} is related to what?",
                     "choices": {"text": choices, "label": list("ABCDE"[:k])}, "gold": rng.randrange(k)})  # fmt: skip
    return rows


def wiki_rows(n: int = 8, seed: int = 3) -> list[dict]:
    """Texts of 5-60 words: several are longer than the tiny model's 128 tokens (rolling windows)."""
    rng = random.Random(seed)
    words = CORPUS.split()
    rows = []
    for i in range(n):
        start = rng.randrange(len(words) - 10)
        length = 5 + (i * 37) % 120
        text = " ".join((words * 3)[start : start + length])
        rows.append({"id": f"d{i}", "page": text})
    return rows


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


ARC_TEMPLATE = "Question: {{question}}\nAnswer:"


def assay_tasks(folder: Path, *, mutual_info: bool = True) -> tuple[Path, Path]:
    """The assay task files (ARC-style multiple choice, wikitext-style rolling) over JSONL files in ``folder``."""
    write_jsonl(folder / "arc.jsonl", arc_rows())
    write_jsonl(folder / "wiki.jsonl", wiki_rows())
    metrics = "[acc, acc_norm, acc_mutual_info]" if mutual_info else "[acc, acc_norm]"
    arc = folder / "arc.yaml"
    arc.write_text(
        f"name: arc_tiny\ndataset: arc.jsonl\noutput_type: multiple_choice\ntemplate: {json.dumps(ARC_TEMPLATE)}\n"
        f"choices: choices.text\nfields: {{target: gold}}\nevaluators: {metrics}\n"
    )
    wiki = folder / "wiki.yaml"
    wiki.write_text(
        "name: wiki_tiny\ndataset: wiki.jsonl\noutput_type: loglikelihood_rolling\nfields: {target: page}\n"
    )
    return arc, wiki


def lmeval_tasks(folder: Path, data: Path) -> Path:
    """lm-eval's YAML of the same two tasks, reading the same files, in ``folder`` (an include path)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "arc_tiny_lm.yaml").write_text(
        "task: arc_tiny_lm\ndataset_path: json\n"
        f"dataset_kwargs:\n  data_files:\n    test: {data / 'arc.jsonl'}\ntest_split: test\n"
        f"output_type: multiple_choice\ndoc_to_text: {json.dumps(ARC_TEMPLATE)}\n"
        'doc_to_choice: "{{choices.text}}"\ndoc_to_target: gold\n'
        "metric_list:\n  - metric: acc\n  - metric: acc_norm\n  - metric: acc_mutual_info\n"
    )
    (folder / "wiki_tiny_lm.yaml").write_text(
        "task: wiki_tiny_lm\ndataset_path: json\n"
        f"dataset_kwargs:\n  data_files:\n    test: {data / 'wiki.jsonl'}\ntest_split: test\n"
        'output_type: loglikelihood_rolling\ndoc_to_text: ""\ndoc_to_target: "{{page}}"\n'
        "metric_list:\n  - metric: word_perplexity\n  - metric: byte_perplexity\n  - metric: bits_per_byte\n"
    )
    return folder
