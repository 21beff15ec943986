"""Two lm-eval task files given together (arc_easy and hellaswag with its process_docs) are loaded as lm_eval loads
``--tasks a,b``, and their figures equal lm-eval's own on the same tiny model (its hf backend)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.importers.lmeval.conftest import FIXTURES

pytest.importorskip("lm_eval", reason="lm-eval is not installed")


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
