"""labels.jsonl and calibrations.jsonl take a second append, and a torn last line is cut before it."""

from __future__ import annotations

from pathlib import Path

from assay.store.jsonlfiles import append_jsonl, iter_jsonl


def test_second_append_and_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    assert append_jsonl(path, [{"a": 1}]) == 1
    assert append_jsonl(path, [{"a": 2}]) == 1  # raised EBADF: the file was opened write-only for a read
    with open(path, "ab") as fh:
        fh.write(b'{"a": 3')  # a writer killed mid-line
    append_jsonl(path, [{"a": 4}])
    assert [obj["a"] for _, obj in iter_jsonl(path)] == [1, 2, 4]
