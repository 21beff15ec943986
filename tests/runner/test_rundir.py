import errno
import json
import os
from pathlib import Path

import pytest

from assay.atomicfile import atomic_write_text
from assay.errors import DataError
from assay.record import SampleRecord
from assay.store.rundir import SampleWriter, repair_torn_tail
from assay.store.sampleindex import SAMPLES, finished_keys, read_records


def record(i: int, task: str = "t") -> SampleRecord:
    return SampleRecord(
        task=task, task_hash="h", doc_id=i, sample_id=f"s{i}", doc={"q": i}, prompt=f"q{i}", messages=[]
    )


def test_writer_appends_one_line_per_sample_and_reads_back(tmp_path):
    with SampleWriter(tmp_path / SAMPLES, fsync_every=2) as w:
        for i in range(5):
            w.write(record(i))
    lines = (tmp_path / SAMPLES).read_text().splitlines()
    assert len(lines) == 5 and json.loads(lines[3])["sample_id"] == "s3"
    assert [r.doc_id for r in read_records(tmp_path)] == [0, 1, 2, 3, 4]
    assert finished_keys(tmp_path) == {("t", f"s{i}") for i in range(5)}


def test_lines_are_on_disk_before_close(tmp_path):
    w = SampleWriter(tmp_path / SAMPLES)
    w.write(record(0))
    # another reader (a resuming process) sees the finished sample although the writer is still open
    assert finished_keys(tmp_path) == {("t", "s0")}
    w.close()


def test_torn_last_line_is_cut_and_not_counted(tmp_path):
    path = tmp_path / SAMPLES
    with SampleWriter(path) as w:
        w.write(record(0))
        w.write(record(1))
    full = path.read_bytes()
    path.write_bytes(full + b'{"task": "t", "sample_id": "s2", "doc')
    assert finished_keys(tmp_path) == {("t", "s0"), ("t", "s1")}
    removed = repair_torn_tail(path)
    assert removed == len(b'{"task": "t", "sample_id": "s2", "doc')
    assert path.read_bytes() == full
    assert repair_torn_tail(path) == 0


def test_torn_only_line(tmp_path):
    path = tmp_path / SAMPLES
    path.write_bytes(b'{"task"')
    assert repair_torn_tail(path) == 7 and path.read_bytes() == b""


def test_corrupt_middle_line_names_file_and_line(tmp_path):
    path = tmp_path / SAMPLES
    path.write_text(record(0).model_dump_json() + "\nnot json\n" + record(1).model_dump_json() + "\n")
    with pytest.raises(DataError, match=r"samples.jsonl:2: corrupt sample line"):
        finished_keys(tmp_path)


def test_duplicate_sample_is_reported(tmp_path):
    path = tmp_path / SAMPLES
    line = record(0).model_dump_json() + "\n"
    path.write_text(line + line)
    with pytest.raises(DataError, match=r":2: sample 's0' of task 't' appears twice"):
        finished_keys(tmp_path)


def test_atomic_write_gives_new_files_the_umask_mode_and_keeps_an_existing_mode(tmp_path):
    plain = tmp_path / "plain.json"
    plain.write_text("x")  # what an ordinary open() gives a new file under this process's umask
    new = tmp_path / "results.json"
    atomic_write_text(new, "x")
    assert new.stat().st_mode & 0o777 == plain.stat().st_mode & 0o777  # not mkstemp's private 0600
    private = tmp_path / "private.json"
    private.write_text("x")
    private.chmod(0o640)
    atomic_write_text(private, "y")
    assert private.stat().st_mode & 0o777 == 0o640


def test_atomic_write_replaces_whole_file(tmp_path):
    target = tmp_path / "results.json"
    atomic_write_text(target, "old")
    atomic_write_text(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_drop_samples_rewrites_the_file_without_them_keeping_the_rest_byte_for_byte(tmp_path):
    import os

    from assay.store.rundir import drop_samples
    from assay.store.sampleindex import SAMPLES

    lines = [json.dumps({"task": "t", "sample_id": f"s{i}", "x": "é" * i}, ensure_ascii=False) for i in range(6)]
    path = tmp_path / SAMPLES
    path.write_text("\n".join(lines) + '\n\n{"task": "t", "sample_id": "torn', encoding="utf-8")
    os.chmod(path, 0o640)
    assert drop_samples(tmp_path, {("t", "s1"), ("t", "s4"), ("other", "s2")}) == 2
    kept = [line for i, line in enumerate(lines) if i not in (1, 4)]
    assert path.read_text(encoding="utf-8") == "\n".join(kept) + '\n\n{"task": "t", "sample_id": "torn'
    assert path.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == [SAMPLES]  # no temporary file left
    assert drop_samples(tmp_path, set()) == 0


@pytest.mark.parametrize("kernel", [True, False])
def test_a_workers_file_of_records_is_appended_whole_by_copy_or_by_buffer(tmp_path, monkeypatch, kernel):
    """What a scoring process wrote to a file is appended after the records already there, in the kernel
    (copy_file_range) or, where it cannot, through a buffer; the counts and checkpoints are those of the lines."""
    if not kernel:

        def refuse(*_args):
            raise OSError(errno.EXDEV, "cross-device")

        monkeypatch.setattr(os, "copy_file_range", refuse, raising=False)
    spool = tmp_path / "chunk.jsonl"
    lines = [record(i).model_dump_json().encode() for i in range(1, 4)]
    spool.write_bytes(b"\n".join(lines) + b"\n")
    with SampleWriter(tmp_path / SAMPLES, fsync_every=2) as w:
        w.write(record(0))
        w.append_file(str(spool), 3)
        w.write(record(4))
        assert w.written == 5
    assert [r.doc_id for r in read_records(tmp_path)] == [0, 1, 2, 3, 4]


def test_a_failed_copy_of_a_workers_file_leaves_the_records_before_it(tmp_path, monkeypatch):
    import assay.store.rundir as rundir

    def half_then_full(src, dst, size, at):  # half the chunk copied, then the disk is full
        with open(dst, "r+b") as out:
            out.seek(at)
            out.write(os.pread(src, size // 2, 0))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(rundir, "kernel_copy", half_then_full)
    spool = tmp_path / "chunk.jsonl"
    spool.write_bytes(b"\n".join(record(i).model_dump_json().encode() for i in range(1, 4)) + b"\n")
    with SampleWriter(tmp_path / SAMPLES) as w:
        w.write(record(0))
        with pytest.raises(OSError, match="No space"):
            w.append_file(str(spool), 3)
        assert w.written == 1
    assert [r.doc_id for r in read_records(tmp_path)] == [0]


def test_remove_leftovers_takes_a_killed_writers_temporaries_and_nothing_else(tmp_path: Path) -> None:
    from assay.store.rundir import remove_leftovers

    left = [".chunks-x1y2", ".samples_qa.jsonl.a8Zk.tmp", ".samples_a.b.jsonl.k.tmp", ".results.json.0x.tmp"]
    left.append(".run.json.77.tmp")
    kept = ["samples.jsonl", "samples_qa.jsonl", ".samples_qa.jsonl", "notes.tmp", ".other.json.1.tmp", "report.html"]
    kept.append(".results.json.tmp")  # not a name atomic_file makes (no random part)
    (tmp_path / left[0]).mkdir()
    (tmp_path / left[0] / "chunk.jsonl").write_text("{}\n")
    for name in left[1:] + kept:
        (tmp_path / name).write_text("x")
    (tmp_path / ".chunks-is-a-file").write_text("x")  # only folders of that name are the workers'
    assert remove_leftovers(tmp_path) == sorted(left)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*kept, ".chunks-is-a-file"])
    assert remove_leftovers(tmp_path) == []
