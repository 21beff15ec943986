"""The offline (batch) path gives the records and results of the per-sample path, resumes, and never loses a
sample to an evaluator that raises."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.models.predictions import PredictionsModel
from assay.runner.offline import OfflineScheduler, is_offline
from assay.runner.session import RunSettings, execute
from assay.store.rundir import MANIFEST
from assay.store.sampleindex import SAMPLES
from assay.tasks import load_task
from tests.runner.offline_support import Delegate, N, task_config, write_inputs

TIMINGS = ("started_at", "model_seconds", "eval_seconds")


def records(run_dir: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for line in (run_dir / SAMPLES).read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        for key in TIMINGS:
            record.pop(key)
        assert record["sample_id"] not in out
        out[record["sample_id"]] = record
    return out


def figures(run_dir: Path) -> dict[str, Any]:
    """results.json without what depends on the clock."""
    results = json.loads((run_dir / "results.json").read_text())
    return {"results": results["results"], "tasks": results["assay"]["tasks"], "n": results.get("n-samples")}


def settings(tmp_path: Path, name: str, **extra: Any) -> RunSettings:
    # the mix fails on purpose (missing predictions, raising evaluators): no error limit
    common = {"progress": False, "cache": False, "bootstrap_iters": 200, "max_error_rate": 1.0}
    return RunSettings(output_dir=tmp_path / name, **{**common, **extra})


async def run_both(tmp_path: Path, repeats: int = 3) -> tuple[Path, Path]:
    rows, preds = write_inputs(tmp_path, vague_first=repeats == 1)
    model = PredictionsModel(preds)
    assert is_offline(model) and not is_offline(Delegate(model))
    assert not is_offline(model, feedback_model="openai:writer")  # model-written feedback needs the per-sample path
    cut = {"max_response_chars": 18}  # some answers are stored cut (and scored whole)
    batch = await execute([load_task(task_config(rows, repeats))], model, settings(tmp_path, "batch", **cut))
    per = Delegate(PredictionsModel(preds))
    single = await execute([load_task(task_config(rows, repeats))], per, settings(tmp_path, "one", **cut))
    assert batch.status == single.status == "finished"
    counts = ("written", "errors", "evaluator_errors", "requests", "truncated")  # "first" errors: finishing order
    assert [getattr(batch, c) for c in counts] == [getattr(single, c) for c in counts]
    assert batch.truncated > 0 and batch.evaluator_errors > 0
    return batch.run_dir, single.run_dir


async def test_batch_and_per_sample_paths_write_the_same_records_and_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(OfflineScheduler, "chunk_size", 7)  # several chunks, one cut mid-way
    batch, single = await run_both(tmp_path)
    ours, theirs = records(batch), records(single)
    assert len(ours) == N
    assert ours == theirs
    assert figures(batch) == figures(single)
    # the mix really covers what it claims: every kind of verdict is in these records
    first = ours["s0"]["filters"]
    assert set(first) == {"num", "vote", "none", "json"} and len(first["num"]["filtered"]) == 3
    assert len(first["vote"]["filtered"]) == 1
    verdicts = [v for r in ours.values() for f in r["filters"].values() for vs in f["verdicts"].values() for v in vs]
    errors = [v["error"] for v in verdicts if v["error"]]
    assert any("picky cannot judge 'boom'" in e for e in errors)  # raised on one sample, the others are judged
    assert any(e.startswith("no response to evaluate: no prediction for sample") for e in errors)
    assert any(e.startswith("filter pipeline 'json' gave no value to evaluate") for e in errors)
    # a row that lacks the expected field gives that metric nothing to check: not applicable (no verdicts), no error
    assert any(f["verdicts"].get("contains") == [] for r in ours.values() for f in r["filters"].values())
    assert any(v["passed"] for v in verdicts) and any(v["passed"] is False and not v["error"] for v in verdicts)
    assert any((v["details"] or {}).get("extraction") == "no match" for v in verdicts)
    assert ours["s4"]["response_errors"][0].startswith("no prediction for sample 's4'")


async def test_with_one_answer_a_sample_the_batch_path_writes_the_per_sample_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One repeat: chunks where every sample has its one answer are judged without the general bookkeeping; those
    with a missing prediction, a row lacking the expected field or an unextracted value take the general path."""
    from assay.runner import offline

    single_chunks: list[str] = []
    judge_singles = offline._judge_singles

    async def spy(metric: Any, *args: Any) -> None:
        single_chunks.append(metric.name)
        await judge_singles(metric, *args)

    monkeypatch.setattr(offline, "_judge_singles", spy)
    monkeypatch.setattr(OfflineScheduler, "chunk_size", 3)  # small chunks: some hold every kind of sample
    batch, single = await run_both(tmp_path, repeats=1)
    ours = records(batch)
    assert ours == records(single) and len(ours) == N
    assert figures(batch) == figures(single)
    assert {"exact_match", "token_f1", "contains", "picky_test", "ctx"} <= set(single_chunks)
    verdicts = [v for r in ours.values() for f in r["filters"].values() for vs in f["verdicts"].values() for v in vs]
    assert any((v["details"] or {}).get("extraction") == "no match" for v in verdicts)
    assert any("picky cannot judge 'boom'" in (v["error"] or "") for v in verdicts)


async def test_a_crashed_offline_run_resumes_to_the_same_records(tmp_path: Path) -> None:
    rows, preds = write_inputs(tmp_path)
    full = await execute([load_task(task_config(rows))], PredictionsModel(preds), settings(tmp_path, "full"))
    crashed = await execute([load_task(task_config(rows))], PredictionsModel(preds), settings(tmp_path, "crash"))
    lines = (crashed.run_dir / SAMPLES).read_bytes().split(b"\n")
    (crashed.run_dir / SAMPLES).write_bytes(b"\n".join(lines[:23]) + b"\n" + lines[23][:40])  # a torn last line
    manifest = json.loads((crashed.run_dir / MANIFEST).read_text())
    manifest["status"] = "interrupted"
    (crashed.run_dir / MANIFEST).write_text(json.dumps(manifest))
    (crashed.run_dir / "results.json").unlink()
    from assay.api import arun_outcome

    resumed = await arun_outcome(resume=crashed.run_dir, progress=False)
    assert resumed.status == "finished" and resumed.skipped == 23 and resumed.written == N - 23
    assert records(crashed.run_dir) == records(full.run_dir)
    assert figures(crashed.run_dir) == figures(full.run_dir)


def test_the_text_evaluators_are_given_texts_and_the_others_responses() -> None:
    from assay.evaluators.registry import from_config
    from assay.runner.offline import has_fast_batch, reads_text

    for name in ("exact_match", "token_f1", "fuzzy_match", "contains", "regex", "numeric"):
        options = {"pattern": "x"} if name == "regex" else {"substrings": ["x"]} if name == "contains" else {}
        evaluator = from_config({"name": name, **options})
        batched = name in ("exact_match", "token_f1", "fuzzy_match")  # the others judge pair by pair (issue 41)
        assert reads_text(evaluator) and has_fast_batch(evaluator) == batched, name
    assert not reads_text(from_config({"name": "tool_usage", "required": ["f"]}))


async def test_offline_records_are_valid_sample_records(tmp_path: Path) -> None:
    # the bulk-built verdict dicts and encoded lines must read back as SampleRecords, as the per-sample path's do
    from assay.record import SampleRecord

    batch, _ = await run_both(tmp_path)
    lines = (batch / SAMPLES).read_bytes().splitlines()
    assert len(lines) == N
    for line in lines:
        record = SampleRecord.model_validate_json(line)
        assert json.loads(record.model_dump_json()) == json.loads(line)  # nothing dropped or coerced


def test_a_response_json_form_is_its_model_dump() -> None:
    from assay.models.base import Response, ToolCall, Usage
    from assay.runner.offline import response_json

    full = Response(
        text="héllo",
        tool_calls=[ToolCall(name="f", arguments={"x": [1, 2]}, id="c1", result={"ok": True})],
        usage=Usage(input_tokens=3, output_tokens=4),
        latency_s=0.5,
        finish_reason="length",
        model="m",
        truncated_from=99,
        metadata={"source": "p.jsonl:3"},
    )
    for response in (full, Response(text=None), Response(text="x", tool_calls=[ToolCall(name="g")])):
        got = response_json(response)
        assert got == response.model_dump() and list(got) == list(response.model_dump())
        assert got is not None and got["usage"] is not response.usage.__dict__  # a copy, not the model's own
    assert response_json(None) is None


def test_full_collections_are_paused_for_a_chunk_and_restored_after_it_even_on_error() -> None:
    import gc

    from assay.runner.offline import gc_paused

    before = gc.get_threshold()
    with pytest.raises(RuntimeError), gc_paused():
        assert gc.isenabled() and gc.get_threshold()[:2] == before[:2] and gc.get_threshold()[2] > 10**9
        with gc_paused():  # nested: still paused inside, and the outer block restores
            pass
        assert gc.get_threshold()[2] > 10**9
        raise RuntimeError("chunk failed")
    assert gc.get_threshold() == before
    gc.disable()
    try:  # a caller that turned it off keeps it off
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_short_lived_cycles_are_freed_while_paused() -> None:
    """An indented json.dumps (lm-eval's doc hash) leaves reference cycles; young collections free them in the block."""
    import json
    import tracemalloc

    from assay.runner.offline import gc_paused

    doc = {"question": "q", "choices": ["a", "b", "c"], "answer": 1}
    tracemalloc.start()
    try:
        with gc_paused():
            start = tracemalloc.get_traced_memory()[0]
            for _ in range(20_000):
                json.dumps(doc, indent=2)
            grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert grown < 2_000_000, grown  # with the GC off it is ~50 MB (about 2.6 KB a call)


async def test_an_offline_run_leaves_the_gc_as_it_found_it(tmp_path: Path) -> None:
    import gc

    rows, preds = write_inputs(tmp_path, 20)
    frozen, thresholds = gc.get_freeze_count(), gc.get_threshold()
    outcome = await execute([load_task(task_config(rows))], PredictionsModel(preds), settings(tmp_path, "gc"))
    assert outcome.status == "finished" and outcome.written == 20
    assert gc.isenabled() and gc.get_freeze_count() == frozen  # frozen only while it ran
    assert gc.get_threshold() == thresholds  # full collections paused only while it ran
