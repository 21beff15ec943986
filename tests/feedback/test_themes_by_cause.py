"""Feedback themes group failures by cause (evaluator and kind of check), not by the wording of their reasons."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from assay import evaluators
from assay.feedback.themes import MAX_SAMPLE_IDS, MAX_TALLIES, ThemeGrouper, group_failures
from assay.record import FilterRecord, SampleRecord
from assay.verdict import Verdict

PLACEHOLDER = re.compile(r"<(?:n|text|id)>")


def record(sample_id: str, output: Any, target: Any = None, **metrics: Verdict) -> SampleRecord:
    verdicts = {name: [v.to_dict()] for name, v in metrics.items()}
    filters = {"none": FilterRecord(filtered=[output], verdicts=verdicts)}
    return SampleRecord(
        task="t",
        task_hash="h",
        doc_id=0,
        sample_id=sample_id,
        doc={},
        prompt="p",
        messages=[],
        target=target,
        filters=filters,
    )


def test_one_json_cause_is_one_theme_whatever_else_differs():
    jm = evaluators.get("json_match")
    expected = {"city": "Rome", "pop": 0.5}
    outputs = {
        "a": '{"city": "Rome", "pop": "0.5"}',  # 1 of 2 fields differs: $.pop …
        "b": '{"city": "Milan", "pop": "0.5"}',  # 2 of 2 fields differ: $.city …; $.pop …
        "c": '{"pop": "0.5"}',  # 2 of 2 fields differ: $.city: missing; $.pop …
    }
    records = [record(sid, out, expected, json=jm.evaluate(out, expected)) for sid, out in outputs.items()]
    themes = {t.title: t for t in group_failures(records)}
    as_string = themes["$.pop is a JSON string, not a number"]
    assert as_string.n_samples == 3 and as_string.count == 3  # before: three themes, one per wording
    assert themes["wrong value at $.city"].n_samples == 1 and themes["missing field $.city"].n_samples == 1
    assert as_string.suggestion == 'Fix the JSON: set $.pop to 0.5, a JSON number without quotes (not string "0.5").'
    assert all(not PLACEHOLDER.search(t.label) for t in themes.values())


def test_asides_and_specifics_of_a_reason_do_not_split_a_theme():
    em = evaluators.get("exact_match", ignore_case=True)
    pairs = {"a": ("lyon", "paris"), "b": ("Lyon", "Paris"), "c": ("Nice", "Paris")}  # b, c add "(after …)"
    records = [record(sid, out, exp, em=em.evaluate(out, exp)) for sid, (out, exp) in pairs.items()]
    (theme,) = group_failures(records)
    assert theme.n_samples == 3
    assert theme.label == "em fails: output [the output] does not equal expected [the expected answer]"
    assert theme.suggestion is not None and "[the expected answer]" in theme.suggestion


def test_titles_show_shared_values_and_ranges_never_placeholders():
    records = [
        record(str(i), f"out {i}", "x", m=Verdict.fail(f"similarity {i / 10:.1f} of output 'out {i}' is below 0.9"))
        for i in range(1, 4)
    ]
    (theme,) = group_failures(records)
    assert theme.title == "similarity 0.1–0.3 of output [the output] is below 0.9"
    assert theme.pattern == "similarity <n> of output <text> is below <n>"  # the key keeps the placeholders


def judged(problem: str, explanation: str, grade: str = "fail", fix: str = "") -> Verdict:
    details = {"mode": "grade", "judges": [], "grade": grade, "problem": problem, "explanation": explanation}
    return Verdict.fail(f"judge j graded {grade!r}: {explanation!r}", feedback=fix or None, details=details)


def test_judge_failures_group_by_stated_problem_and_grade():
    records = [
        record(
            "a", "Lyon", "Paris", judge=judged("Names the wrong city.", "Lyon is not the capital.", fix="Say Paris.")
        ),
        record("b", "Nice", "Paris", judge=judged("names the wrong city", "Nice is a city in the south.")),
        record("c", "Paris?", "Paris", judge=judged("hedges the answer", "It asks instead of answering.")),
        record("d", "Lyon!", "Paris", judge=judged("names the wrong city", "Wrong.", grade="partial")),
    ]
    themes = {(t.pattern, t.grade): t for t in group_failures(records)}
    assert set(themes) == {
        ("judge:names the wrong city", "fail"),
        ("judge:hedges the answer", "fail"),
        ("judge:names the wrong city", "partial"),
    }
    wrong = themes[("judge:names the wrong city", "fail")]
    assert wrong.n_samples == 2 and wrong.title == "the judge's problem: Names the wrong city."
    assert wrong.suggestion == "Say Paris."  # the judge's fix, not its explanation


def test_one_sample_failing_several_metrics_links_the_themes():
    records = [
        record(str(i), "I don't know.", "Paris", em=Verdict.fail("output differs"), f1=Verdict.fail("f1 low"))
        for i in range(3)
    ]
    records.append(record("x", "Paris!", "Paris", em=Verdict.fail("output differs")))
    themes = {t.metric: t for t in group_failures(records)}
    assert themes["f1"].also == [("em fails: output differs", 3)]
    assert themes["em"].also == [("f1 fails: f1 low", 3)]


def test_grouping_streams_an_iterable_in_bounded_state():
    n = 20_000

    def records() -> Iterator[dict[str, Any]]:  # JSON dicts, as read from samples.jsonl, produced one at a time
        for i in range(n):
            verdict = Verdict.fail(f"output '{i}' does not equal expected 'x'", feedback=f"Answer 'x', not '{i}'.")
            yield record(str(i), str(i), "x", em=verdict).model_dump(mode="json")

    grouper = ThemeGrouper(examples=3)
    for rec in records():
        grouper.add(rec)
    (theme,) = grouper.themes()
    assert (grouper.n_samples, grouper.n_failing, theme.n_samples, theme.count) == (n, n, n, n)
    assert len(theme.samples) == MAX_SAMPLE_IDS and len(theme.examples) == 3
    tally = next(iter(grouper._tallies.values()))
    assert len(tally.texts) == MAX_TALLIES and len(tally.patterns) == 1  # distinct texts are capped
    assert theme.suggestion == "Answer 'x', not [the output]."  # a value every failure shares is shown
    assert theme.title == "output [the output] does not equal expected 'x'"


def test_a_colon_or_parenthesis_inside_the_output_does_not_split_a_theme():
    """The specifics after ": " and (asides) are dropped from a reason's head, but only outside quoted values: an
    output holding '{"pop": 1}' or 'f(x)' used to be cut inside the quote, making its own theme with a broken title
    (`output '{"pop"`)."""
    em = evaluators.get("exact_match")
    pairs = {"a": ("Lyon", "Paris"), "b": ('{"pop": "0.5"}', "Rome"), "c": ("f(x) = 2", "Oslo"), "d": ("a: b", "X")}
    records = [record(sid, out, exp, em=em.evaluate(out, exp)) for sid, (out, exp) in pairs.items()]
    (theme,) = group_failures(records)
    assert theme.n_samples == 4
    assert theme.label == "em fails: output [the output] does not equal expected [the expected answer]"


def test_a_judges_problem_worded_two_ways_gets_one_title_whatever_order_the_samples_finished_in() -> None:
    """samples.jsonl is in completion order: the theme's title must not depend on it."""
    from assay.feedback.causes import SlotStats, causes_of

    def verdict(problem: str) -> dict[str, object]:
        return {"passed": False, "details": {"judges": [], "mode": "single", "problem": problem, "grade": "fail"}}

    short, full = (causes_of(verdict(p))[0] for p in ("Names a city", "Names a city."))
    assert short.key == full.key  # one theme
    titles = set()
    for first, second in ((short, full), (full, short)):
        stats = SlotStats.of(first.text)
        stats.add(first.text)
        stats.add(second.text)
        titles.add(stats.render())
    assert titles == {"the judge's problem: Names a city."}
