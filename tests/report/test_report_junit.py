"""JUnit XML parsed back: one testcase per sample and metric, failures with reasons, errors as <error>."""

import xml.etree.ElementTree as ET

from assay.report.junit import write_junit, xml_text
from assay.results import load_run
from tests.results import runfactory as rf
from tests.results.test_results_writer import rich_run


def _cases(root):
    return {c.get("name"): c for c in root.iter("testcase")}


def test_junit_counts_and_outcomes(tmp_path):
    run = load_run(rich_run(tmp_path / "run"))
    out = tmp_path / "junit.xml"
    counts = write_junit(run, out)
    root = ET.parse(out).getroot()
    assert root.tag == "testsuites"
    # arith 7 x 1 metric, algebra 4 x 2, judged 3 x 2; failures: arith 1, algebra 2 + 2, judged 1
    assert counts == {"tests": 21, "failures": 6, "errors": 3}
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("21", "6", "3")
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert list(suites) == ["arith", "algebra", "judged"]
    assert suites["arith"].get("tests") == "7" and suites["arith"].get("errors") == "2"
    cases = _cases(root)
    failed = cases["arith-1::exact_match"].find("failure")
    assert failed is not None and failed.get("message") == "mismatch" and failed.get("type") == "exact_match"
    assert cases["arith-1::exact_match"].find("system-out").text == "answer"
    errored = cases["arith-3::exact_match"].find("error")
    assert errored is not None and errored.get("message") == "judge reply unparseable"
    model_error = cases["arith-6::exact_match"].find("error")
    assert model_error.get("message") == "model error: HTTP 500"
    assert cases["arith-0::exact_match"].find("failure") is None and cases["arith-0::exact_match"].find("error") is None
    # with repeats, the text lists each failing repeat; an errored repeat makes the case an error
    rep = cases["algebra-0::exact_match"].find("failure")
    assert rep is not None and rep.text == "repeat 1: mismatch"
    assert cases["algebra-3::exact_match"].find("error").get("message") == "repeat 2: timeout"
    assert cases["judged-0::judge"].find("failure") is not None
    assert float(cases["arith-0::exact_match"].get("time")) > 0


def test_junit_escapes_model_output_and_names_filters(tmp_path):
    nasty = "<b>&\x1b[31mred\x00</b>"
    rec = rf.record(
        "qa",
        0,
        filters={
            "none": {"exact_match": [rf.verdict(0.0, reason="expected 'x' </failure>", feedback="say x")]},
            "strict": {"exact_match": [rf.verdict(1.0)]},
        },
        texts=[nasty],
    )
    rf.write_run(tmp_path / "run", rf.manifest([rf.task("qa", filters=("none", "strict"), n=1)]), [rec])
    out = tmp_path / "j.xml"
    write_junit(load_run(tmp_path / "run"), out)
    root = ET.parse(out).getroot()
    cases = _cases(root)
    assert set(cases) == {"qa-0::exact_match::none", "qa-0::exact_match::strict"}
    failure = cases["qa-0::exact_match::none"].find("failure")
    assert failure.get("message") == "expected 'x' </failure>"
    assert failure.text == "expected 'x' </failure>\nfeedback: say x"
    assert cases["qa-0::exact_match::none"].find("system-out").text == "<b>&\\x1b[31mred\\x00</b>"
    assert xml_text("ok\tline\n") == "ok\tline\n"


def test_junit_names_the_model_of_any_provider(tmp_path):
    """openai records ``model``, predictions neither ``name`` nor ``model``: the property is never left empty."""
    rec = rf.record("qa", 0, {"exact_match": [rf.verdict(1.0)]})
    specs = [
        ({"provider": "openai", "model": "gpt-x", "base_url": "http://127.0.0.1:9/v1"}, "gpt-x"),
        ({"provider": "predictions", "path": "preds.jsonl"}, "predictions"),
        ({"provider": "python", "target": "m:answer", "name": "answer"}, "answer"),
    ]
    for i, (model, shown) in enumerate(specs):
        man = rf.manifest([rf.task("qa", (("exact_match", True),), n=1)], model=model)
        out = tmp_path / f"junit{i}.xml"
        write_junit(load_run(rf.write_run(tmp_path / f"run{i}", man, [rec])), out)
        props = {p.get("name"): p.get("value") for p in ET.parse(out).getroot().iter("property")}
        assert props["model"] == shown


def _in_memory_bytes(run) -> str:
    """What write_junit used to write: the whole tree, indented and serialised by ElementTree."""
    from assay.report.junit import build_junit

    root = build_junit(run)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def test_streamed_junit_is_byte_equal_to_the_tree_serialised(tmp_path):
    run = load_run(rich_run(tmp_path / "run"))
    out = tmp_path / "junit.xml"
    write_junit(run, out)
    assert out.read_text(encoding="utf-8") == _in_memory_bytes(load_run(tmp_path / "run"))
    nasty = 'a"b<c>&\x1b\t\nd ✓'
    rec = rf.record(
        'q"a',
        0,
        filters={"none": {"exact_match": [rf.verdict(0.0, reason=nasty, feedback=nasty)]}, "x": {"exact_match": []}},
        texts=[nasty],
    )
    rf.write_run(tmp_path / "n", rf.manifest([rf.task('q"a', filters=("none", "x"), n=1)]), [rec])
    write_junit(load_run(tmp_path / "n"), out)
    assert out.read_text(encoding="utf-8") == _in_memory_bytes(load_run(tmp_path / "n"))
    ET.parse(out)
    # what the hand-written serialiser must get right: an empty output and detail (``<x />``), CR/LF/tab and quotes
    # in attributes, a metric and task named with markup, a model error, passes beside failures, two repeats
    odd = "m&<x>\"'\r\n\t ✓ \U0001f600"
    metric = 'em<"&>'
    recs = [
        rf.record(odd, 0, {metric: [rf.verdict(0.0, reason=odd)]}, texts=[""]),
        rf.record(odd, 1, {metric: [rf.verdict(1.0)]}, texts=[odd]),
        rf.record(odd, 2, {}, texts=[None], response_errors=["HTTP 500\r\n<boom>"]),
        rf.record(odd, 3, {metric: [rf.verdict(0.5, passed=False, reason=" "), rf.verdict(None, error="\t")]}),
    ]
    rf.write_run(tmp_path / "odd", rf.manifest([rf.task(odd, ((metric, True),), n=4)]), recs)
    write_junit(load_run(tmp_path / "odd"), out)
    assert out.read_bytes() == _in_memory_bytes(load_run(tmp_path / "odd")).encode()  # bytes: a CR stays a CR
    assert [c.get("name") for c in ET.parse(out).getroot().iter("testcase")] == [
        f"{odd}-{i}::{metric}" for i in range(4)
    ]
    rf.write_run(tmp_path / "empty", rf.manifest([]), [])
    write_junit(load_run(tmp_path / "empty"), out)
    assert out.read_text(encoding="utf-8") == _in_memory_bytes(load_run(tmp_path / "empty"))


def test_junit_written_by_two_processes_is_the_same_document(tmp_path, monkeypatch, forked_starts):
    """A large task's second half is written by a forked child: the same bytes, counts and suite time as one
    process writes; a child that fails leaves its half to this process, with the same result."""
    from assay.report import junit

    recs = [
        rf.record(
            "qa",
            i,
            {"em": [rf.verdict(float(i % 3 == 0), reason=f"wrong <{i}>\r")], "f1": [rf.verdict(0.25 * (i % 5))]},
            texts=[f"out {i} ✓"],
            latency=0.001 * i,
        )
        for i in range(41)
    ]
    rf.write_run(tmp_path / "run", rf.manifest([rf.task("qa", (("em", True), ("f1", True)), n=41)]), recs)
    expected = _in_memory_bytes(load_run(tmp_path / "run")).encode()
    monkeypatch.setattr(junit, "FORK_MIN_RECORDS", 2)
    started = forked_starts
    from assay.results.loader import Run

    read_here = []  # the records this process read (a child's reads are counted in its own copy)
    real = Run.task_record_dicts

    def counted(self, task, picks=None):
        for rec in real(self, task, picks):
            read_here.append(rec["doc_id"])
            yield rec

    monkeypatch.setattr(Run, "task_record_dicts", counted)
    out = tmp_path / "j.xml"
    counts = write_junit(load_run(tmp_path / "run"), out)
    assert started == ["_write_part"]
    assert out.read_bytes() == expected
    assert read_here == list(range(20))  # the first half: the child's half was used, not written again here
    root = ET.fromstring(expected)
    assert counts == {k: int(root.get(k)) for k in ("tests", "failures", "errors")} and counts["tests"] == 82

    def broken(*_args):
        raise RuntimeError("the child fails")

    monkeypatch.setattr(junit, "_write_part", broken)
    started.clear()
    assert write_junit(load_run(tmp_path / "run"), out) == counts
    assert started == ["broken"] and out.read_bytes() == expected
    assert read_here[20:] == list(range(41))  # the failed child's half read and written here


def test_a_pass_without_verdicts_is_read_as_a_sample_record_reads_it():
    """Records are read as JSON objects, not validated: a filter record's ``passed`` keeps pydantic's reading."""
    from assay.report.junit import _outcome

    def rec(passed):
        return {"filters": {"none": {"filtered": ["x"], "verdicts": {}, "scores": {"em": 0.0}, "passed": passed}}}

    assert _outcome(rec({"em": "false"}), "none", "em")[0] == "failure"
    assert _outcome(rec({"em": False}), "none", "em")[0] == "failure"
    assert _outcome(rec({"em": "true"}), "none", "em")[0] == "pass"
    assert _outcome(rec({"em": "maybe"}), "none", "em") == ("error", "no verdict for metric 'em'", "")
    assert _outcome(rec({}), "none", "em")[0] == "error"
