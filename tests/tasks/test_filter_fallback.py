"""A regex filter that finds nothing: the verdict says the extraction failed and shows the raw output."""

from __future__ import annotations

import pickle
from typing import Any

from assay.models.base import Response
from assay.runner.scoring import score_sample
from assay.tasks import load_task
from assay.tasks.filters import NoMatch, build_step, unmark


def task(steps: list[dict[str, Any]]) -> Any:
    return load_task(
        {
            "name": "t",
            "dataset": {"rows": [{"id": "a", "question": "2+2?", "answer": "4"}]},
            "fields": {"input": "question", "target": "answer"},
            "template": "{{ question }}",
            "filters": [{"name": "num", "steps": steps}],
            "evaluators": ["exact_match"],
        }
    )


async def verdict(steps: list[dict[str, Any]], output: str) -> dict[str, Any]:
    t = task(steps)
    filters, _ = await score_sample(t, t.samples()[0], [Response(text=output)], [None])
    return filters["num"].verdicts["exact_match"][0]


async def test_no_match_feedback_names_the_extraction_and_shows_the_raw_output() -> None:
    v = await verdict([{"type": "regex", "pattern": r"ANSWER: (\d+)"}], "I think it is four, really")
    assert v["passed"] is False and v["error"] is None
    assert "the output was '[invalid]'" not in v["feedback"]
    assert v["feedback"].startswith("No answer could be extracted: the pattern /ANSWER: (\\d+)/ found nothing")
    assert "'I think it is four, really'" in v["feedback"]
    assert v["reason"].startswith("no answer extracted") and "'[invalid]'" in v["reason"]
    assert v["details"]["raw_output"] == "I think it is four, really" and v["details"]["extraction"] == "no match"


async def test_later_text_steps_keep_the_mark_and_a_match_is_judged_as_before() -> None:
    steps = [{"type": "regex", "pattern": r"ANSWER: (\w+)", "fallback": "NONE"}, {"type": "lowercase"}]
    lost = await verdict(steps, "no idea")
    assert lost["reason"].startswith("no answer extracted") and "'none' was scored" in lost["reason"]
    found = await verdict([{"type": "regex", "pattern": r"ANSWER: (\d+)"}], "ANSWER: 5")
    assert found["reason"].startswith("output '5' does not equal expected '4'")
    assert "extraction" not in found["details"]


def test_unmark_gives_plain_values_and_the_marks() -> None:
    values = build_step({"type": "regex", "pattern": r"(\d+)"}).apply([Response(text="x"), "7", None])
    assert type(values[0]) is NoMatch and values[0].raw == "x"
    plain, marks = unmark(values)
    assert plain == ["[invalid]", "7", None] and type(plain[0]) is str
    assert marks[0] is values[0] and marks[1:] == [None, None]
    copy = pickle.loads(pickle.dumps(values[0]))
    assert type(copy) is NoMatch and (copy, copy.raw, copy.pattern) == ("[invalid]", "x", r"(\d+)")


async def test_a_filter_that_gives_none_is_not_blamed_on_the_model() -> None:
    t = task([{"type": "extract_json"}])
    filters, _ = await score_sample(t, t.samples()[0], [Response(text="no json here")], [None])
    error = filters["num"].verdicts["exact_match"][0]["error"]
    assert error.startswith("filter pipeline 'num' gave no value to evaluate")
    failed, _ = await score_sample(t, t.samples()[0], [None], ["HTTP 500: boom"])
    assert failed["num"].verdicts["exact_match"][0]["error"] == "no response to evaluate: HTTP 500: boom"
