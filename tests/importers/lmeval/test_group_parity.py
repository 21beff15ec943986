"""lm-eval group files, unchanged: MMLU's ``_mmlu_stem.yaml`` names its members by tag; its two subjects here (with
their own local data) run as tasks of the group, and the group's figure equals lm-eval's own on the same tiny model
(its hf backend, in this process). A group file's unsupported settings are refused naming file and line."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

import assay
from assay.errors import ConfigError
from assay.tasks.importers.lmeval import load_lmeval_tasks
from tests.importers.lmeval.conftest import FIXTURES

lm_eval = pytest.importorskip("lm_eval", reason="lm-eval is not installed")
pytest.importorskip("accelerate", reason="lm-eval's hf backend needs accelerate")

SUBJECTS = {"mmlu_abstract_algebra": 8, "mmlu_anatomy": 6}


def _work(tmp_path: Path) -> Path:
    work = tmp_path / "mmlu"
    shutil.copytree(FIXTURES / "mmlu_group", work)
    return work


def test_a_group_file_gives_its_tasks_in_the_group(tmp_path: Path) -> None:
    tasks = load_lmeval_tasks(_work(tmp_path) / "_mmlu_stem.yaml")
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
    assert group["acc_stderr,none"] == pytest.approx(theirs["groups"]["mmlu_stem"]["acc_stderr,none"], rel=0.05)
    # the size-weighted mean of the subjects' means, and the stderr of that weighted mean of independent means
    # (lm-eval pools the subjects' variances instead: equal when they are equal, 0.1299 against 0.1300 here)
    total = sum(SUBJECTS.values())
    weights = {name: n / total for name, n in SUBJECTS.items()}
    assert group["acc,none"] == pytest.approx(sum(w * ours[t]["acc,none"] for t, w in weights.items()))
    want_se = math.sqrt(sum((w * ours[t]["acc_stderr,none"]) ** 2 for t, w in weights.items()))
    assert group["acc_stderr,none"] == pytest.approx(want_se)
    stored = json.loads((run.path / "results.json").read_text())
    assert set(stored["group_subtasks"]["mmlu_stem"]) == set(SUBJECTS)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("    weight_by_size: True", "aggregate_metric_list[0].weight_by_size: assay weights every group of a run"),
        ("  - mmlu_stem_tasks", "task[0]: no task, group or tag named 'mmlu_nope'"),
    ],
)
def test_a_group_files_unsupported_setting_is_named_with_its_line(tmp_path: Path, edit: str, message: str) -> None:
    work = _work(tmp_path)
    group = work / "_mmlu_stem.yaml"
    text = group.read_text()
    changed = text.replace(edit, edit.replace("True", "False").replace("mmlu_stem_tasks", "mmlu_nope"))
    assert changed != text
    group.write_text(changed)
    with pytest.raises(ConfigError, match=r"_mmlu_stem\.yaml:\d+: " + message.replace("[", r"\[").replace("]", r"\]")):
        load_lmeval_tasks(group)
