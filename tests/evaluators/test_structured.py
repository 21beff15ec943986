"""json_match and schema: JSON extraction, field comparison, masks, list order, F1, schema violations, configs."""

import json
import math
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from assay import evaluators
from assay.errors import ConfigError
from assay.evaluators.jsoncompare import KeyMatcher, apply_masks, field_stems
from assay.evaluators.jsonparse import JSONExtractError, extract_json, json_path
from assay.evaluators.registry import from_config
from assay.models.base import Response


def jm(**options):
    return evaluators.get("json_match", **options)


PERSON = {"name": "Ann", "address": {"city": "Paris", "zip": "75001"}, "items": [1, 2, 3]}


# ------------------------------------------------------------------------------------------- extraction


@pytest.mark.parametrize(
    ("text", "value", "source"),
    [
        ('{"a": 1}', {"a": 1}, "whole"),
        ("  \ufeff[1, 2]\n", [1, 2], "whole"),
        ('Here:\n```json\n{"a": 1}\n```\nDone.', {"a": 1}, "fence"),
        ('```\n{"a": 1}\n```', {"a": 1}, "fence"),
        ('```JSON\n{"a": 1}', {"a": 1}, "fence"),  # unterminated fence (truncated output)
        ('The answer is {"a": {"b": [1, "}"]}} as requested.', {"a": {"b": [1, "}"]}}, "embedded"),
        ("text {not json} then [1, 2] end", [1, 2], "embedded"),
    ],
)
def test_extract_json_sources(text, value, source):
    found = extract_json(text)
    assert found.value == value and found.source == source


def test_extract_prefers_the_expected_type_but_not_inside_a_value():
    assert extract_json('see [1]: {"a": 1}', prefer=dict).value == {"a": 1}
    assert extract_json('see [1]: {"a": 1}', prefer=list).value == [1]
    assert extract_json('see [1]: {"a": 1}').value == [1]
    # the object inside the array belongs to the array, it is not a separate candidate
    assert extract_json('result: [{"a": 1}]', prefer=dict).value == [{"a": 1}]


def test_extract_modes():
    fenced = '```json\n{"a": 1}\n```'
    with pytest.raises(JSONExtractError, match="not valid JSON"):
        extract_json(fenced, extract="strict")
    assert extract_json(fenced, extract="fenced").value == {"a": 1}
    with pytest.raises(JSONExtractError, match="no fenced JSON"):
        extract_json('answer: {"a": 1}', extract="fenced")
    # a fence tagged with another language is not taken as JSON, but "anywhere" still finds the object
    assert extract_json('```python\nx = {"a": 1}\n```').source == "embedded"


@pytest.mark.parametrize("text", ["", "   ", "Paris", "{unclosed", "[" * 100_000, "{" * 5000 + "x"])
def test_extract_failures_raise_cleanly(text):
    with pytest.raises(JSONExtractError):
        extract_json(text)


@pytest.mark.parametrize("text", ["[1, x " * 150_000, '{"a x ' * 150_000, '["' + "a" * 1_000_000])
def test_extract_gives_up_on_megabytes_of_almost_json(text):
    # every bracket starts a plausible value that fails late; the search spends a bounded budget, then stops
    with pytest.raises(JSONExtractError, match="no complete JSON"):
        extract_json(text)


def test_extract_finds_json_after_megabytes_of_bracketed_prose():
    text = "lorem [ipsum] dolor {sit} amet, see [1] and [2]. " * 20_000 + '{"a": 1}'
    assert extract_json(text, prefer=dict).value == {"a": 1}


def test_json_path_formatting():
    assert json_path(()) == "$"
    assert json_path(("address", "city")) == "$.address.city"
    assert json_path(("items", 2, "sku")) == "$.items[2].sku"
    assert json_path(("first name", "o'k")) == "$['first name']['o\\'k']"


# ------------------------------------------------------------------------------------------- json_match basics


def test_equal_structure_passes_without_reason():
    v = jm().evaluate(json.dumps(PERSON), PERSON)
    assert v.passed and v.score == 1.0 and v.reason is None and v.feedback is None
    assert v.details["n_fields"] == 6 and v.details["n_equal"] == 6
    assert v.details["json_source"] == "whole"


def test_score_is_share_of_expected_leaves_and_reason_names_every_path():
    out = {"name": "Ann", "address": {"city": "Lyon"}, "items": [1, 2]}
    v = jm().evaluate(out, PERSON)
    assert not v.passed and v.score == pytest.approx(3 / 6)  # name and items[0..1] equal, city/zip/items[2] not
    assert "$.address.city: expected 'Paris', got 'Lyon'" in v.reason
    assert "$.address.zip: missing" in v.reason
    assert "$.items[2]: missing" in v.reason
    assert v.reason.startswith("3 of 6 fields differ")
    assert "set $.address.city to 'Paris' (not 'Lyon')" in v.feedback
    assert "add $.items[2] = 3" in v.feedback


def test_per_field_details():
    v = jm().evaluate({"name": "Bob", "address": {"city": "Paris"}, "items": [1, 2, 3]}, PERSON)
    fields = v.details["fields"]
    assert fields["$.name"] == {"equal": False, "expected": "Ann", "actual": "Bob", "f1": 0.0}
    assert fields["$.address.city"]["equal"] is True and fields["$.address.city"]["actual"] == "Paris"
    assert fields["$.address.zip"]["missing"] is True and "actual" not in fields["$.address.zip"]


def test_wrong_typed_node_is_explained():
    v = jm().evaluate({"name": "Ann", "address": "Paris", "items": [1, 2, 3]}, PERSON)
    assert "$.address.city: missing ($.address is a string)" in v.reason
    assert v.details["fields"]["$.address.zip"]["blocked"] == "$.address is a string"


def test_special_keys_in_paths():
    v = jm().evaluate({"first name": "A"}, {"first name": "B"})
    assert "$['first name']: expected 'B', got 'A'" in v.reason


@pytest.mark.parametrize(
    "actual",
    [
        '{"a": [1, {"b": null}]}',
        '```json\n{"a": [1, {"b": null}]}\n```',
        'Sure, here it is: {"a": [1, {"b": null}]} hope it helps',
        b'{"a": [1, {"b": null}]}',
        {"a": [1, {"b": None}]},
        {"a": (1, {"b": None})},
        Response(text='{"a": [1, {"b": null}]}'),
        SimpleNamespace(text='{"a": [1, {"b": null}]}'),
    ],
)
def test_output_forms(actual):
    assert jm().evaluate(actual, {"a": [1, {"b": None}]}).passed


def test_pydantic_instances_on_both_sides():
    class Point(BaseModel):
        x: int
        y: int

    assert jm().evaluate(Point(x=1, y=2), {"x": 1, "y": 2}).passed
    assert jm().evaluate('{"x": 1, "y": 2}', Point(x=1, y=2)).passed


def test_expected_as_json_text_and_scalars():
    assert jm().evaluate({"a": 1}, '{"a": 1}').passed
    assert jm().evaluate("42", 42).passed
    assert not jm().evaluate("43", 42).passed


@pytest.mark.parametrize("actual", ["Paris is the capital.", "", "   ", None, Response(text=None), '{"a": 1'])
def test_unparseable_output_is_a_failure_with_feedback(actual):
    v = jm().evaluate(actual, {"city": "Paris", "n": 3})
    assert not v.is_error and not v.passed and v.score == 0.0
    assert v.reason.startswith("output is not valid JSON")
    assert v.feedback.startswith("Return valid JSON only")
    # the feedback shows the shape, never the expected values
    assert '"city": <string>' in v.feedback and '"n": <number>' in v.feedback and "Paris" not in v.feedback


def test_the_shape_hint_shows_json_types_unquoted():
    # a quoted "<number>" placeholder invited the string "0.5"; the hint names the JSON type it must be
    expected = {"city": "Rome", "pop": 0.5, "capital": True, "tags": ["x"], "mayor": None}
    hint = jm().evaluate("Rome has half a million people.", expected).feedback
    assert '{"city": <string>, "pop": <number>, "capital": <boolean>, "tags": [<string>], "mayor": null}' in hint
    assert '"<number>"' not in hint and '"<boolean>"' not in hint
    assert '<number> is a JSON number without quotes (0.5, not "0.5")' in hint
    assert "<boolean> is true or false without quotes" in hint


def test_a_number_given_as_a_string_is_told_to_drop_the_quotes():
    v = jm().evaluate('{"city": "Rome", "pop": "0.5"}', {"city": "Rome", "pop": 0.5})
    assert not v.passed
    assert "$.pop: expected number 0.5, got string '0.5'" in v.reason
    assert v.feedback == 'Fix the JSON: set $.pop to 0.5, a JSON number without quotes (not string "0.5").'
    flag = jm().evaluate('{"ok": "true"}', {"ok": True}).feedback
    assert "set $.ok to true, a JSON boolean (true/false) without quotes" in flag


@pytest.mark.parametrize(
    ("actual", "expected"), [({1, 2}, {"a": 1}), (object(), {"a": 1}), ({"a": 1}, None), ({}, "{bad")]
)
def test_inputs_that_cannot_be_judged_are_errors(actual, expected):
    v = jm().evaluate(actual, expected)
    assert v.is_error and math.isnan(v.score)


def test_strict_extract_fails_fenced_output():
    fenced = '```json\n{"a": 1}\n```'
    assert jm().evaluate(fenced, {"a": 1}).passed
    v = jm(extract="strict").evaluate(fenced, {"a": 1})
    assert not v.passed and "not valid JSON" in v.reason
    assert jm(extract="fenced").evaluate(fenced, {"a": 1}).passed
    assert not jm(extract="fenced").evaluate('so: {"a": 1}', {"a": 1}).passed


# ------------------------------------------------------------------------------------------- leaf equality


def test_json_types_are_respected():
    assert jm().evaluate({"n": 1.0}, {"n": 1}).passed
    assert not jm().evaluate({"n": True}, {"n": 1}).passed
    assert not jm().evaluate({"n": 1}, {"n": True}).passed
    assert not jm().evaluate({"n": "1"}, {"n": 1}).passed
    assert not jm().evaluate({"n": None}, {"n": 0}).passed
    assert jm().evaluate({"n": None}, {"n": None}).passed
    assert jm().evaluate({"n": float("nan")}, {"n": float("nan")}).passed


def test_numeric_tolerance():
    assert not jm().evaluate({"p": 3.1416}, {"p": 3.14159}).passed
    assert jm(abs_tol=1e-3).evaluate({"p": 3.1416}, {"p": 3.14159}).passed
    assert not jm(abs_tol=1e-6).evaluate({"p": 3.1416}, {"p": 3.14159}).passed
    assert jm(rel_tol=0.01).evaluate({"p": 101}, {"p": 100}).passed
    assert not jm(rel_tol=0.001).evaluate({"p": 101}, {"p": 100}).passed


@pytest.mark.parametrize(
    ("options", "actual", "expected"),
    [
        ({"ignore_case": True}, "PARIS", "paris"),
        ({"strip": True}, "  Paris\n", "Paris"),
        ({"ignore_punctuation": True}, "Paris!", "Paris"),
        ({"ignore_whitespace": True}, "New   York", "New York"),
        ({"ignore_articles": True, "ignore_whitespace": True}, "the Louvre", "Louvre"),
        ({"ignore_numbers": True}, "Paris 2024", "Paris "),
        ({"regexes_to_ignore": ["^city: "]}, "city: Paris", "Paris"),
    ],
)
def test_string_leaf_normalisation(options, actual, expected):
    assert not jm().evaluate({"c": actual}, {"c": expected}).passed
    assert jm(**options).evaluate({"c": actual}, {"c": expected}).passed


def test_empty_containers_match_containers_and_extras_are_reported():
    v = jm().evaluate({"tags": ["x"], "meta": {"k": 1}}, {"tags": [], "meta": {}})
    assert v.passed and v.details["extra"] == {"$.tags[0]": "x", "$.meta.k": 1}
    assert not jm().evaluate({"tags": {}}, {"tags": []}).passed


def test_extras_not_penalised_by_default_but_penalised_on_request():
    out = {"a": 1, "b": 2, "debug": {"x": 1, "y": 2}}
    v = jm().evaluate(out, {"a": 1, "b": 2})
    assert v.passed and v.score == 1.0 and v.details["extra"] == {"$.debug": {"x": 1, "y": 2}}
    assert v.details["n_extra"] == 2
    v = jm(penalize_extra=True).evaluate(out, {"a": 1, "b": 2})
    assert not v.passed and v.score == pytest.approx(2 / 4)
    assert "$.debug: unexpected field" in v.reason and "remove $.debug" in v.feedback


def test_extra_list_elements():
    v = jm(penalize_extra=True).evaluate([1, 2, 3], [1, 2])
    assert v.score == pytest.approx(2 / 3) and "$[2]: unexpected element 3" in v.reason
    assert jm().evaluate([1, 2, 3], [1, 2]).passed


def test_threshold():
    out = {"a": 1, "b": 2, "c": 3, "d": 0}
    expected = {"a": 1, "b": 2, "c": 3, "d": 4}
    assert not jm().evaluate(out, expected).passed
    v = jm(threshold=0.75).evaluate(out, expected)
    assert v.passed and v.score == 0.75 and v.reason is None and v.feedback is None
    assert not jm(threshold=0.8).evaluate(out, expected).passed


def test_token_f1_micro_and_macro():
    v = jm().evaluate({"a": "quick brown fox", "b": "y"}, {"a": "the quick fox", "b": "x"})
    fields = v.details["fields"]
    assert fields["$.a"]["f1"] == pytest.approx(0.8)  # P 2/3, R 1
    assert fields["$.b"]["f1"] == 0.0
    assert v.details["f1_macro"] == pytest.approx(0.4)
    assert v.details["f1_micro"] == pytest.approx(
        2 * 0.5 * (2 / 3) / (0.5 + 2 / 3), abs=1e-6
    )  # 2 common, 4 pred, 3 gold


def test_missing_field_has_zero_f1():
    v = jm().evaluate({}, {"a": ""})
    assert v.details["fields"]["$.a"]["f1"] == 0.0 and v.details["f1_macro"] == 0.0


# ------------------------------------------------------------------------------------------- masks


@pytest.mark.parametrize(
    ("mask", "field", "matches"),
    [
        ("answer", "answer", True),
        ("answer", "answers", True),
        ("answer", "answer_2", True),
        ("answer", "answers_10", True),
        ("answer", "answer-3", True),
        ("answer", "answer3", True),
        ("answers", "answer", True),
        ("box", "boxes", True),
        ("category", "categories", True),
        ("answer", "answered", False),
        ("answer", "my_answer", False),
        ("answer_2", "answer_2", True),
        ("answer_2", "answer_3", False),
        ("answer_2", "answer", False),
    ],
)
def test_mask_key_matching(mask, field, matches):
    assert KeyMatcher.build([mask], None)(field) is matches


def test_field_stems():
    assert field_stems("answers_10") == {"answers", "answer"}
    assert "2024" in field_stems("2024")  # an all-digit name is kept as is


def test_mask_patterns_fullmatch():
    matcher = KeyMatcher.build(None, [r".*_id"])
    assert matcher("user_id") and not matcher("user_identity") and not matcher("valid")


def test_in_mask_keeps_matching_fields_at_every_depth_and_the_path_to_them():
    data = {"answer": 1, "other": 2, "nested": {"answers_2": 3, "junk": 4}, "rows": [{"answer": 5, "x": 6}, {"x": 7}]}
    masked = apply_masks(data, KeyMatcher.build(["answer"], None), None)
    assert masked == {"answer": 1, "nested": {"answers_2": 3}, "rows": [{"answer": 5}, {}]}


def test_in_mask_keeps_whole_subtree_of_a_matching_key():
    data = {"address": {"city": "P", "zip": "1"}, "name": "A"}
    assert apply_masks(data, KeyMatcher.build(["address"], None), None) == {"address": {"city": "P", "zip": "1"}}


def test_out_mask_drops_at_every_depth_including_lists():
    data = {"id": 1, "a": {"ids": [1], "b": 2}, "rows": [{"id_2": 3, "c": 4}]}
    masked = apply_masks(data, None, KeyMatcher.build(["id"], None))
    assert masked == {"a": {"b": 2}, "rows": [{"c": 4}]}


def test_masks_apply_to_both_sides_in_json_match():
    expected = {"answer": "Paris", "reasoning": "because", "meta": {"answer_2": "x", "trace_id": "e1"}}
    actual = {"answer": "Paris", "reasoning": "since", "meta": {"answer_2": "x", "trace_id": "a9"}, "notes": "hi"}
    assert not jm().evaluate(actual, expected).passed
    v = jm(in_mask=["answer"]).evaluate(actual, expected)
    assert v.passed and set(v.details["fields"]) == {"$.answer", "$.meta.answer_2"}
    assert v.details["extra"] == {}  # masked-out fields of the output are not extras
    v = jm(out_mask=["reasoning"], out_mask_pattern=[r"trace_.*"]).evaluate(actual, expected)
    assert v.passed and "$.meta.trace_id" not in v.details["fields"]
    assert jm(out_mask_pattern=r"reason.*|trace_id").evaluate(actual, expected).passed  # a single pattern string
    v = jm(in_mask_pattern=[r"answer(_\d+)?"]).evaluate(actual, expected)
    assert v.passed and set(v.details["fields"]) == {"$.answer", "$.meta.answer_2"}


def test_in_and_out_mask_together():
    expected = {"answers": [{"text": "a", "score": 1}], "other": 1}
    actual = {"answers": [{"text": "a", "score": 9}], "other": 2}
    assert jm(in_mask=["answer"], out_mask=["score"]).evaluate(actual, expected).passed
    assert not jm(in_mask=["answer"]).evaluate(actual, expected).passed


def test_plural_and_suffix_masks_in_lists_of_numbered_fields():
    expected = {"answer_1": "a", "answer_2": "b", "answers_10": ["c"], "question": "q"}
    actual = {"answer_1": "a", "answer_2": "b", "answers_10": ["c"], "question": "other"}
    assert jm(in_mask=["answer"]).evaluate(actual, expected).passed
    assert jm(out_mask=["question"]).evaluate(actual, expected).passed


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"in_mask_pattern": ["("]}, "in_mask_pattern"),
        ({"out_mask_pattern": "[a-"}, "out_mask_pattern"),
        ({"in_mask": []}, "in_mask"),
        ({"in_mask": "answer"}, "in_mask"),
        ({"threshold": 1.5}, "threshold"),
        ({"threshold": "high"}, "threshold"),
        ({"abs_tol": -1}, "abs_tol"),
        ({"rel_tol": "x"}, "rel_tol"),
        ({"ignore_list_order": "sometimes"}, "ignore_list_order"),
        ({"extract": "everywhere"}, "extract"),
        ({"penalise_extra": True}, "penalise_extra"),
    ],
)
def test_invalid_options_raise_config_error_naming_the_option(options, named):
    with pytest.raises(ConfigError, match=named):
        jm(**options)


# ------------------------------------------------------------------------------------------- list order


def test_list_order_matters_by_default_and_can_be_ignored():
    expected = {"tags": ["a", "b", "c"]}
    actual = {"tags": ["c", "a", "b"]}
    v = jm().evaluate(actual, expected)
    assert not v.passed and "$.tags[0]: expected 'a', got 'c'" in v.reason
    assert jm(ignore_list_order=True).evaluate(actual, expected).passed


def test_unordered_lists_are_multisets():
    assert not jm(ignore_list_order=True).evaluate([1, 1, 2], [1, 2, 2]).passed
    assert jm(ignore_list_order=True).evaluate([2, 1, 1], [1, 1, 2]).passed
    assert jm(ignore_list_order=True, ignore_case=True).evaluate(["B", "a"], ["A", "b"]).passed


def test_unordered_lists_of_objects_and_nested_lists():
    expected = [{"id": 1, "tags": ["x", "y"]}, {"id": 2, "tags": ["z"]}]
    actual = [{"id": 2, "tags": ["z"]}, {"id": 1, "tags": ["y", "x"]}]
    assert not jm().evaluate(actual, expected).passed
    assert jm(ignore_list_order=True).evaluate(actual, expected).passed


def test_unordered_partial_match_pairs_the_closest_elements():
    expected = [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    actual = [{"id": 2, "name": "B"}, {"id": 1, "name": "a"}]
    v = jm(ignore_list_order=True).evaluate(actual, expected)
    assert v.score == pytest.approx(3 / 4)
    assert "$[1].name: expected 'b', got 'B'" in v.reason


def test_unordered_missing_and_extra_elements():
    v = jm(ignore_list_order=True).evaluate(["c", "a"], ["a", "b", "c"])
    assert v.score == pytest.approx(2 / 3) and "$[1]: missing" in v.reason
    v = jm(ignore_list_order=True, penalize_extra=True).evaluate(["z", "c", "b", "a"], ["a", "b", "c"])
    assert v.score == pytest.approx(3 / 4) and "$[3]: unexpected element 'z'" in v.reason


def test_unordered_with_numeric_tolerance():
    assert jm(ignore_list_order=True, abs_tol=0.01).evaluate([2.001, 0.999], [1, 2]).passed


def test_large_unordered_lists_beyond_the_pairwise_limit_pair_the_rest_in_order():
    expected = [{"id": i, "v": "x"} for i in range(150)]
    actual = [{"id": i, "v": "y"} for i in range(150)]  # nothing identical; 150 × 150 pairs exceed the limit
    v = jm(ignore_list_order=True).evaluate(actual, expected)
    assert v.score == pytest.approx(0.5) and "$[0].v: expected 'x', got 'y'" in v.reason
    assert v.reason.endswith("$[148].v, $[149].v")


def test_large_unordered_lists_use_identity_matching():
    expected = [{"id": i, "v": str(i)} for i in range(200)]
    actual = list(reversed(expected))
    assert jm(ignore_list_order=True).evaluate(actual, expected).passed
    actual[0] = {"id": 199, "v": "changed"}
    v = jm(ignore_list_order=True).evaluate(actual, expected)
    assert v.score == pytest.approx(399 / 400)


# ------------------------------------------------------------------------------------------- bad input


def test_unicode_and_long_values():
    expected = {"ville": "Zürich", "emoji": "🚀", "長い": "x" * 10_000}
    assert jm().evaluate(json.dumps(expected, ensure_ascii=False), expected).passed
    v = jm().evaluate({**expected, "ville": "Zurich"}, expected)
    assert "$.ville: expected 'Zürich', got 'Zurich'" in v.reason
    assert len(v.reason) < 400  # long values are clipped in reasons


def test_json_at_end_of_a_very_long_output():
    text = "lorem ipsum " * 50_000 + '\n{"a": 1}'
    assert jm().evaluate(text, {"a": 1}).passed


def test_reason_names_every_differing_path_even_when_many():
    expected = {f"k{i}": i for i in range(120)}
    v = jm().evaluate({}, expected)
    assert all(f"$.k{i}" in v.reason for i in range(120))
    assert "and 110 more" in v.feedback


def test_batch_equals_loop():
    ev = jm(ignore_list_order=True)
    actuals = ['{"a": [2, 1]}', "nope", {"a": [1]}, None]
    expecteds = [{"a": [1, 2]}, {"a": [1]}, {"a": [1, 2]}, {"a": 1}]
    batch = ev.evaluate_batch(actuals, expecteds)
    assert list(batch.passed) == [ev.evaluate(a, e).passed for a, e in zip(actuals, expecteds, strict=True)]


# ------------------------------------------------------------------------------------------- properties

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=20,
)


# An expected string is JSON text, so generated values are given as text on the expected side.


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_a_structure_matches_itself(value):
    text = json.dumps(value)
    for ev in (jm(), jm(ignore_list_order=True), jm(penalize_extra=True)):
        # a parsed value works too, except str (that is text) and None (that is "no output")
        for actual in (text, value if value is not None and not isinstance(value, str) else text):
            v = ev.evaluate(actual, text)
            assert v.score == 1.0 and v.passed, v.reason


@settings(max_examples=100, deadline=None)
@given(json_values, json_values)
def test_score_in_unit_interval(a, b):
    for ev in (jm(), jm(ignore_list_order=True, penalize_extra=True)):
        v = ev.evaluate(a, json.dumps(b))
        assert 0.0 <= v.score <= 1.0
        assert v.passed == (v.score >= 1.0)
        assert (v.reason is None) == v.passed


# ------------------------------------------------------------------------------------------- config


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"in_mask": ["answer"], "out_mask_pattern": [r"trace_.*"], "ignore_list_order": True},
        {"out_mask": ["id"], "in_mask_pattern": ["a.*"], "threshold": 0.5, "abs_tol": 0.1, "rel_tol": 0.01},
        {"penalize_extra": True, "extract": "strict", "ignore_case": True, "strip": True},
    ],
)
def test_json_match_config_round_trip(options):
    ev = jm(**options)
    config = json.loads(json.dumps(ev.to_config()))
    assert config["name"] == "json_match"
    rebuilt = from_config(config)
    assert rebuilt == ev
    sample = ('{"answer": "x", "trace_id": 1, "b": [2, 1]}', {"answer": "x", "trace_id": 2, "b": [1, 2]})
    assert rebuilt.evaluate(*sample) == ev.evaluate(*sample)


# ------------------------------------------------------------------------------------------- schema

PERSON_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "age": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
        "role": {"enum": ["admin", "user"]},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}


class Person(BaseModel):
    """A model importable as tests.evaluators.test_structured:Person (for dotted-path round trips)."""

    name: str
    age: int = Field(ge=0)
    tags: list[str] = []


def test_schema_passes_valid_json():
    ev = evaluators.get("schema", json_schema=PERSON_SCHEMA)
    v = ev.evaluate('{"name": "Ann", "age": 3, "tags": ["a"]}')
    assert v.passed and v.score == 1.0 and v.reason is None


def test_schema_reason_lists_every_violation_with_its_path():
    ev = evaluators.get("schema", json_schema=PERSON_SCHEMA)
    v = ev.evaluate({"age": -3, "tags": ["a", 5], "role": "boss", "extra": 1})
    assert not v.passed and v.score == 0.0
    assert v.reason.startswith("5 schema violations: ")
    for part in (
        "$: 'name' is a required property",
        "$.age: -3 is less than the minimum of 0",
        "$.tags[1]: 5 is not of type 'string'",
        "$.role: 'boss' is not one of ['admin', 'user']",
        "$: Additional properties are not allowed ('extra' was unexpected)",
    ):
        assert part in v.reason
    assert "add the required property 'name' at $" in v.feedback
    assert "make $.age at least 0" in v.feedback
    assert "make $.tags[1] of type string" in v.feedback
    assert "set $.role to one of" in v.feedback
    assert [x["path"] for x in v.details["violations"]] == sorted(x["path"] for x in v.details["violations"])


def test_schema_invalid_schema_is_config_error_naming_option():
    with pytest.raises(ConfigError, match=r"json_schema.*invalid JSON Schema"):
        evaluators.get("schema", json_schema={"type": "strin"})
    with pytest.raises(ConfigError, match="json_schema"):
        evaluators.get("schema", json_schema={"properties": {"a": {"minimum": "zero"}}})


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({}, "exactly one"),
        ({"json_schema": {"type": "object"}, "model": Person}, "exactly one"),
        ({"model": "tests.evaluators.nowhere:Person"}, "model"),
        ({"model": "json:dumps"}, "not a Pydantic model"),
        ({"model": int}, "option 'model': must be a Pydantic model class"),
        ({"model": ""}, "option 'model': must be a Pydantic model class"),
        ({"model": Person, "check_formats": True}, "check_formats"),
        ({"json_schema": "not a schema"}, "option 'json_schema': must be a JSON Schema"),
        ({"schema": {"type": "object"}}, "unknown option 'schema'"),
    ],
)
def test_schema_config_errors(options, named):
    with pytest.raises(ConfigError, match=named):
        evaluators.get("schema", **options)


def test_schema_with_pydantic_model():
    ev = evaluators.get("schema", model=Person)
    assert ev.evaluate('{"name": "Ann", "age": 3}').passed
    v = ev.evaluate('{"age": -1, "tags": ["x", 7]}')
    assert not v.passed
    assert "$.name: Field required" in v.reason
    assert "$.age: Input should be greater than or equal to 0" in v.reason
    assert "$.tags[1]: Input should be a valid string" in v.reason
    assert "add the required field $.name" in v.feedback


def test_schema_model_by_dotted_path_and_round_trip():
    ev = evaluators.get("schema", model=Person)
    config = json.loads(json.dumps(ev.to_config()))
    assert config == {"name": "schema", "model": f"{Person.__module__}:Person"}
    rebuilt = from_config(config)
    assert rebuilt == ev and rebuilt.model_class is Person
    assert not rebuilt.evaluate({"name": "A", "age": -1}).passed


def test_schema_local_model_cannot_be_saved():
    class Local(BaseModel):
        a: int

    ev = evaluators.get("schema", model=Local)
    assert ev.evaluate({"a": 1}).passed
    with pytest.raises(ConfigError, match=r"model.*cannot be saved"):
        ev.to_config()
    assert "Local" in repr(ev)


def test_schema_json_schema_round_trip():
    ev = evaluators.get("schema", json_schema=PERSON_SCHEMA, check_formats=True, extract="fenced")
    config = json.loads(json.dumps(ev.to_config()))
    rebuilt = from_config(config)
    assert rebuilt == ev and rebuilt != evaluators.get("schema", json_schema=PERSON_SCHEMA)


def test_schema_formats_checked_only_on_request():
    schema = {"type": "object", "properties": {"when": {"type": "string", "format": "date"}}}
    assert evaluators.get("schema", json_schema=schema).evaluate({"when": "someday"}).passed
    v = evaluators.get("schema", json_schema=schema, check_formats=True).evaluate({"when": "someday"})
    assert not v.passed and "$.when" in v.reason and "make $.when a valid date" in v.feedback


def test_schema_reads_outputs_like_json_match():
    ev = evaluators.get("schema", json_schema=PERSON_SCHEMA)
    assert ev.evaluate(Response(text='Here: ```json\n{"name": "A", "age": 1}\n```')).passed
    assert (
        not evaluators.get("schema", json_schema=PERSON_SCHEMA, extract="strict")
        .evaluate('x {"name": "A", "age": 1}')
        .passed
    )
    v = ev.evaluate("I cannot do that.")
    assert not v.is_error and not v.passed and v.feedback.startswith("Return valid JSON only")
    assert ev.evaluate(object()).is_error


def test_schema_boolean_and_array_schemas():
    assert not evaluators.get("schema", json_schema=False).evaluate({"a": 1}).passed
    ev = evaluators.get("schema", json_schema={"type": "array", "maxItems": 1})
    v = ev.evaluate([1, 2])
    assert "$: [1, 2] is too long" in v.reason and "at most this many items: 1" in v.feedback


def test_schema_long_input_names_the_one_bad_item():
    ev = evaluators.get("schema", json_schema={"type": "array", "items": {"type": "integer"}})
    big = list(range(20_000))
    big[123] = "x"
    v = ev.evaluate(json.dumps(big))
    assert v.reason == "1 schema violation: $[123]: 'x' is not of type 'integer'"


def test_field_f1_agrees_with_equality():
    ev = evaluators.get("json_match")
    equal = ev.evaluate('{"a": {"b": 1}}', {"a": {}}).details  # an empty expected object equals any object
    assert equal["fields"]["$.a"]["f1"] == 1.0 and equal["f1_macro"] == 1.0 and equal["f1_micro"] == 1.0
    unequal = ev.evaluate('{"a": []}', {"a": {}}).details  # no tokens on either side, yet not equal
    assert unequal["fields"]["$.a"]["f1"] == 0.0 and unequal["f1_macro"] == 0.0 and unequal["f1_micro"] == 0.0
    normalised = evaluators.get("json_match", regexes_to_ignore=["-"]).evaluate('{"a": "new-york"}', {"a": "newyork"})
    assert normalised.passed and normalised.details["fields"]["$.a"]["f1"] == 1.0
