"""compare pairs samples by sample id where their input is the same, never by position, and refuses runs that
do not pair; the HTML compare view pairs the same way."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from click.testing import CliRunner

from assay.commands.report import compare_command, report_command
from assay.results import compare_runs, write_results
from assay.results.compare import UnpairedRunsError
from tests.results import runfactory as rf

# 15 rows with ids; each row's outcome is a property of the row (identical model outputs in both runs)
ROWS = [(f"row{i}", i % 3 != 0) for i in range(15)]


def _run(path, rows: Sequence[tuple[str, bool]], *, positional_ids=False, changed: Sequence[str] = ()):
    recs = []
    for pos, (rid, ok) in enumerate(rows):
        doc = {"id": rid, "question": f"вопрос {rid}" + (" (edited)" if rid in changed else "")}
        rec = rf.record("qa", pos, {"exact_match": [rf.verdict(1.0 if ok else 0.0)]}, doc=doc)
        recs.append(rec.model_copy(update={"sample_id": str(pos) if positional_ids else rid}))
    run = rf.write_run(path, rf.manifest([rf.task("qa", n=len(rows))]), recs)
    write_results(run, bootstrap_iters=100)
    return run


def test_b_lacking_one_row_changes_nothing(tmp_path):
    a = _run(tmp_path / "a", ROWS)
    b = _run(tmp_path / "b", ROWS[:4] + ROWS[5:])  # B's dataset lacks row4: every later row moves up one place
    comp = compare_runs(a, b)
    (m,) = comp.metrics
    assert m.regressed == [] and m.improved == [] and m.diff == 0.0 and not m.significant
    assert m.n_shared == 14
    p = comp.pairing["qa"]
    assert (p.paired, p.only_in_a, p.only_in_b, p.changed_input) == (14, 1, 0, 0)
    assert p.only_a_examples == ["row4"]
    assert any("1 sample(s) only in a (A) (e.g. row4)" in w for w in comp.warnings)


def test_reordered_rows_pair_by_id(tmp_path):
    a = _run(tmp_path / "a", ROWS)
    b = _run(tmp_path / "b", list(reversed(ROWS)))
    (m,) = compare_runs(a, b).metrics
    assert m.regressed == [] and m.improved == [] and m.diff == 0.0 and m.n_shared == 15


def test_a_real_regression_is_named_by_id_with_both_values(tmp_path):
    a = _run(tmp_path / "a", ROWS)
    worse = [(rid, ok and rid != "row7") for rid, ok in reversed(ROWS)]
    (m,) = compare_runs(a, _run(tmp_path / "b", worse)).metrics
    assert m.regressed_ids == ["row7"] and m.regressed == [7] and m.regressed_values == [[1.0, 0.0]]  # B's doc_id
    assert m.improved == []


def test_changed_inputs_are_not_paired_and_are_counted(tmp_path):
    a = _run(tmp_path / "a", ROWS)
    flipped = [(rid, not ok if rid in ("row1", "row2") else ok) for rid, ok in ROWS]
    b = _run(tmp_path / "b", flipped, changed=("row1", "row2"))  # the rows behind these ids were edited
    comp = compare_runs(a, b)
    (m,) = comp.metrics
    assert m.regressed == [] and m.improved == [] and m.n_shared == 13  # the edited rows are not the same test
    p = comp.pairing["qa"]
    assert (p.paired, p.changed_input, p.changed_examples) == (13, 2, ["row1", "row2"])
    assert any("2 sample(s) have a different input in b than in a" in w for w in comp.warnings)


def test_runs_that_do_not_pair_are_refused_with_exit_2(tmp_path):
    # ids are positions (no id field): dropping row4 shifts every later row under another id
    a = _run(tmp_path / "a", ROWS, positional_ids=True)
    b = _run(tmp_path / "b", ROWS[:4] + ROWS[5:], positional_ids=True)
    with pytest.raises(UnpairedRunsError, match=r"only 4 of 14 samples \(29%, below the 50% needed\)"):
        compare_runs(a, b)
    res = CliRunner().invoke(compare_command, [str(a), str(b)])
    assert res.exit_code == 2
    assert "only 4 of 14 samples" in res.output and "10 with a changed input" in res.output
    assert "fields.id" in res.output
    loose = CliRunner().invoke(compare_command, [str(a), str(b), "--min-paired", "0.2", "--format", "json"])
    assert loose.exit_code == 0, loose.output
    assert json.loads(loose.output)["pairing"]["qa"]["paired"] == 4
    html = CliRunner().invoke(report_command, [str(a), str(b), "--html", str(tmp_path / "r.html")])
    assert html.exit_code == 2 and "only 4 of 14 samples" in html.output and not (tmp_path / "r.html").exists()


def test_html_compare_view_pairs_by_id(tmp_path):
    a = _run(tmp_path / "a", ROWS)
    worse = [(rid, ok and rid != "row7") for rid, ok in ROWS[:4] + ROWS[5:]]
    b = _run(tmp_path / "b", list(reversed(worse)))
    out = tmp_path / "report.html"
    res = CliRunner().invoke(report_command, [str(a), str(b), "--html", str(out), "--format", "json"])
    assert res.exit_code == 0, res.output
    page = out.read_text(encoding="utf-8")
    compare = page[page.index('class="card compare"') :]
    assert "#sample=qa/row7&amp;run=1" in compare  # the one regressed sample, linked by its id
    assert compare.count("&amp;run=1") == 1
    assert "1 sample(s) only in a (A) (e.g. row4)" in compare
    data = json.loads(
        page[
            page.index('id="assay-data">') + len('id="assay-data">') : page.index(
                "</script>", page.index('id="assay-data"')
            )
        ]
    )
    assert len(data["samples"]) == 15 + 14


def test_ids_that_share_a_hash_still_pair_exactly(tmp_path, monkeypatch):
    from assay.results import columns

    monkeypatch.setattr(columns, "hash64", lambda text: len(text))  # every id of one length collides
    a = _run(tmp_path / "a", ROWS)
    b = _run(tmp_path / "b", list(reversed(ROWS[:4] + ROWS[5:])))
    comp = compare_runs(a, b)
    (m,) = comp.metrics
    assert m.regressed == [] and m.improved == [] and m.n_shared == 14
    assert comp.pairing["qa"].only_a_examples == ["row4"]


def test_the_second_run_is_read_by_a_forked_child_to_the_same_comparison(tmp_path, monkeypatch, forked_starts):
    """Two runs' columns are read at once (B's by a forked child): the comparison is the one reading them in turn
    gives, and a bad line in B is the error reading it alone gives, with no child left behind."""
    import multiprocessing

    import assay.forking
    from assay.errors import DataError
    from assay.results import load_run
    from assay.results.loader import read_columns

    a = _run(tmp_path / "a", ROWS)
    b = _run(tmp_path / "b", ROWS[:4] + ROWS[5:], changed=["row7"])
    started = forked_starts
    ra, rb = load_run(a), load_run(b)
    read_columns([ra, rb])
    assert started == ["_index_and_columns"]
    assert "columns" in rb.__dict__ and rb.loaded_index is not None  # sent back by the child
    at_once = compare_runs(ra, rb)
    monkeypatch.setattr(assay.forking, "may_fork", lambda: False)
    in_turn = compare_runs(load_run(a), load_run(b))
    assert started == ["_index_and_columns"]
    assert at_once == in_turn

    lines = (b / "samples.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    lines[3] = lines[3][:40] + "\n"  # cut short: not JSON
    (b / "samples.jsonl").write_text("".join(lines), encoding="utf-8")
    with pytest.raises(DataError) as alone:
        compare_runs(load_run(a), load_run(b))
    monkeypatch.undo()
    monkeypatch.setattr(assay.forking, "may_fork", lambda: True)
    with pytest.raises(DataError) as forked:
        compare_runs(load_run(a), load_run(b))
    assert str(forked.value) == str(alone.value) and "samples.jsonl:4:" in str(alone.value)
    assert not multiprocessing.active_children()
