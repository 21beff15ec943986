"""PredictionsModel: outputs read from a JSONL file, per sample and per repeat, with precise errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.errors import DataError
from assay.models.base import ModelError, Request, ToolCall
from assay.models.predictions import PredictionsModel


def write(tmp_path: Path, rows: list[Any], name: str = "preds.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def req(sample_id: str, repeat: int = 0) -> Request:
    return Request(sample_id=sample_id, messages=[{"role": "user", "content": "ignored"}], repeat=repeat)


async def test_reads_outputs_by_id(tmp_path: Path) -> None:
    path = write(tmp_path, [{"id": "a", "prediction": "Paris"}, "", {"id": 7, "prediction": "Rome"}])
    model = PredictionsModel(path)
    assert len(model) == 2 and model.cacheable is False
    response = await model.generate(req("a"))
    assert response.text == "Paris" and response.metadata == {"source": f"{path}:1"}
    assert (await model.generate(req("7"))).text == "Rome"  # ids are compared as strings


@pytest.mark.parametrize("field", ["prediction", "output", "response", "text"])
async def test_default_text_fields(tmp_path: Path, field: str) -> None:
    model = PredictionsModel(write(tmp_path, [{"id": "a", field: "x"}]))
    assert (await model.generate(req("a"))).text == "x"


async def test_explicit_fields(tmp_path: Path) -> None:
    path = write(tmp_path, [{"uid": "a", "answer": "42", "output": "not this", "calls": [{"name": "f"}]}])
    model = PredictionsModel(path, id_field="uid", text_field="answer", tool_calls_field="calls")
    response = await model.generate(req("a"))
    assert response.text == "42" and response.tool_calls == [ToolCall(name="f")]


async def test_list_values_are_one_output_per_repeat(tmp_path: Path) -> None:
    calls = [[{"name": "f", "arguments": {"x": 1}}], [], [{"function": {"name": "g", "arguments": '{"y": 2}'}}]]
    model = PredictionsModel(write(tmp_path, [{"id": "a", "prediction": ["r0", "r1", "r2"], "tool_calls": calls}]))
    texts = [(await model.generate(req("a", i))).text for i in range(3)]
    assert texts == ["r0", "r1", "r2"]
    assert (await model.generate(req("a", 0))).tool_calls == [ToolCall(name="f", arguments={"x": 1})]
    assert (await model.generate(req("a", 2))).tool_calls == [ToolCall(name="g", arguments={"y": 2})]
    with pytest.raises(ModelError, match=r"has 3 predictions .*repeat 3") as err:
        await model.generate(req("a", 3))
    assert not err.value.retryable


async def test_single_value_serves_repeat_zero_only(tmp_path: Path) -> None:
    model = PredictionsModel(write(tmp_path, [{"id": "a", "prediction": "x"}]))
    with pytest.raises(ModelError, match=r"one prediction \(not a list\).*repeat 1"):
        await model.generate(req("a", 1))


async def test_non_string_outputs_become_json_text(tmp_path: Path) -> None:
    model = PredictionsModel(write(tmp_path, [{"id": "a", "prediction": {"k": [1, "é"]}}, {"id": "b", "output": 3.5}]))
    assert (await model.generate(req("a"))).text == '{"k": [1, "é"]}'
    assert (await model.generate(req("b"))).text == "3.5"


async def test_tool_calls_only(tmp_path: Path) -> None:
    model = PredictionsModel(write(tmp_path, [{"id": "a", "tool_calls": [{"name": "f", "result": 1}]}]))
    response = await model.generate(req("a"))
    assert response.text is None and response.tool_calls == [ToolCall(name="f", result=1)]


async def test_missing_sample(tmp_path: Path) -> None:
    path = write(tmp_path, [{"id": "a", "prediction": "x"}])
    with pytest.raises(ModelError) as err:
        await PredictionsModel(path).generate(req("zz"))
    assert str(err.value) == f"no prediction for sample 'zz' in file {path}"
    assert not err.value.retryable


@pytest.mark.parametrize(
    ("rows", "kwargs", "message"),
    [
        ([{"id": "a", "prediction": "x"}, '{"id": "b", "prediction": '], {}, r"preds\.jsonl:2: not valid JSON"),
        ([{"id": "a", "prediction": "x"}, "", "[1, 2]"], {}, r"preds\.jsonl:3: expected a JSON object, got list"),
        ([{"prediction": "x"}], {}, r"preds\.jsonl:1: no 'id' field"),
        ([{"id": "a", "answer": "x"}], {}, r"preds\.jsonl:1: no prediction field \(looked for 'prediction', 'output'"),
        (
            [{"id": "a", "prediction": "x"}],
            {"text_field": "answer"},
            r"preds\.jsonl:1: no prediction field \(looked for 'answer'\)",
        ),
        (
            [{"id": "a", "prediction": "x", "tool_calls": "f"}],
            {},
            r"preds\.jsonl:1: field 'tool_calls': expected a list",
        ),
        (
            [{"id": "a", "prediction": "x", "tool_calls": [{"arguments": {}}]}],
            {},
            r"preds\.jsonl:1: field 'tool_calls'",
        ),
        ([{"id": "a", "prediction": ["x", "y"], "tool_calls": [[]]}], {}, r"preds\.jsonl:1: .*list of 2 lists"),
    ],
)
def test_malformed_lines_name_file_and_line(
    tmp_path: Path, rows: list[Any], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(DataError, match=message):
        PredictionsModel(write(tmp_path, rows), **kwargs)


def test_duplicate_ids_name_both_lines(tmp_path: Path) -> None:
    path = write(
        tmp_path, [{"id": "a", "prediction": "x"}, {"id": "b", "prediction": "y"}, {"id": "a", "prediction": "z"}]
    )
    with pytest.raises(DataError, match=r"sample id 'a' appears twice, on lines 1 and 3"):
        PredictionsModel(path)


def test_missing_file_and_changed_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="cannot read predictions file"):
        PredictionsModel(tmp_path / "absent.jsonl")
    path = write(tmp_path, [{"id": "a", "prediction": "x"}])
    digest = PredictionsModel(path).sha256
    assert PredictionsModel(path, sha256=digest).sha256 == digest
    write(tmp_path, [{"id": "a", "prediction": "changed"}])
    with pytest.raises(DataError, match="changed"):
        PredictionsModel(path, sha256=digest)


def test_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"id": "a", "prediction": "x"}).encode() + b"\r\n")
    assert len(PredictionsModel(path)) == 1


def test_identity(tmp_path: Path) -> None:
    path = write(tmp_path, [{"id": "a", "prediction": "x"}])
    identity = PredictionsModel(path).identity()
    assert identity["provider"] == "predictions" and identity["path"] == str(path) and len(identity["sha256"]) == 64


async def test_entries_are_read_back_from_disk_in_any_order_without_leaking_descriptors(tmp_path: Path) -> None:
    import os

    rows = [{"id": f"s{i}", "prediction": f"é{i}" * (i % 5 + 1)} for i in range(300)]
    path = write(tmp_path, [json.dumps(r, ensure_ascii=False) for r in rows])
    model = PredictionsModel(path)
    wanted = ["s299", "nope", "s0", "s150", "s150"]
    entries = model.entries(wanted)
    assert [e.texts[0] if e else None for e in entries] == ["é299" * 5, None, "é0", "é150", "é150"]
    assert entries[0] is not None and entries[0].line == 300
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        PredictionsModel(path).entries(["s1"])  # dropped without aclose
    assert len(os.listdir("/proc/self/fd")) <= before + 1
    await model.aclose()


def _many_rows(tmp_path: Path, n: int = 400) -> tuple[Path, dict[str, str]]:
    rows = [{"id": f"s{i}", "prediction": ("é" if i % 2 else "x") * (i % 7 + 1) + str(i)} for i in range(n)]
    lines = [json.dumps(r, ensure_ascii=i % 3 == 0) for i, r in enumerate(rows)]
    path = tmp_path / "many.jsonl"
    # a bad UTF-8 byte and an encoded surrogate: each line is decoded as it was at indexing ('replace')
    raw = "\n".join(lines).encode().replace(b'"s5", "prediction": "', b'"s5", "prediction": "\xff\xed\xa0\x80', 1)
    path.write_bytes(b"\xef\xbb\xbf" + raw + b"\r\n")
    expected = {r["id"]: r["prediction"] for r in rows}
    expected["s5"] = "\ufffd" * 4 + expected["s5"]
    return path, expected


@pytest.mark.parametrize("scattered", [False, True], ids=["one-read", "read-per-line"])
def test_entries_read_in_file_order_match_the_file_with_colliding_hashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scattered: bool
) -> None:
    import random

    from assay.models import predictions

    monkeypatch.setattr(predictions, "hash", lambda s: len(s) % 3, raising=False)  # ids collide in 3 buckets
    if scattered:  # the lines' stretch counts as too sparse: one read a line
        monkeypatch.setattr(predictions, "_SPAN_SLACK", 0)
        monkeypatch.setattr(predictions, "_BLOCK", 16)
    path, expected = _many_rows(tmp_path)
    model = PredictionsModel(path)
    wanted = [*expected, "nope", "s1x", "s3"]
    random.Random(4).shuffle(wanted)
    entries = model.entries(wanted)
    got = {s: (e.texts[0] if e else None) for s, e in zip(wanted, entries, strict=True)}
    assert got == {**expected, "nope": None, "s1x": None}
    assert entries[wanted.index("s0")] is not None and entries[wanted.index("s0")].line == 1
    assert model.entries([]) == []


def test_a_file_changed_after_indexing_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, [{"id": f"s{i}", "prediction": "abc"} for i in range(5)])
    model = PredictionsModel(path)
    path.write_bytes(path.read_bytes().replace(b'"s3", "prediction": "abc"}', b'"s3", "prediction": "abc" '))
    with pytest.raises(DataError, match=r"preds.jsonl:4: not valid JSON"):
        model.entries(["s1", "s3"])
    assert model.entries(["s1"])[0] is not None
