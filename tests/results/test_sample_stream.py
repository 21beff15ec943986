"""SampleStream indexes samples.jsonl in the pass that parses it: the same lines, positions, torn count and index
as index_samples + iter_dicts, on files with blank lines, rewritten samples and torn or valid last lines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from assay.store.sampleindex import SampleStream, index_samples, iter_dicts
from tests.results import runfactory as rf


def _lines(n: int = 6) -> list[str]:
    return [rf.record("t", i, {"em": [rf.verdict(float(i % 2))]}).model_dump_json() for i in range(n)]


CASES = {
    "plain": lambda ls: "\n".join(ls) + "\n",
    "no final newline": lambda ls: "\n".join(ls),
    "blank lines": lambda ls: "\n\n".join(ls) + "\n  \n\n",
    "torn tail": lambda ls: "\n".join(ls) + '\n{"task": "t", "doc_id": 9, "sam',
    "torn but JSON": lambda ls: "\n".join(ls) + '\n{"task": "t"}\n',
    "rewritten": lambda ls: "\n".join([*ls, ls[2].replace('"eval_seconds":0.001', '"eval_seconds":0.5')]) + "\n",
    "empty": lambda ls: "",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_stream_reads_what_the_index_reads(tmp_path: Path, case: str) -> None:
    (tmp_path / "samples.jsonl").write_text(CASES[case](_lines()), encoding="utf-8")
    index = index_samples(tmp_path)
    stream = SampleStream(tmp_path)
    seen = list(stream)
    assert stream.torn == index.torn
    assert stream.rewritten == (case == "rewritten")
    again = stream.index()
    assert np.array_equal(again.offsets, index.offsets) and np.array_equal(again.linenos, index.linenos)
    if not stream.rewritten:
        assert seen == list(iter_dicts(index))
    else:
        assert len(seen) == len(index) + 1  # every copy was read: the writer reads again through the index


def test_a_missing_file_is_an_empty_stream(tmp_path: Path) -> None:
    stream = SampleStream(tmp_path)
    assert list(stream) == [] and len(stream.index()) == 0 and stream.torn == 0
