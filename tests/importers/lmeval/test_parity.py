"""lm-eval's own task objects, built by its TaskManager from the same fixture files, give each document the
context, choices and target that the imported assay task gives (hellaswag's process_docs hook, arc's target
template)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from assay.tasks.importers.lmeval import load_lmeval_task
from tests.importers.lmeval.conftest import FIXTURES

pytest.importorskip("lm_eval", reason="lm-eval is not installed")


CASES = [
    ("hellaswag", "hellaswag.yaml", "hellaswag", ""),
    ("arc", "arc_easy.yaml", "arc_easy", ""),
    ("arc", "arc_easy.yaml", "arc_easy", "num_fewshot: 3\nfewshot_config:\n  sampler: first_n\n"),
    ("mmlu", "mmlu_abstract_algebra.yaml", "mmlu_abstract_algebra", ""),  # description, fixed choices
    ("mmlu", "mmlu_abstract_algebra.yaml", "mmlu_abstract_algebra", "num_fewshot: 5\n"),  # first_n from dev
    ("gsm8k", "gsm8k.yaml", "gsm8k", "fewshot_config:\n  sampler: first_n\n"),  # lm-eval's random draws are its own
]


def _context(task: Any, sample: Any) -> str:
    request = task.build_request(sample)
    return request.loglikelihood.context if request.loglikelihood is not None else request.messages[-1]["content"]


@pytest.mark.parametrize(("folder", "file", "name", "extra"), CASES)
def test_prompts_and_targets_are_lm_evals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: str, file: str, name: str, extra: str
) -> None:
    from lm_eval.tasks import TaskManager

    work = tmp_path / folder
    shutil.copytree(FIXTURES / folder, work)
    (work / "arc_challenge.yaml").unlink(missing_ok=True)
    path = work / file
    text = path.read_text()
    renamed = re.sub(rf'^("?task"?: "?){name}("?)$', rf"\g<1>{name}_fixture\2", text, flags=re.M)
    assert renamed != text
    path.write_text(renamed + extra)  # not the installed task of that name; a variant adds keys
    monkeypatch.chdir(work)  # lm-eval reads relative data_files from the working directory
    theirs = TaskManager(include_path=str(work), include_defaults=False).load_task_or_group([f"{name}_fixture"])[
        f"{name}_fixture"
    ]
    docs = list(theirs.test_docs() if theirs.has_test_docs() else theirs.validation_docs())
    ours = load_lmeval_task(path)
    samples = ours.samples()
    assert len(docs) == len(samples) > 3
    shots = theirs.config.num_fewshot or 0
    assert ours.n_shot == shots
    for doc, sample in zip(docs, samples, strict=True):
        assert _context(ours, sample) == theirs.fewshot_context(doc, shots)
        assert sample.target == theirs.doc_to_target(doc)
        if ours.output_type == "multiple_choice":
            query = ours.build_request(sample).loglikelihood
            assert list(query.continuations) == [" " + c for c in theirs.doc_to_choice(doc)]


@pytest.fixture(scope="module")
def both_runs(tiny_lm: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict, Path]:
    """assay's results (the imported files) and lm-eval's (its hf backend) on the tiny model and the same files."""
    pytest.importorskip("accelerate", reason="lm-eval's hf backend needs accelerate")
    import json
    import os

    import lm_eval
    from lm_eval.tasks import TaskManager

    import assay

    work = tmp_path_factory.mktemp("figures")
    for folder, file, name in (("arc", "arc_easy.yaml", "arc_easy"), ("hellaswag", "hellaswag.yaml", "hellaswag")):
        shutil.copytree(FIXTURES / folder, work / folder)
        (work / folder / "arc_challenge.yaml").unlink(missing_ok=True)
        path = work / folder / file
        text = path.read_text().replace(f"task: {name}\n", f"task: {name}_fixture\n")
        for split in ("train", "validation", "test"):
            text = text.replace(f": {split}.jsonl", f": {folder}/{split}.jsonl")
        path.write_text(text)
    cwd = os.getcwd()
    os.chdir(work)  # both read the relative data_files from here
    try:
        tasks = [str(work / "arc" / "arc_easy.yaml"), str(work / "hellaswag" / "hellaswag.yaml")]
        run = assay.run(tasks, model=f"hf:{tiny_lm}", output_dir=str(work / "runs"), progress=False)
        ours = json.loads((run.path / "results.json").read_text())["results"]
        theirs = lm_eval.simple_evaluate(
            model="hf",
            model_args=f"pretrained={tiny_lm}",
            tasks=["arc_easy_fixture", "hellaswag_fixture"],
            task_manager=TaskManager(include_path=str(work), include_defaults=False),
            batch_size=4,
            device="cpu",
        )["results"]
    finally:
        os.chdir(cwd)
    return ours, theirs, work


@pytest.mark.parametrize("task", ["arc_easy_fixture", "hellaswag_fixture"])
def test_figures_equal_lm_evals_on_the_tiny_model(both_runs: tuple[dict, dict, Path], task: str) -> None:
    ours, theirs, _ = both_runs
    for key in ("acc,none", "acc_norm,none", "acc_stderr,none", "acc_norm_stderr,none"):
        assert ours[task][key] == pytest.approx(theirs[task][key], rel=1e-6, abs=1e-9), key
    assert ours[task]["acc,none"] != ours[task]["acc_norm,none"] or 0 < ours[task]["acc,none"] < 1  # not degenerate
