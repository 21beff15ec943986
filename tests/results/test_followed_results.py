"""A results pass that follows samples.jsonl while a run writes it (``write_results(follow=)``, as a model run
makes it): it reads only whole lines the writer vouches for, waits on the writer's Growth (no polling), ends when
the file is complete, and writes the same results.json and sample logs as a pass made afterwards; a resumed run's
lines are read first, a rewritten sample falls back to the index, and an abandoned run writes nothing."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from assay.results import write_results
from assay.store.growth import Abandoned, Growth
from assay.store.rundir import SampleWriter
from assay.store.sampleindex import SampleStream
from tests.results import runfactory as rf

N = 40


def _records(lo: int, hi: int) -> list[Any]:
    return [rf.record("qa", i, {"em": [rf.verdict(float(i % 3 == 0))]}) for i in range(lo, hi)]


def _run(path: Path, records: list[Any]) -> Path:
    return rf.write_run(path, rf.manifest([rf.task("qa", (("em", True),), n=N)]), records)


def _outputs(run: Path) -> dict[str, Any]:
    doc = json.loads((run / "results.json").read_text(encoding="utf-8"))
    doc["assay"].pop("results_seconds")
    logs = (run / "samples_qa.jsonl").read_bytes()
    return {"doc": doc, "logs": logs}


class _Pass:
    """write_results(follow=) in a thread, as the runner runs it."""

    def __init__(self, run: Path, growth: Growth) -> None:
        self.doc: dict[str, Any] | None = None
        self.error: BaseException | None = None

        def go() -> None:
            try:
                self.doc = write_results(run, bootstrap_iters=50, follow=growth)
            except BaseException as err:
                self.error = err

        self.thread = threading.Thread(target=go)
        self.thread.start()

    def join(self) -> None:
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()


def _write_followed(run: Path, batches: list[list[Any]], *, resumed: int = 0, end: str = "complete") -> _Pass:
    growth = Growth()
    with SampleWriter(run / "samples.jsonl", growth=growth) as writer:
        assert growth.size == (run / "samples.jsonl").stat().st_size  # a resumed run's lines count as written
        follower = _Pass(run, growth)
        for batch in batches:
            writer.write_lines([r.model_dump_json().encode() for r in batch])
    getattr(growth, end)()
    follower.join()
    return follower


def test_lines_appended_while_the_pass_reads_give_what_a_later_pass_gives(tmp_path: Path) -> None:
    records = _records(0, N)
    followed = _run(tmp_path / "followed", [])
    done = _write_followed(followed, [records[i : i + 7] for i in range(0, N, 7)])
    assert done.error is None and done.doc is not None
    after = _run(tmp_path / "after", records)
    write_results(after, bootstrap_iters=50)
    assert _outputs(followed) == _outputs(after)


def test_a_resumed_run_reads_the_lines_already_there_then_the_new_ones(tmp_path: Path) -> None:
    records = _records(0, N)
    resumed = _run(tmp_path / "resumed", records[:15])
    done = _write_followed(resumed, [records[15:30], records[30:]])
    assert done.error is None
    after = _run(tmp_path / "after", records)
    write_results(after, bootstrap_iters=50)
    assert _outputs(resumed) == _outputs(after)


def test_a_sample_written_twice_is_read_again_through_the_index(tmp_path: Path) -> None:
    records = _records(0, N)
    again = rf.record("qa", 3, {"em": [rf.verdict(1.0)]})
    rewritten = _run(tmp_path / "rewritten", records[:10])
    done = _write_followed(rewritten, [records[10:], [again]])
    assert done.error is None
    lines = [r.model_dump_json() for r in [*records, again]]
    after = rf.write_run(tmp_path / "after", rf.manifest([rf.task("qa", (("em", True),), n=N)]), [])
    (after / "samples.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    write_results(after, bootstrap_iters=50)
    assert _outputs(rewritten) == _outputs(after)


def test_an_abandoned_run_writes_nothing(tmp_path: Path) -> None:
    run = _run(tmp_path / "run", [])
    done = _write_followed(run, [_records(0, 10)], end="abandon")
    assert isinstance(done.error, Abandoned)
    assert not (run / "results.json").exists()
    assert sorted(p.name for p in run.iterdir()) == ["run.json", "samples.jsonl"]  # no sample log, no spool


def test_the_follower_reads_only_what_the_writer_vouches_for(tmp_path: Path) -> None:
    """Bytes past the size the writer gave (a block being written, or one a failed write will cut back) are not
    read until the writer says so; a torn last line of a complete file is left out as in any pass."""
    lines = [r.model_dump_json().encode() + b"\n" for r in _records(0, 4)]
    path = tmp_path / "samples.jsonl"
    path.write_bytes(lines[0] + lines[1])
    growth = Growth(len(lines[0]))
    stream = SampleStream(tmp_path, follow=growth)
    seen: list[int] = []
    reader = threading.Thread(target=lambda: seen.extend(i for i, _ in stream))
    reader.start()
    reader.join(timeout=0.3)
    assert reader.is_alive()
    with path.open("ab") as fh:
        fh.write(lines[2] + lines[3][:20])  # a whole line, then half of one
    growth.appended(len(lines[0]) + len(lines[1]) + len(lines[2]))
    growth.complete()
    reader.join(timeout=10)
    assert not reader.is_alive()
    assert seen == [0, 1, 2] and stream.torn == 1


def test_an_abandoned_stream_raises(tmp_path: Path) -> None:
    (tmp_path / "samples.jsonl").write_bytes(b"")
    growth = Growth()
    stream = SampleStream(tmp_path, follow=growth)
    growth.abandon()
    with pytest.raises(Abandoned):
        list(stream)


def test_an_abandoned_stream_stops_reading_its_backlog(tmp_path: Path) -> None:
    lines = [r.model_dump_json().encode() + b"\n" for r in _records(0, 5)]
    (tmp_path / "samples.jsonl").write_bytes(b"".join(lines))
    growth = Growth(sum(map(len, lines)))
    stream = iter(SampleStream(tmp_path, follow=growth))
    assert next(stream)[0] == 0
    growth.abandon()
    with pytest.raises(Abandoned):
        next(stream)
