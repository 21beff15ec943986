"""lm-eval group files, unchanged: MMLU's ``_mmlu_stem.yaml`` names its members by tag; its two subjects here (with
their own local data) run as tasks of the group, and the group's figure and pooled stderr are lm-eval's own on the
same tiny model (its hf backend, in this process)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import assay
from assay.tasks.importers.lmeval import load_lmeval_tasks
from tests.importers.lmeval.conftest import FIXTURES

lm_eval = pytest.importorskip("lm_eval", reason="lm-eval is not installed")
pytest.importorskip("accelerate", reason="lm-eval's hf backend needs accelerate")

SUBJECTS = {"mmlu_abstract_algebra": 8, "mmlu_anatomy": 6}


def _work(tmp_path: Path) -> Path:
    work = tmp_path / "mmlu"
    shutil.copytree(FIXTURES / "mmlu_group", work)
    return work


def test_a_group_file_gives_its_tasks_in_the_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = _work(tmp_path)
    monkeypatch.chdir(work)
    tasks = load_lmeval_tasks(work / "_mmlu_stem.yaml")
    assert sorted(t.name for t in tasks) == sorted(SUBJECTS)
    assert all(t.groups == ["mmlu_stem"] for t in tasks)
    assert {t.name: len(t.samples()) for t in tasks} == SUBJECTS


def test_the_groups_figure_equals_lm_evals(tmp_path: Path, tiny_lm: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lm_eval.tasks import TaskManager

    work = _work(tmp_path)
    monkeypatch.chdir(work)  # lm-eval reads relative data_files from the working directory
    run = assay.run(str(work / "_mmlu_stem.yaml"), model=f"hf:{tiny_lm}", output_dir=tmp_path / "runs", progress=False)
    theirs = lm_eval.simple_evaluate(
        model="hf", model_args=f"pretrained={tiny_lm}", tasks=["mmlu_stem"], batch_size=4, device="cpu",
        task_manager=TaskManager(include_path=str(work), include_defaults=False),
    )  # fmt: skip
    ours = run.results["results"]
    for name in SUBJECTS:
        assert ours[name]["acc,none"] == pytest.approx(theirs["results"][name]["acc,none"], abs=1e-12)
    group = run.results["groups"]["mmlu_stem"]  # lm-eval's schema: groups under "groups"
    assert group["acc,none"] == pytest.approx(theirs["groups"]["mmlu_stem"]["acc,none"], abs=1e-12)
    assert group["acc_stderr,none"] == pytest.approx(theirs["groups"]["mmlu_stem"]["acc_stderr,none"], abs=1e-12)
    stored = json.loads((run.path / "results.json").read_text())
    assert set(stored["group_subtasks"]["mmlu_stem"]) == set(SUBJECTS)
    beside = stored["assay"]["groups"]["mmlu_stem"]["filters"]["none"]["acc"]["lmeval"]
    assert beside["value"] == pytest.approx(group["acc,none"])  # assay keeps lm-eval's figure beside its interval
