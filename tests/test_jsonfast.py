"""assay.jsonfast reads a line as the parser used before did: the same value (type, sign of zero, NaN), or the same
refusal with the same message."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pydantic_core
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.jsonfast import MAX_BRACKETS, NOT_SURE, loads, loads_text, try_loads, uncertain


def same(a: Any, b: Any) -> bool:
    """Equal as values and as types, key order kept, -0.0 apart from 0.0, NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def outcome(parse: Any, data: Any) -> tuple[str, Any]:
    try:
        return "value", parse(data)
    except Exception as err:  # the refusal, compared by type and message
        return "error", (type(err), str(err))


def check(data: bytes) -> None:
    """try_loads is NOT_SURE or json.loads' and from_json's value; loads gives what each previous parser gives."""
    got = try_loads(data)
    for previous in (json.loads, pydantic_core.from_json):
        expected = outcome(previous, data)
        if got is not NOT_SURE:
            assert expected[0] == "value" and same(got, expected[1]), (data, got, expected)
        actual = outcome(lambda d, p=previous: loads(d, p), data)  # type: ignore[misc]
        assert actual[0] == expected[0]
        assert same(actual[1], expected[1]) if actual[0] == "value" else actual[1] == expected[1]


BIG = st.one_of(st.integers(), st.integers(min_value=2**63 - 5, max_value=2**70), st.integers(max_value=-(2**63) + 5))
FLOATS = st.floats(allow_nan=True, allow_infinity=True)
LEAVES = st.one_of(st.none(), st.booleans(), BIG, FLOATS, st.text(max_size=12))
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(VALUES, st.booleans(), st.booleans())
def test_a_json_text_reads_as_before(value: Any, spaced: bool, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, separators=(", ", ": ") if spaced else (",", ":"))
    check(text.encode("utf-8", "surrogatepass"))
    check(pydantic_core.to_json(value) if not _has_lone_surrogate(value) else text.encode("utf-8", "surrogatepass"))


def _has_lone_surrogate(value: Any) -> bool:
    return "\\ud" in json.dumps(value)


NUMBER = st.from_regex(r"\A-?(0|[1-9][0-9]{0,40})(\.[0-9]{1,40})?([eE][-+]?[0-9]{1,25})?\Z")


@settings(max_examples=400, deadline=None)
@given(NUMBER, st.sampled_from(["{}", '{"a": {}}', "[{}]", "[0, {}]", " {} "]))
def test_numbers_read_as_before(number: str, shape: str) -> None:
    check(shape.replace("{}", number).encode())


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40), st.integers(min_value=0, max_value=60))
def test_damaged_lines_are_refused_or_read_as_before(noise: bytes, at: int) -> None:
    line = b'{"id": "q1", "n": [1, -2.5e3, null, true], "t": "\xc3\xa9\\u00e9\\ud83d\\ude00"}'
    check(line[:at] + noise + line[at:])
    check(line[:at] + line[at + len(noise) :])


@pytest.mark.parametrize(
    "data",
    [
        b'{"a": NaN}',
        b'{"a": Infinity, "b": -Infinity}',
        b'{"a": 1e400}',
        b'{"a": -1e400}',
        b"[18446744073709551615]",
        b"[18446744073709551616]",
        b"[-9223372036854775808]",
        b"[-9223372036854775809]",
        b'{"a":123456789012345678901234567890}',
        b'{"a":\t-123456789012345678901234567890}',
        b"12345678901234567890",
        b'{"a": "\\ud800"}',
        b'{"a": "\\udc00\\ud800"}',
        b'{"a": "\xed\xa0\x80"}',  # an encoded surrogate
        b'{"a": "\xff"}',
        b'\xef\xbb\xbf{"a": 1}',
        b'{"a": 1, "a": 2}',
        b'{"a": 1}{"b": 2}',
        b'\x0c{"a": 1}',
        b'{"a": "\x00"}',
        b"",
        b"  \n",
        b'{"a": 0.000020400805399913223, "b": 7.460753399936948e-6, "c": -0.0, "d": -0}',
        b'{"a": 1.5e-1234567890123456789, "b": 2e-324, "c": 4.9406564584124654e-324}',
        b'{"a": 1.7976931348623157e308, "b": 1.7976931348623159e308}',
        '{"a": "Zürich 東京"}'.encode("utf-16"),
    ],
)
def test_edge_cases_read_as_before(data: bytes) -> None:
    check(data)


def test_integers_beyond_64_bits_are_never_read_by_orjson() -> None:
    for number in (2**64, 2**64 + 1, -(2**63) - 1, 10**30, -(10**40)):
        for text in (f"[{number}]", f'{{"a": {number}}}', f'{{"a":[1,{number}]}}', f"{number}", f" {number}\n"):
            assert uncertain(text.encode()) and try_loads(text.encode()) is NOT_SURE
    assert not uncertain(b'{"a": 0.000020400805399913223, "b": "1234567890"}')  # a fraction is not an integer


@pytest.mark.parametrize("depth", [MAX_BRACKETS, MAX_BRACKETS + 1, 256, 1000, 1024])
def test_deep_nesting_reads_as_before(depth: int) -> None:
    rnd = random.Random(depth)
    opened = [rnd.choice(["[", '{"k":']) for _ in range(depth)]
    data = ("".join(opened) + "1" + "".join("]" if o == "[" else "}" for o in reversed(opened))).encode()
    assert (try_loads(data) is NOT_SURE) == (depth > MAX_BRACKETS)
    if depth <= MAX_BRACKETS:  # the depth orjson is trusted with is one from_json reads
        assert same(pydantic_core.from_json(data), try_loads(data))
    with pytest.raises(ValueError):  # deeper, from_json refuses (the previous parser decides)
        loads(("[" * 256 + "]" * 256).encode(), pydantic_core.from_json)


def test_loads_text_reads_a_decoded_line_as_before() -> None:
    for line in ['{"a": "\ud800"}', '{"a": "é", "b": 1}\n', "{bad\n", '{"a": NaN}']:
        assert outcome(lambda x: loads_text(x, json.loads), line)[0] == outcome(json.loads, line)[0]
        if outcome(json.loads, line)[0] == "value":
            assert same(loads_text(line, json.loads), json.loads(line))
        else:
            with pytest.raises(json.JSONDecodeError) as err:
                loads_text(line, json.loads)
            assert str(err.value) == outcome(json.loads, line)[1][1]


BIG_LINE = b'{"id": 18446744073709551616, "prediction": "x", "n": -9223372036854775809, "f": NaN, "i": -Infinity}'


def test_the_readers_read_big_integers_and_nan_as_before(tmp_path: Path) -> None:
    """Each caller gets exact integers beyond 64 bits (orjson alone would give floats) and NaN/Infinity."""
    from assay.data.formats import jsonl_row
    from assay.data.lazy import JsonlRows
    from assay.models.predictions import PredictionsModel
    from assay.runner.logged import iter_sample_lines_of

    expected = json.loads(BIG_LINE)
    assert same(jsonl_row(BIG_LINE + b"\n", 1, "d"), expected)
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"a": 1}\n' + BIG_LINE + b"\n")
    assert same(list(JsonlRows(path, "d"))[1], expected)
    assert same(next(iter_sample_lines_of([BIG_LINE], "s", 1)), expected)
    path.write_bytes(BIG_LINE + b"\n")
    model = PredictionsModel(path)
    entry = model.entries([str(2**64)])[0]
    assert entry is not None and entry.texts == ["x"]  # the id read as the integer it is, not 1.8446744073709552e+19


def test_sample_records_read_as_before(tmp_path: Path) -> None:
    from assay.record import SampleRecord
    from assay.store.sampleindex import SAMPLES, SampleStream, finished_keys, index_samples, iter_dicts

    lines = [
        SampleRecord(task="t", task_hash="h", doc_id=i, sample_id=f"s{i}", doc=doc, prompt="p", messages=[])
        .model_dump_json()
        .encode()
        for i, doc in enumerate([{"q": 2**70}, {"q": float("nan")}, {"q": -(2**64)}, {"q": "ü\U0001f600 \\u0000"}])
    ]
    (tmp_path / SAMPLES).write_bytes(b"\n".join(lines) + b"\n")
    expected = [pydantic_core.from_json(line) for line in lines]
    assert all(same(a, b) for (_, a), b in zip(iter_dicts(index_samples(tmp_path)), expected, strict=True))
    assert all(same(a, b) for (_, a), b in zip(SampleStream(tmp_path), expected, strict=True))
    assert finished_keys(tmp_path) == {("t", f"s{i}") for i in range(4)}


def test_a_flat_object_needs_no_scan_unless_orjson_made_a_float(monkeypatch: pytest.MonkeyPatch) -> None:
    """One level of strings, integers, booleans and nulls is orjson's value as it stands; an integer past 64 bits
    (orjson's float) sends the line to the scan, and so to the previous parser."""
    import assay.jsonfast as jsonfast

    scanned: list[bytes] = []
    monkeypatch.setattr(jsonfast, "uncertain", lambda data: scanned.append(data) or uncertain(data))
    flat = b'{"id": "q1", "n": 9223372036854775807, "ok": true, "none": null, "text": "12345678901234567890"}'
    assert same(try_loads(flat), json.loads(flat)) and scanned == []
    big = b'{"id": 18446744073709551616}'
    assert try_loads(big) is NOT_SURE and scanned == [big]
    assert same(loads(big, json.loads), {"id": 2**64})
    nested = b'{"id": "q1", "m": {"k": 1}}'
    assert same(try_loads(nested), json.loads(nested)) and scanned[-1] == nested
