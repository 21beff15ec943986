"""Filter steps and pipelines, and Task.apply_filters."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from assay.errors import ConfigError
from assay.models.base import Response, ToolCall
from assay.tasks import FilterPipeline, FilterStep, Task, build_step, register_step
from assay.tasks.filters import TextStep


def run(steps: list[dict[str, Any]], values: list[Any]) -> list[Any]:
    return FilterPipeline("p", tuple(build_step(s) for s in steps)).apply(values)


def texts(*items: str | None) -> list[Response | None]:
    return [None if t is None else Response(text=t) for t in items]


def make_task(**overrides: Any) -> Task:
    config: dict[str, Any] = {
        "name": "t",
        "dataset": [{"input": "q", "target": "a"}],
        "evaluators": ["exact_match"],
    }
    config.update(overrides)
    return Task(**config)


# ---- Task.apply_filters -------------------------------------------------------------------------


def test_no_filters_passes_the_response_objects_through():
    task = make_task()
    responses = [Response(text="a", tool_calls=[ToolCall(name="f")]), None]
    out = task.apply_filters(responses)
    assert task.filters == ["none"] and list(out) == ["none"]
    assert out["none"][0] is responses[0] and out["none"][1] is None


def test_each_pipeline_gets_its_own_values():
    task = make_task(
        filters=[
            {"name": "raw"},
            {"name": "num", "steps": [{"type": "regex", "pattern": r"\d+"}]},
            {"name": "vote", "steps": [{"type": "strip"}, {"type": "majority_vote"}]},
        ],
        repeats=3,
    )
    responses = texts(" 8 ", "x 7", "8")
    out = task.apply_filters(responses)
    assert task.filters == ["raw", "num", "vote"]
    assert out["raw"] == responses
    assert out["num"] == ["8", "7", "8"]
    assert out["vote"] == ["8"]
    assert [p.reduces for p in task.pipelines] == [False, False, True]


# ---- regex ---------------------------------------------------------------------------------------


def test_regex_default_group_is_the_first_group_or_the_whole_match():
    assert run([{"type": "regex", "pattern": r"answer: (\w+)"}], texts("the answer: Paris.")) == ["Paris"]
    assert run([{"type": "regex", "pattern": r"\d+"}], texts("it is 42 or 43")) == ["42"]


def test_regex_group_by_index_and_name():
    pattern = r"(?P<key>\w+)=(?P<val>\w+)"
    assert run([{"type": "regex", "pattern": pattern, "group": 2}], texts("a=1")) == ["1"]
    assert run([{"type": "regex", "pattern": pattern, "group": "key"}], texts("a=1")) == ["a"]
    assert run([{"type": "regex", "pattern": pattern, "group": 0}], texts("x a=1 y")) == ["a=1"]


def test_regex_select_first_or_last_match():
    values = texts("#### 3 then #### 5")
    assert run([{"type": "regex", "pattern": r"#### (\d+)"}], values) == ["3"]
    assert run([{"type": "regex", "pattern": r"#### (\d+)", "select": "last"}], values) == ["5"]


def test_regex_fallback_when_nothing_matches_or_the_group_did_not_take_part():
    assert run([{"type": "regex", "pattern": r"(\d+)"}], texts("none")) == ["[invalid]"]
    assert run([{"type": "regex", "pattern": r"(\d+)", "fallback": None}], texts("none")) == [None]
    assert run([{"type": "regex", "pattern": r"a(b)?", "fallback": "-"}], texts("a")) == ["-"]


def test_regex_ignore_case():
    assert run([{"type": "regex", "pattern": r"yes|no"}], texts("YES")) == ["[invalid]"]
    assert run([{"type": "regex", "pattern": r"yes|no", "ignore_case": True}], texts("YES")) == ["YES"]


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ({"type": "regex", "pattern": "("}, "option 'pattern': invalid regular expression"),
        ({"type": "regex", "pattern": "(a)", "group": 3}, "the pattern has 1 group(s), got 3"),
        ({"type": "regex", "pattern": "(a)", "group": "b"}, "no group named 'b'"),
        ({"type": "regex"}, "option 'pattern' is required"),
        ({"type": "regex", "pattern": "a", "select": "middle"}, "option 'select'"),
        ({"type": "regex", "pattern": "a", "patern": "b"}, "unknown option 'patern' (did you mean 'pattern'?)"),
        ({"type": "rgex"}, "unknown filter step type 'rgex' (did you mean 'regex'?)"),
        ("strip", "a filter step is a mapping"),
    ],
)
def test_step_config_errors(step, message):
    with pytest.raises(ConfigError) as err:
        build_step(step)  # type: ignore[arg-type]
    assert message in str(err.value)


# ---- text steps -----------------------------------------------------------------------------------


def test_strip_lowercase_uppercase_remove_whitespace():
    values = texts("  Hello World \n")
    assert run([{"type": "strip"}], values) == ["Hello World"]
    assert run([{"type": "lowercase"}], values) == ["  hello world \n"]
    assert run([{"type": "uppercase"}], values) == ["  HELLO WORLD \n"]
    assert run([{"type": "remove_whitespace"}], values) == ["Hello World \n"]  # leading only, as lm-eval


def test_text_steps_keep_none_and_non_text_values_and_read_empty_text_as_empty():
    values = [None, Response(text=None, tool_calls=[ToolCall(name="f")]), {"a": 1}, 3]
    assert run([{"type": "strip"}, {"type": "uppercase"}], values) == [None, "", {"a": 1}, 3]
    assert run([{"type": "regex", "pattern": "x"}], [None]) == [None]  # a failed request is not a fallback


def test_map_with_and_without_default():
    mapping = {"A": "Paris", "B": "Rome"}
    assert run([{"type": "map", "mapping": mapping}], texts("A", "C")) == ["Paris", "C"]
    assert run([{"type": "map", "mapping": mapping, "default": None}], texts("A", "C")) == ["Paris", None]
    assert run([{"type": "map", "mapping": mapping, "default": "?"}], texts("B", "C")) == ["Rome", "?"]


def test_map_to_config_keeps_whether_a_default_was_given():
    assert "default" not in build_step({"type": "map", "mapping": {"a": 1}}).to_config()
    assert build_step({"type": "map", "mapping": {"a": 1}, "default": None}).to_config()["default"] is None


# ---- extract_json ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"a": 1}', {"a": 1}),
        ("[1, 2]", [1, 2]),
        ('Here you go:\n```json\n{"a": [1, 2]}\n```\nDone.', {"a": [1, 2]}),
        ('```\n{"b": true}\n```', {"b": True}),
        ('```json\nnot json\n```\nbut later {"c": null}', {"c": None}),
        ('The result is {"x": "y"} as requested.', {"x": "y"}),
        ('noise {broken then {"ok": 1}', {"ok": 1}),
        ("42", 42),
        ("no json here", None),
        ("", None),
    ],
)
def test_extract_json(text, value):
    assert run([{"type": "extract_json"}], texts(text)) == [value]


def test_extract_json_fallback_and_then_text_steps_leave_values_alone():
    assert run([{"type": "extract_json", "fallback": {}}], texts("nothing")) == [{}]
    assert run([{"type": "extract_json"}, {"type": "lowercase"}], texts('{"A": 1}')) == [{"A": 1}]


def test_extract_json_gives_up_on_pathological_text_quickly():
    text = "{" * 100_000
    assert run([{"type": "extract_json"}], texts(text)) == [None]


# ---- reducing steps -------------------------------------------------------------------------------


def test_take_first_keeps_the_first_repeat():
    assert run([{"type": "take_first"}], texts("a", "b")) == [Response(text="a")]
    assert run([{"type": "strip"}, {"type": "take_first"}], texts(" a", "b")) == ["a"]
    assert run([{"type": "take_first"}], texts(None, "b")) == [None]
    assert run([{"type": "take_first"}], []) == [None]


def test_majority_vote_ties_go_to_the_first_seen_and_failures_do_not_vote():
    assert run([{"type": "majority_vote"}], ["b", "a", "a", "b", "c"]) == ["b"]  # 2-2 tie: b came first
    assert run([{"type": "majority_vote"}], ["c", "a", "a"]) == ["a"]
    assert run([{"type": "majority_vote"}], [None, None, "x"]) == ["x"]
    assert run([{"type": "majority_vote"}], [None, None]) == [None]
    assert run([{"type": "majority_vote"}], [{"a": 1, "b": 2}, {"b": 2, "a": 1}, {"a": 2}]) == [{"a": 1, "b": 2}]
    assert run([{"type": "majority_vote"}], ["1", 1, 1]) == [1]  # text "1" and number 1 are different answers


def test_majority_vote_over_responses_votes_by_text_and_returns_a_response():
    responses = [Response(text="x", model="m1"), Response(text="y"), Response(text="x", model="m2")]
    (winner,) = run([{"type": "majority_vote"}], responses)
    assert isinstance(winner, Response) and winner.model == "m1"


# ---- pipelines and extension ----------------------------------------------------------------------


def test_pipeline_to_config_round_trips():
    pipeline = FilterPipeline("p", (build_step({"type": "regex", "pattern": "(a)"}), build_step({"type": "strip"})))
    rebuilt = FilterPipeline("p", tuple(build_step(s) for s in pipeline.to_config()["steps"]))
    assert rebuilt.to_config() == pipeline.to_config()
    task = make_task(filters=[pipeline])
    assert task.apply_filters(texts("xa"))["p"] == ["a"]


def test_register_a_custom_step():
    @register_step("reverse_for_test")
    class Reverse(TextStep):
        def transform(self, text: str) -> Any:
            return text[::-1]

    assert run([{"type": "reverse_for_test"}], texts("abc")) == ["cba"]

    @register_step("count_for_test")
    class Count(FilterStep):
        reduces: ClassVar[bool] = True

        def apply(self, values: list[Any]) -> list[Any]:
            return [len(values)]

    assert run([{"type": "count_for_test"}], texts("a", "b")) == [2]
