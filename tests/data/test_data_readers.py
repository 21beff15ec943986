"""Dataset readers: JSONL, CSV/TSV, JSON, inline rows, gzip; malformed content named by file and line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from assay.data import Dataset, DatasetSpec, as_spec, read_dataset, read_rows
from assay.errors import ConfigError, DataError

ROWS = [{"q": "a", "t": "1"}, {"q": "b", "t": "2"}]


def write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


# ---- JSONL ----------------------------------------------------------------------------------------


def test_jsonl_rows_and_their_lines(tmp_path):
    path = write(tmp_path / "d.jsonl", '{"q": "a", "t": "1"}\n\n   \n{"q": "b", "t": "2"}\n')
    data = read_dataset(DatasetSpec(path=str(path)))
    assert data.rows == ROWS and data.lines == [1, 4] and len(data) == 2
    assert data.where(1).endswith("d.jsonl:4")


def test_jsonl_without_trailing_newline_with_bom_and_crlf(tmp_path):
    path = write(tmp_path / "d.jsonl", '\ufeff{"q": "a", "t": "1"}\r\n{"q": "b", "t": "2"}'.encode())
    assert read_rows(path) == ROWS


def test_jsonl_invalid_line_names_file_line_and_column(tmp_path):
    path = write(tmp_path / "data.jsonl", '{"q": "a"}\n{"q": "b"}\n\n{"q": "c",}\n')
    # worded as Python 3.13 words it on every Python (3.11 and 3.12 name the "}" in column 11: tests/test_jsonerror.py)
    said = r"data\.jsonl:4: invalid JSON: Illegal trailing comma before end of object \(column 10\)$"
    with pytest.raises(DataError, match=said):
        read_rows(path)


@pytest.mark.parametrize(
    ("line", "kind"),
    [("[1, 2]", "an array"), ('"text"', "a string"), ("3", "a number"), ("null", "null"), ("true", "a boolean")],
)
def test_jsonl_non_object_line_is_named(tmp_path, line, kind):
    path = write(tmp_path / "data.jsonl", '{"q": "a"}\n' + line + "\n")
    with pytest.raises(DataError, match=rf"data\.jsonl:2: expected a JSON object on each line, got {kind}"):
        read_rows(path)


def test_invalid_utf8_names_the_line(tmp_path):
    path = write(tmp_path / "data.jsonl", b'{"q": "a"}\n{"q": "b"}\n{"q": "\xff"}\n')
    with pytest.raises(DataError, match=r"data\.jsonl:3: not valid UTF-8"):
        read_rows(path)


def test_unicode_line_separators_inside_strings_do_not_split_rows(tmp_path):
    path = write(tmp_path / "d.jsonl", json.dumps({"q": "a\u2028b\x85c"}, ensure_ascii=False) + "\n")
    assert read_rows(path) == [{"q": "a\u2028b\x85c"}]


def test_gzipped_jsonl(tmp_path):
    path = tmp_path / "d.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"q": "a", "t": "1"}\n{"q": "b", "t": "2"}\n'))
    assert read_rows(path) == ROWS
    broken = write(tmp_path / "e.jsonl.gz", b"not gzip")
    with pytest.raises(DataError, match=r"e\.jsonl\.gz: cannot read"):
        read_rows(broken)


# ---- CSV / TSV ------------------------------------------------------------------------------------


def test_csv_rows_lines_and_quoted_multiline_fields(tmp_path):
    path = write(tmp_path / "d.csv", 'q,t\na,1\n\n"multi\nline",2\nc,3\n')
    data = read_dataset(DatasetSpec(path=str(path)))
    assert data.rows == [{"q": "a", "t": "1"}, {"q": "multi\nline", "t": "2"}, {"q": "c", "t": "3"}]
    assert data.lines == [2, 4, 6]


@pytest.mark.parametrize(("row", "got"), [("x", 1), ("x,1,extra", 3)])
def test_csv_ragged_row_names_the_line(tmp_path, row, got):
    path = write(tmp_path / "data.csv", f"q,t\na,1\n{row}\n")
    with pytest.raises(DataError, match=rf"data\.csv:3: expected 2 fields \(as in the header on line 1\), got {got}"):
        read_rows(path)


def test_csv_duplicate_header_and_empty_file(tmp_path):
    with pytest.raises(DataError, match=r"dup\.csv:1: duplicate column 'q'"):
        read_rows(write(tmp_path / "dup.csv", "q,q\n1,2\n"))
    with pytest.raises(DataError, match=r"empty\.csv: empty CSV file"):
        read_rows(write(tmp_path / "empty.csv", "\n"))


def test_csv_malformed_quoting_names_the_line(tmp_path):
    path = write(tmp_path / "bad.csv", 'q,t\na,1\n"b"x,2\n')
    with pytest.raises(DataError, match=r"bad\.csv:3: malformed CSV"):
        read_rows(path)


def test_tsv_and_custom_delimiter(tmp_path):
    assert read_rows(write(tmp_path / "d.tsv", "q\tt\na\t1\nb\t2\n")) == ROWS
    semi = write(tmp_path / "d.csv", "q;t\na;1\nb;2\n")
    assert read_rows({"path": str(semi), "delimiter": ";"}) == ROWS


# ---- JSON -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("doc", [ROWS, {"data": ROWS}, {"rows": ROWS, "meta": {"v": 1}}])
def test_json_list_or_data_or_rows(tmp_path, doc):
    assert read_rows(write(tmp_path / "d.json", json.dumps(doc, indent=2))) == ROWS


def test_json_errors(tmp_path):
    with pytest.raises(DataError, match=r"bad\.json:3: invalid JSON"):
        read_rows(write(tmp_path / "bad.json", '[\n  {"q": 1},\n  {"q": }\n]'))
    with pytest.raises(DataError, match=r"item\.json: row 2 \(item 1 of 'data'\): expected an object, got a string"):
        read_rows(write(tmp_path / "item.json", '{"data": [{"q": 1}, "x"]}'))
    with pytest.raises(DataError, match=r"obj\.json: expected a JSON array of objects, or an object with a 'data'"):
        read_rows(write(tmp_path / "obj.json", '{"items": []}'))
    with pytest.raises(DataError, match=r"num\.json: expected a JSON array of objects, got a number"):
        read_rows(write(tmp_path / "num.json", "3"))


def test_json_rows_have_no_line_so_where_names_the_row(tmp_path):
    data = read_dataset(DatasetSpec(path=str(write(tmp_path / "d.json", json.dumps(ROWS)))))
    assert data.lines is None and data.where(1).endswith("d.json: row 2")


# ---- inline rows, specs, paths --------------------------------------------------------------------


def test_inline_rows_and_the_accepted_source_forms(tmp_path):
    path = write(tmp_path / "d.jsonl", "".join(json.dumps(r) + "\n" for r in ROWS))
    assert read_rows(ROWS) == ROWS
    assert read_rows({"rows": ROWS}) == ROWS
    assert read_rows(DatasetSpec(rows=ROWS)) == ROWS
    assert read_rows(str(path)) == read_rows(path) == ROWS
    assert read_rows("d.jsonl", base_dir=tmp_path) == ROWS
    assert as_spec(ROWS).resolved_format() == "inline"
    with pytest.raises(TypeError):
        as_spec(3)  # type: ignore[arg-type]


def test_format_can_be_given_explicitly(tmp_path):
    path = write(tmp_path / "rows.txt", "".join(json.dumps(r) + "\n" for r in ROWS))
    assert read_rows({"path": str(path), "format": "jsonl"}) == ROWS


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(DataError, match=r"nope\.jsonl: dataset file not found"):
        read_rows(tmp_path / "nope.jsonl")
    (tmp_path / "dir.jsonl").mkdir()
    with pytest.raises(DataError, match=r"dir\.jsonl: not a file"):
        read_rows(tmp_path / "dir.jsonl")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({}, "give exactly one of 'path', 'rows' or 'hf' (got none of them)"),
        ({"path": "a.jsonl", "hf": "x"}, "(got path and hf)"),
        ({"rows": [], "format": "csv"}, "inline 'rows' cannot have format 'csv'"),
        ({"hf": "x", "format": "json"}, "cannot have format 'json'"),
        ({"path": "a.jsonl", "format": "inline"}, "format 'inline' needs 'rows'"),
        ({"path": "a.jsonl", "split": "test"}, "'split': only for Hugging Face datasets"),
        ({"path": "a.json", "delimiter": ";"}, "'delimiter' only applies to csv/tsv"),
        ({"path": "a.csv", "delimiter": ";;"}, "must be a single character"),
        ({"path": "a.csv", "colour": "red"}, "Extra inputs are not permitted"),
    ],
)
def test_spec_validation(spec, message):
    with pytest.raises(ValueError) as err:
        DatasetSpec(**spec)
    assert message in str(err.value)


def test_unknown_extension():
    with pytest.raises(ConfigError, match=r"cannot infer the format of 'a\.txt'.*set 'format'"):
        DatasetSpec(path="a.txt").resolved_format()
    assert DatasetSpec(path="a.ndjson").resolved_format() == "jsonl"
    assert DatasetSpec(path="A.CSV.GZ").resolved_format() == "csv"


def test_resolve_makes_paths_absolute(tmp_path):
    spec = DatasetSpec(hf="json", data_files={"train": ["a.jsonl"], "test": "b.jsonl"}).resolve(tmp_path)
    assert spec.data_files == {"train": [str(tmp_path / "a.jsonl")], "test": str(tmp_path / "b.jsonl")}
    assert DatasetSpec(path="x/d.jsonl").resolve(tmp_path).path == str(tmp_path / "x" / "d.jsonl")
    assert DatasetSpec(hf="json", data_files="https://h/x.json").resolve(tmp_path).data_files == "https://h/x.json"
    assert DatasetSpec(path="a.csv").to_config() == {"path": "a.csv"}


# ---- content hash ---------------------------------------------------------------------------------


def test_content_hash_ignores_format_and_key_order_but_not_values(tmp_path):
    jsonl = write(tmp_path / "d.jsonl", "".join(json.dumps(r) + "\n" for r in ROWS))
    csv = write(tmp_path / "d.csv", "t,q\n1,a\n2,b\n")
    hashes = {
        read_dataset(DatasetSpec(path=str(jsonl))).content_hash,
        read_dataset(DatasetSpec(path=str(csv))).content_hash,
        Dataset([{"t": "1", "q": "a"}, {"t": "2", "q": "b"}], "x").content_hash,
    }
    assert len(hashes) == 1
    assert Dataset([{"q": "a", "t": "1"}, {"q": "b", "t": "3"}], "x").content_hash not in hashes
    assert Dataset(list(reversed(ROWS)), "x").content_hash not in hashes  # order is content


def test_jsonl_is_read_as_a_stream_in_chunks_with_line_numbers(tmp_path: Path) -> None:
    from assay.data.formats import iter_jsonl

    text = "\ufeff" + "".join(f'{{"i": {i}, "title": "é{i}"}}\n' + ("\n" if i % 3 == 0 else "") for i in range(10))
    plain = tmp_path / "d.jsonl"
    plain.write_text(text, encoding="utf-8")
    packed = tmp_path / "d.jsonl.gz"
    packed.write_bytes(gzip.compress(text.encode("utf-8")))
    for path in (plain, packed):
        chunks = list(iter_jsonl(path, "d.jsonl", chunk=4))
        assert [len(rows) for rows, _ in chunks] == [4, 4, 2]
        assert [row["i"] for rows, _ in chunks for row in rows] == list(range(10))
        assert chunks[0][1] == [1, 3, 4, 5]  # blank lines skipped, numbers kept
        first, second = chunks[0][0][0], chunks[2][0][1]
        assert list(first)[1] is list(second)[1]  # field names are shared, not one copy per row
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"i": 1}\n{"i": 2}\n{"t": "\xff"}\n')
    with pytest.raises(DataError, match=r"bad\.jsonl:3: not valid UTF-8"):
        list(iter_jsonl(bad))
