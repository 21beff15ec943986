"""Hugging Face datasets (the ``hf`` extra), offline: a clear error without ``datasets``, local data with it."""

from __future__ import annotations

import json
import sys

import pytest

from assay.data import DatasetSpec, read_dataset, read_rows
from assay.errors import ConfigError, DataError
from assay.tasks import Task

ROWS = [{"question": "a?", "answer": "1"}, {"question": "b?", "answer": "2"}, {"question": "c?", "answer": "3"}]


def test_without_datasets_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # makes `import datasets` raise ImportError
    with pytest.raises(ConfigError, match=r"needs the 'datasets' package: pip install 'assay\[hf\]'"):
        read_rows({"hf": "squad", "split": "validation"})
    with pytest.raises(ConfigError, match=r"assay\[hf\]"):
        read_rows({"path": ".", "format": "hf"})


@pytest.fixture
def datasets(monkeypatch, tmp_path):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf_cache")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    datasets.disable_progress_bars()
    return datasets


def test_saved_dataset_via_load_from_disk(datasets, tmp_path):
    folder = tmp_path / "saved"
    datasets.Dataset.from_list(ROWS).save_to_disk(str(folder))
    data = read_dataset(DatasetSpec(path=str(folder), format="hf"))
    assert data.rows == ROWS and data.where(1).endswith("saved: row 2")
    with pytest.raises(ConfigError, match="'split' was given but the saved dataset has a single split"):
        read_rows({"path": str(folder), "format": "hf", "split": "test"})


def test_saved_dataset_dict_needs_a_split(datasets, tmp_path):
    folder = tmp_path / "dd"
    ds = datasets.Dataset.from_list(ROWS)
    datasets.DatasetDict({"train": ds, "test": ds.select([0])}).save_to_disk(str(folder))
    assert read_rows({"path": str(folder), "format": "hf", "split": "test"}) == ROWS[:1]
    with pytest.raises(ConfigError, match="set 'split'; the dataset has splits: test, train"):
        read_rows({"path": str(folder), "format": "hf"})
    with pytest.raises(ConfigError, match="no split 'dev'; the dataset has splits: test, train"):
        read_rows({"path": str(folder), "format": "hf", "split": "dev"})


def test_not_a_saved_dataset(datasets, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="cannot load a saved Hugging Face dataset"):
        read_rows({"path": str(tmp_path / "empty"), "format": "hf"})
    with pytest.raises(DataError, match=r"not a folder written by Dataset\.save_to_disk"):
        read_rows({"path": str(tmp_path / "missing"), "format": "hf"})


def test_json_builder_with_local_data_files(datasets, tmp_path):
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    data = read_dataset(DatasetSpec(hf="json", data_files="d.jsonl", split="train"), base_dir=tmp_path)
    assert data.rows == ROWS and data.source == "hf:json[train]"
    with pytest.raises(DataError, match=r"hf:json: cannot load the Hugging Face dataset"):
        read_rows({"hf": "json", "data_files": str(tmp_path / "missing.jsonl"), "split": "train"})


def test_a_task_on_a_hugging_face_dataset(datasets, tmp_path):
    datasets.Dataset.from_list(ROWS).save_to_disk(str(tmp_path / "saved"))
    (tmp_path / "t.yaml").write_text(
        "name: hf_task\n"
        "dataset: {path: saved, format: hf}\n"
        "fields: {input: question, target: answer}\n"
        "template: 'Q: {{ question }}'\n"
        "evaluators: [exact_match]\n"
    )
    task = Task.from_yaml(tmp_path / "t.yaml")
    assert [s.target for s in task.samples()] == ["1", "2", "3"]
    assert task.build_request(task.samples()[2]).messages[0]["content"] == "Q: c?"
    same_rows = Task(
        "x",
        ROWS,
        fields={"input": "question", "target": "answer"},
        template="Q: {{ question }}",
        evaluators=["exact_match"],
    )
    assert task.hash == same_rows.hash


def test_hub_options_reach_load_dataset(datasets, monkeypatch):
    calls = []

    def fake_load_dataset(path, **kwargs):
        calls.append((path, kwargs))
        return datasets.Dataset.from_list(ROWS)

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    data = read_dataset(DatasetSpec(hf="org/qa", name="easy", split="test", revision="abc123"))
    assert calls == [("org/qa", {"split": "test", "name": "easy", "revision": "abc123"})]
    assert data.rows == ROWS and data.source == "hf:org/qa[test]" and data.where(0) == "hf:org/qa[test]: row 1"
