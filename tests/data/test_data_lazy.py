"""Large JSONL datasets are read on demand (JsonlRows, LazySamples): the same rows, samples, hash, errors and
task behaviour as the eager reader, with only offsets held in memory."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from assay.data import DatasetSpec, read_dataset
from assay.data import readers as readers_module
from assay.data.lazy import JsonlRows, is_lazy
from assay.errors import DataError
from assay.tasks import Task
from assay.tasks.lazy_samples import LazySamples, SampleView

ROWS: list[dict[str, Any]] = [
    {"id": f"r{i}", "q": f"Frage {i}: «{'東京' if i % 2 else 'Zürich'}»?", "a": str(i), "m": {"k": [i, None]}}
    for i in range(23)
]


def jsonl(path: Path, rows: list[dict[str, Any]], *, bom: bool = False, blanks: bool = True) -> Path:
    parts = []
    for i, row in enumerate(rows):
        parts.append(json.dumps(row, ensure_ascii=i % 3 == 0))
        if blanks and i % 5 == 0:
            parts.append("   ")
    text = "\n".join(parts) + ("\r\n" if rows else "")
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return path


def read_both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    eager = read_dataset(DatasetSpec(path=str(path)))
    monkeypatch.setattr(readers_module, "LAZY_MIN_BYTES", 0)
    lazy = read_dataset(DatasetSpec(path=str(path)))
    monkeypatch.undo()
    assert not is_lazy(eager.rows) and is_lazy(lazy.rows)
    return eager, lazy


@pytest.mark.parametrize("bom", [False, True])
def test_lazy_rows_equal_the_eager_rows_lines_and_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bom: bool):
    eager, lazy = read_both(jsonl(tmp_path / "d.jsonl", ROWS, bom=bom), monkeypatch)
    assert list(lazy.rows) == list(eager.rows) == ROWS
    assert list(lazy.lines) == list(eager.lines)
    assert [lazy.rows[i] for i in (0, 7, 22, -1)] == [ROWS[0], ROWS[7], ROWS[22], ROWS[-1]]
    assert lazy.rows[3:6] == ROWS[3:6] and len(lazy) == len(ROWS)
    assert lazy.content_hash == eager.content_hash
    assert lazy.where(5) == eager.where(5)
    with pytest.raises(IndexError):
        lazy.rows[len(ROWS)]


def test_iteration_reads_in_blocks_across_block_edges(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import assay.data.lazy as lazy_module

    monkeypatch.setattr(lazy_module, "BLOCK_ROWS", 4)
    rows = JsonlRows(jsonl(tmp_path / "d.jsonl", ROWS), "d.jsonl")
    assert list(rows) == ROWS and rows.block(5, 9) == ROWS[5:9] and rows.block(3, 3) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": 1}\n{"a": 2,}\n', r"d\.jsonl:2: invalid JSON"),
        ('{"a": 1}\n\n[1]\n', r"d\.jsonl:3: expected a JSON object on each line, got an array"),
        (b'{"a": 1}\n{"a": "\xff"}\n', r"d\.jsonl:2: not valid UTF-8"),
    ],
)
def test_a_bad_line_is_named_as_by_the_eager_reader(tmp_path: Path, text: str | bytes, message: str):
    path = tmp_path / "d.jsonl"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(DataError, match=message):
        JsonlRows(path, "d.jsonl")
    with pytest.raises(DataError, match=message):
        read_dataset(DatasetSpec(path=str(path)))


def test_a_file_changed_while_in_use_is_an_error_not_wrong_rows(tmp_path: Path):
    path = jsonl(tmp_path / "d.jsonl", ROWS)
    rows = JsonlRows(path, "d.jsonl")
    assert rows[1] == ROWS[1]
    with open(path, "ab") as fh:
        fh.write(b'{"id": "late"}\n')
    with pytest.raises(DataError, match="changed while the run was reading it"):
        rows[2]


def test_rows_pickle_without_their_open_file(tmp_path: Path):
    import pickle

    rows = JsonlRows(jsonl(tmp_path / "d.jsonl", ROWS), "d.jsonl")
    assert rows[0] == ROWS[0]  # opens the file
    copy = pickle.loads(pickle.dumps(rows))
    assert list(copy) == ROWS


def task_for(path: Path, **extra: Any) -> Task:
    config = {
        "name": "lazy",
        "dataset": {"path": str(path)},
        "fields": {"id": "id", "input": "q", "target": "a", "metadata": {"k": "m.k"}},
        "template": "{{ q }}",
        "evaluators": ["exact_match"],
        **extra,
    }
    return Task.from_config(config)


def tasks_both(path: Path, monkeypatch: pytest.MonkeyPatch, **extra: Any) -> tuple[Task, Task]:
    eager = task_for(path, **extra)
    eager.validate()
    monkeypatch.setattr(readers_module, "LAZY_MIN_BYTES", 0)
    lazy = task_for(path, **extra)
    lazy.validate()
    monkeypatch.undo()
    return eager, lazy


def test_a_lazy_task_has_the_eager_samples_hash_and_requests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    eager, lazy = tasks_both(jsonl(tmp_path / "d.jsonl", ROWS), monkeypatch, fewshot={"n": 2, "seed": 5})
    assert isinstance(lazy._all_samples(), LazySamples)
    assert lazy.hash == eager.hash and lazy.n_docs == eager.n_docs == len(ROWS)
    assert list(lazy.samples()) == list(eager.samples())
    for limit, seed in [(None, None), (5, None), (None, 3), (4, 3), (0, None)]:
        view = lazy.samples(limit, seed)
        assert isinstance(view, SampleView)
        assert list(view) == list(eager.samples(limit, seed))
        assert len(view) == len(eager.samples(limit, seed))
        if len(view) > 1:
            assert view[1] == eager.samples(limit, seed)[1] and view[:2] == list(eager.samples(limit, seed))[:2]
    for sample, theirs in zip(lazy.samples(), eager.samples(), strict=True):
        assert lazy.build_request(sample).messages == eager.build_request(theirs).messages  # few-shot from the pool


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([*ROWS[:4], {**ROWS[4], "id": "r1"}, *ROWS[5:]], r"d\.jsonl:\d+: duplicate id 'r1', first used at d\.jsonl:"),
        ([*ROWS[:6], {"id": "r6", "a": "x", "m": {"k": 1}}, *ROWS[7:]], r"no field 'q' \(mapped as fields.input\)"),
        (  # the earlier of the two problems is reported, as the eager path does
            [*ROWS[:3], {**ROWS[3], "id": "r0"}, {"id": "r9x", "a": "x", "m": {"k": 1}}, *ROWS[5:]],
            "duplicate id 'r0'",
        ),
        ([*ROWS[:3], {"id": "r9x", "a": "x", "m": {"k": 1}}, {**ROWS[4], "id": "r0"}, *ROWS[5:]], "no field 'q'"),
    ],
)
def test_lazy_samples_raise_the_eager_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rows: Any, message: str):
    jsonl(tmp_path / "d.jsonl", rows)
    monkeypatch.chdir(tmp_path)
    errors = []
    for threshold in (1 << 40, 0):
        monkeypatch.setattr(readers_module, "LAZY_MIN_BYTES", threshold)
        with pytest.raises(DataError, match=message) as caught:
            task_for(Path("d.jsonl")).samples()
        errors.append(str(caught.value))
    assert errors[0] == errors[1]


def test_hash_collisions_between_different_ids_are_not_duplicates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import assay.tasks.lazy_samples as lazy_samples_module

    monkeypatch.setattr(lazy_samples_module, "hash", lambda value: 7, raising=False)  # every id collides
    monkeypatch.setattr(readers_module, "LAZY_MIN_BYTES", 0)
    task = task_for(jsonl(tmp_path / "d.jsonl", ROWS))
    assert [s.id for s in task.samples()] == [r["id"] for r in ROWS]


def test_the_file_size_threshold_is_what_decides(tmp_path: Path):
    small = read_dataset(DatasetSpec(path=str(jsonl(tmp_path / "d.jsonl", ROWS))))
    assert not is_lazy(small.rows) and os.path.getsize(tmp_path / "d.jsonl") < readers_module.LAZY_MIN_BYTES
    many = [{"id": f"r{i}", "q": f"question {i} " + "é" * 200} for i in range(readers_module.LAZY_MIN_BYTES // 200)]
    large = read_dataset(DatasetSpec(path=str(jsonl(tmp_path / "large.jsonl", many))))
    assert os.path.getsize(tmp_path / "large.jsonl") >= readers_module.LAZY_MIN_BYTES
    assert is_lazy(large.rows) and list(large.rows) == many  # a dataset of a few MB is not held as dicts


def test_a_bad_line_after_a_row_lacking_a_field_is_reported_first_as_by_the_eager_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The rows are checked as the file is read: a row lacking a field does not stop the file's own checks."""
    path = jsonl(tmp_path / "d.jsonl", [*ROWS[:3], {"id": "r3", "a": "x", "m": {"k": 1}}, *ROWS[4:]], blanks=False)
    path.write_bytes(path.read_bytes() + b'{"id": "late",}\n')
    monkeypatch.chdir(tmp_path)
    errors = []
    for threshold in (1 << 40, 0):
        monkeypatch.setattr(readers_module, "LAZY_MIN_BYTES", threshold)
        with pytest.raises(DataError, match=rf"d\.jsonl:{len(ROWS) + 1}: invalid JSON") as caught:
            task_for(Path("d.jsonl")).samples()
        errors.append(str(caught.value))
    assert errors[0] == errors[1]
