"""lm-eval's own task objects, built by its TaskManager from the same fixture files, give each document the
context, choices and target that the imported assay task gives (hellaswag's process_docs hook, arc's target
template)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from assay.tasks.importers.lmeval import load_lmeval_task
from tests.importers.lmeval.conftest import FIXTURES

pytest.importorskip("lm_eval", reason="lm-eval is not installed")


@pytest.mark.parametrize(
    ("folder", "file", "name"), [("hellaswag", "hellaswag.yaml", "hellaswag"), ("arc", "arc_easy.yaml", "arc_easy")]
)
def test_documents_render_as_lm_eval_renders_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: str, file: str, name: str
) -> None:
    from lm_eval.tasks import TaskManager

    work = tmp_path / folder
    shutil.copytree(FIXTURES / folder, work)
    (work / "arc_challenge.yaml").unlink(missing_ok=True)
    path = work / file
    path.write_text(path.read_text().replace(f"task: {name}\n", f"task: {name}_fixture\n"))  # not the installed one
    monkeypatch.chdir(work)  # lm-eval reads relative data_files from the working directory
    theirs = TaskManager(include_path=str(work)).load_task_or_group([f"{name}_fixture"])[f"{name}_fixture"]
    docs = list(theirs.test_docs() if theirs.has_test_docs() else theirs.validation_docs())
    ours = load_lmeval_task(path)
    samples = ours.samples()
    assert len(docs) == len(samples) > 3
    for doc, sample in zip(docs, samples, strict=True):
        query = ours.build_request(sample).loglikelihood
        assert query is not None
        assert query.context == theirs.doc_to_text(doc)
        assert list(query.continuations) == [" " + c for c in theirs.doc_to_choice(doc)]
        assert sample.target == theirs.doc_to_target(doc)
