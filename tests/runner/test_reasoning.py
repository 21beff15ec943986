"""A reasoning model's reasoning is taken out of its reply before filters and evaluators, on every scoring path (a
live run, a predictions file, a re-score, a judge), unless the task says ``reasoning: {strip: false}``; the record
keeps the whole reply and what was taken out; reasoning a server returns apart is kept and never scored."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import assay.api
from assay.record import SampleRecord
from assay.report.samples import MetricIndex, pack_sample
from assay.runner.rescore import rescore
from assay.store.sampleindex import SAMPLES
from assay.tasks import load_task
from assay.testing.server import OpenAITestServer
from tests.evaluators.judge.judge_support import blocks, judge_spec

# sample id -> the model's whole reply; every target is 42
REPLIES = {
    "closed": "<think>the answer is 5</think>42",
    "blank_lines": "<think>\n7 * 6 = 42, so 42\n</think>\n\n42",
    "prompt_opened": "5 or 42? 42.</think>\n42",  # DeepSeek-R1's chat template opened <think> in the prompt
    "cut_off": "<think>42 is my guess but let me check",  # ran out of max_tokens while thinking
    "two_blocks": "<thinking>maybe 5</thinking>4<reasoning>no: 42</reasoning>2",
    "mistral": "[THINK]5? no[/THINK] 42",
    "plain": "42",
    "plain_wrong": "5",
}


def _task(**extra: Any) -> dict[str, Any]:
    return {
        "name": "qa",
        "dataset": [{"id": sid, "question": sid, "answer": "42"} for sid in REPLIES],
        "fields": {"id": "id", "input": "question", "target": "answer"},
        "template": "{{ question }}",
        "filters": [
            {"name": "none", "steps": []},
            {"name": "first_number", "steps": [{"type": "regex", "pattern": r"(\d+)", "fallback": "[invalid]"}]},
        ],
        "evaluators": ["exact_match", "contains"],
        **extra,
    }


def _reply(request: dict[str, Any]) -> Any:
    return REPLIES[request["messages"][-1]["content"]]


def _run(tmp_path: Path, task: dict[str, Any], model: Any, name: str) -> Path:
    out = tmp_path / name
    assay.api.run(task, model, output_dir=out, progress=False, cache=False, max_error_rate=None)
    return next(out.iterdir())


def _live(tmp_path: Path, task: dict[str, Any], name: str, reply: Callable[[dict[str, Any]], Any] = _reply) -> Path:
    with OpenAITestServer(reply) as server:
        return _run(tmp_path, task, {"provider": "openai", "model": "m", "base_url": server.base_url}, name)


def _records(run_dir: Path) -> dict[str, SampleRecord]:
    lines = (run_dir / SAMPLES).read_text(encoding="utf-8").splitlines()
    return {r.sample_id: r for r in (SampleRecord.model_validate_json(line) for line in lines)}


def _passed(records: dict[str, SampleRecord], metric: str = "exact_match", f: str = "none") -> dict[str, bool | None]:
    return {sid: r.filters[f].passed[metric] for sid, r in records.items()}


def test_the_reasoning_is_taken_out_by_default_and_scored_with_strip_false(tmp_path: Path) -> None:
    default = _live(tmp_path, _task(), "default")
    stripped = _records(default)
    whole = _records(_live(tmp_path, _task(reasoning={"strip": False}), "kept"))
    assert _passed(stripped) == {
        "closed": True,
        "blank_lines": True,
        "prompt_opened": True,
        "cut_off": False,  # nothing was answered
        "two_blocks": True,
        "mistral": True,
        "plain": True,
        "plain_wrong": False,
    }
    assert _passed(whole) == {sid: sid == "plain" for sid in REPLIES}
    # a filter sees the answer: the first number of "<think>the answer is 5</think>42" is 42, not 5
    assert _passed(stripped, f="first_number")["closed"] is True
    assert whole["closed"].filters["first_number"].filtered == ["5"]
    # the whole reply is stored; what was taken out is recorded beside it, and the answer scored is the filtered one
    closed = stripped["closed"]
    assert closed.responses[0] is not None and closed.responses[0].text == REPLIES["closed"]
    assert closed.reasoning == ["the answer is 5"]
    assert closed.filters["none"].filtered == ["42"]
    assert stripped["two_blocks"].reasoning == ["maybe 5\n\nno: 42"]
    assert stripped["prompt_opened"].reasoning == ["5 or 42? 42."]
    assert stripped["plain"].reasoning == [] and whole["closed"].reasoning == []
    raw = [json.loads(line) for line in (default / SAMPLES).read_text(encoding="utf-8").splitlines()]
    assert {r["sample_id"]: r["responses"][0]["text"] for r in raw} == REPLIES


def test_a_reply_cut_off_while_thinking_scores_an_empty_answer(tmp_path: Path) -> None:
    """The server stops at max_tokens inside <think>: the unterminated block is reasoning, the answer is empty."""
    task = _task(generation={"max_tokens": 4}, evaluators=["contains"])
    task["dataset"] = [{"id": "cut_off", "question": "cut_off", "answer": "42"}]
    stripped = _records(_live(tmp_path, task, "default"))["cut_off"]
    assert stripped.responses[0] is not None
    assert stripped.responses[0].text == "<think>42 is my guess" and stripped.responses[0].finish_reason == "length"
    assert stripped.filters["none"].filtered == [""] and stripped.filters["none"].passed["contains"] is False
    assert stripped.reasoning == ["42 is my guess"]
    whole = _records(_live(tmp_path, {**task, "reasoning": False}, "kept"))["cut_off"]
    assert whole.filters["none"].passed["contains"] is True  # the 42 in the thinking counted


def test_reasoning_returned_apart_by_the_server_is_kept_and_never_scored(tmp_path: Path) -> None:
    def reply(request: dict[str, Any]) -> Any:
        sid = request["messages"][-1]["content"]
        if sid == "closed":  # vLLM with a reasoning parser: the thinking in reasoning_content, the answer in content
            return {"text": "5", "reasoning_content": "the answer is 42"}
        return {"text": "42", "reasoning": "<think>5</think> is wrong"}  # OpenRouter's name for it

    task = _task(evaluators=["contains"])
    task["dataset"] = task["dataset"][:2]
    records = _records(_live(tmp_path, task, "apart", reply))
    closed, other = records["closed"], records["blank_lines"]
    assert closed.responses[0] is not None and closed.responses[0].metadata["reasoning"] == "the answer is 42"
    assert closed.filters["none"].passed["contains"] is False  # "42" is only in the reasoning: not scored
    assert other.responses[0] is not None and other.responses[0].metadata["reasoning"] == "<think>5</think> is wrong"
    assert other.filters["none"].passed["contains"] is True
    assert closed.reasoning == [] and other.reasoning == []  # nothing was taken out of the texts
    packed = pack_sample(closed, 0, 0, MetricIndex())
    assert packed["o"][0]["rs"] == "the answer is 42" and "rz" not in packed["o"][0]


def test_predictions_and_a_rescore_give_the_live_verdicts(tmp_path: Path) -> None:
    live = _live(tmp_path, _task(), "live")
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"id": sid, "output": text}) + "\n" for sid, text in REPLIES.items()))
    offline = _run(tmp_path, _task(), f"predictions:{preds}", "offline")

    async def rescored(tasks: list[Any] | None, name: str) -> Path:
        return (await rescore(live, tasks, output_dir=tmp_path / name, processes=1)).run_dir

    again = asyncio.run(rescored(None, "again"))
    unstripped = asyncio.run(rescored([load_task(_task(reasoning={"strip": False}))], "unstripped"))
    ours = _records(live)
    for other in (_records(offline), _records(again)):
        assert {sid: (r.filters, r.reasoning) for sid, r in other.items()} == {
            sid: (r.filters, r.reasoning) for sid, r in ours.items()
        }
    whole = _records(_live(tmp_path, _task(reasoning={"strip": False}), "kept"))
    assert {sid: r.filters for sid, r in _records(unstripped).items()} == {sid: r.filters for sid, r in whole.items()}
    assert _passed(_records(unstripped)) != _passed(ours)


def test_a_judge_sees_the_answer_without_the_reasoning(tmp_path: Path) -> None:
    judged: list[str] = []

    def reply(request: dict[str, Any]) -> Any:
        if request["model"] == "student":
            return REPLIES["closed"]
        judged.append(blocks(request)["response"])
        return json.dumps({"explanation": "scripted", "score": 1})

    with OpenAITestServer(reply) as server:
        judge = {"name": "llm_judge", "expected": "none", "model": judge_spec(server), "criteria": "is it 42?"}
        task = _task(evaluators=[judge | {"scale": "binary", "initial_backoff_s": 0}])
        task["dataset"] = task["dataset"][:1]
        del task["filters"]
        student = {"provider": "openai", "model": "student", "base_url": server.base_url}
        _run(tmp_path, task, student, "judged")
    assert judged == ["42"]
