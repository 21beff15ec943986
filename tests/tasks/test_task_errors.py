"""Bad task files: every error names the file, the key path and (where it can be known) the line."""

from __future__ import annotations

import pytest

from assay.errors import ConfigError, DataError
from assay.tasks import Task, load_task

HEAD = """\
name: t
dataset: d.jsonl
fields: {input: question, target: answer}
"""


@pytest.fixture
def task_file(write):
    write("d.jsonl", '{"question": "q1", "answer": "a1"}\n{"question": "q2", "answer": "a2"}\n')

    def _task_file(body: str, head: str = HEAD):
        return write("t.yaml", head + body)

    return _task_file


def error_of(path) -> str:
    with pytest.raises(ConfigError) as err:
        load_task(path)
    return str(err.value)


def test_yaml_syntax_error_has_line_and_column(task_file):
    message = error_of(task_file("template: [unclosed\nevaluators: [exact_match]\n"))
    assert message.startswith("t.yaml:") or "/t.yaml:" in message
    assert "t.yaml:5:11: invalid YAML:" in message and "flow sequence (line 4)" in message


def test_duplicate_key_names_both_lines(task_file):
    message = error_of(task_file("template: a\ntemplate: b\nevaluators: [exact_match]\n"))
    assert "t.yaml:5: template: duplicate key (first on line 4)" in message


def test_unknown_top_level_key_suggests_the_right_one(task_file):
    message = error_of(task_file("templte: '{{ question }}'\nevaluators: [exact_match]\n"))
    assert "t.yaml:4: templte: unknown key (did you mean 'template'?); known keys:" in message


def test_unknown_nested_key_names_its_path_and_line(write, task_file):
    head = "name: t\ndataset: d.jsonl\nfields:\n  input: question\n  taget: answer\n"
    message = error_of(task_file("template: x\nevaluators: [exact_match]\n", head=head))
    assert "t.yaml:5: fields.taget: unknown key (did you mean 'target'?)" in message


def test_unknown_key_in_a_list_item(task_file):
    body = "template: x\nmessages:\n  - role: user\n    contnet: hi\nevaluators: [exact_match]\n"
    message = error_of(task_file(body.replace("template: x\n", "")))
    assert "t.yaml:6: messages[0].contnet: unknown key (did you mean 'content'?)" in message


def test_wrong_value_type_names_key_and_line(task_file):
    message = error_of(task_file("template: x\nrepeats: many\nevaluators: [exact_match]\n"))
    assert "t.yaml:5: repeats: Input should be a valid integer" in message and "'many'" in message


def test_several_problems_are_all_listed_in_line_order(task_file):
    message = error_of(task_file("templte: x\nrepeats: 0\ngeneration: {temperature: -1}\n"))
    lines = message.splitlines()
    assert lines[0].endswith("t.yaml: 3 problems:")
    assert ":4: templte: unknown key" in lines[1]
    assert ":5: repeats:" in lines[2]
    assert ":6: generation.temperature: Input should be greater than or equal to 0" in lines[3]


def test_missing_required_key(write):
    path = write("t.yaml", "name: t\ntemplate: x\n")
    assert "t.yaml: missing required key 'dataset'" in error_of(path)


def test_task_file_must_be_a_mapping(write):
    assert "a task file is a mapping of keys" in error_of(write("t.yaml", "- a\n- b\n"))
    assert "got empty" in error_of(write("t.yaml", "# nothing\n"))


def test_missing_task_file():
    with pytest.raises(ConfigError, match=r"nope\.yaml: task file not found"):
        load_task("nope.yaml")


def test_missing_dataset_file_names_key_and_line(write):
    path = write("t.yaml", "name: t\ndataset:\n  path: missing.jsonl\ntemplate: x\n")
    message = error_of(path)
    assert "t.yaml:3: dataset.path: dataset file not found:" in message and "missing.jsonl" in message


def test_unknown_dataset_extension(write):
    write("d.txt", "x\n")
    message = error_of(write("t.yaml", "name: t\ndataset: d.txt\ntemplate: x\n"))
    assert "t.yaml:2: dataset.path: cannot infer the format of 'd.txt'" in message and "set 'format'" in message


def test_dataset_needs_exactly_one_source(write):
    message = error_of(write("t.yaml", "name: t\ndataset:\n  path: d.jsonl\n  rows: [{a: 1}]\ntemplate: x\n"))
    assert "t.yaml:2: dataset: give exactly one of 'path', 'rows' or 'hf' (got path and rows)" in message


def test_template_and_messages_are_exclusive(task_file):
    body = "template: x\nmessages: [{role: user, content: y}]\nevaluators: [exact_match]\n"
    assert "give either 'template' (one user message) or 'messages'" in error_of(task_file(body))


def test_system_twice(task_file):
    body = "system: a\nmessages: [{role: system, content: b}, {role: user, content: c}]\nevaluators: [exact_match]\n"
    assert "'system' is given and 'messages' has a system message too" in error_of(task_file(body))


def test_bad_role(task_file):
    message = error_of(task_file("messages: [{role: robot, content: b}]\nevaluators: [exact_match]\n"))
    assert "t.yaml:4: messages[0].role: Input should be 'system', 'developer', 'user', 'assistant' or 'tool'" in message


def test_task_name_is_safe_for_file_names(write):
    write("d.jsonl", '{"input": "a", "target": "b"}\n')
    message = error_of(write("t.yaml", "name: ../evil\ndataset: d.jsonl\n"))
    assert "t.yaml:1: name: use letters, digits" in message


def test_unknown_evaluator_names_key_line_and_suggests(task_file):
    message = error_of(task_file("template: x\nevaluators:\n  - exact_match\n  - name: exact_matc\n"))
    assert "t.yaml:7: evaluators[1].name: unknown evaluator 'exact_matc' (did you mean 'exact_match'?)" in message


def test_invalid_evaluator_option_names_the_option_line(task_file):
    body = "template: x\nevaluators:\n  - name: exact_match\n    ignore_case: true\n    ignore_kase: true\n"
    message = error_of(task_file(body))
    assert "t.yaml:8: evaluators[0].ignore_kase: exact_match: unknown option 'ignore_kase'" in message
    assert "(did you mean 'ignore_case'?)" in message
    body = "template: x\nevaluators:\n  - name: exact_match\n    regexes_to_ignore: ['(']\n"
    assert "t.yaml:7: evaluators[0].regexes_to_ignore: exact_match:" in error_of(task_file(body))


def test_metrics_alias_of_evaluators_is_named_as_written(task_file):
    message = error_of(task_file("template: x\nmetrics:\n  - name: nope\n"))
    assert "t.yaml:6: metrics[0].name: unknown evaluator 'nope'" in message
    assert "give either 'metrics' or 'evaluators'" in error_of(
        task_file("template: x\nmetrics: [exact_match]\nevaluators: [exact_match]\n")
    )


def test_bad_filter_step_option_names_the_step_option(task_file):
    body = (
        "template: x\nfilters:\n  - name: f\n    steps:\n      - type: regex\n        pattern: '(a)'\n"
        "        group: 2\nevaluators: [exact_match]\n"
    )
    message = error_of(task_file(body))
    assert "t.yaml:10: filters[0].steps[0].group: regex: option 'group': the pattern has 1 group(s), got 2" in message
    body = "template: x\nfilters:\n  - name: f\n    steps:\n      - type: strip\n        chars: ' '\n"
    assert "t.yaml:9: filters[0].steps[0].chars: strip: unknown option 'chars'" in error_of(task_file(body))
    body = "template: x\nfilters:\n  - name: f\n    steps:\n      - pattern: x\n"
    assert "t.yaml:8: filters[0].steps[0]: a filter step needs a 'type'" in error_of(task_file(body))


def test_duplicate_and_reserved_pipeline_names(task_file):
    body = "template: x\nfilters:\n  - name: f\n  - name: f\n"
    assert "t.yaml:7: filters[1].name: filter pipeline 'f' is already defined by filters[0]" in error_of(
        task_file(body)
    )
    body = "template: x\nfilters:\n  - name: none\n    steps: [{type: strip}]\n"
    assert "'none' names the unfiltered responses" in error_of(task_file(body))


def test_tools_and_response_format_are_checked(task_file):
    assert "t.yaml:6: tools[0]: a tool is {type: function" in error_of(task_file("template: x\ntools:\n  - name: f\n"))
    body = "template: x\ntools:\n  - type: function\n    function:\n      name: f\n      parameters: {type: 12}\n"
    assert "t.yaml:9: tools[0].function.parameters: not a valid JSON Schema" in error_of(task_file(body))
    assert "t.yaml:6: response_format.type: must be 'text', 'json_object' or 'json_schema'" in error_of(
        task_file("template: x\nresponse_format:\n  type: xml\n")
    )
    assert "type json_schema needs json_schema" in error_of(
        task_file("template: x\nresponse_format: {type: json_schema}\n")
    )
    body = "template: x\nresponse_format:\n  type: json_schema\n  json_schema:\n    name: a\n    schema: {type: nope}\n"
    assert "t.yaml:9: response_format.json_schema.schema: not a valid JSON Schema" in error_of(task_file(body))


def test_a_bad_row_anywhere_fails_at_load_before_anything_runs(write):
    write("d.jsonl", '{"question": "q1", "answer": "a1"}\n{"question": "q2", "answer": "a2"}\n{"question": oops}\n')
    path = write("t.yaml", HEAD + "template: x\n")
    with pytest.raises(DataError, match=r"d\.jsonl:3: invalid JSON"):
        load_task(path)


def test_empty_dataset(write):
    write("d.jsonl", "\n")
    assert "t.yaml:2: dataset: the dataset has no rows" in error_of(write("t.yaml", HEAD + "template: x\n"))


def test_python_definition_errors_name_the_task():
    with pytest.raises(ConfigError, match=r"^task 't': fields\.inptu: unknown key \(did you mean 'input'\?\)"):
        Task("t", [{"a": 1}], fields={"inptu": "a"})
    with pytest.raises(ConfigError, match=r"^task 't': evaluators\[0\]\.name: unknown evaluator"):
        Task("t", [{"input": "a", "target": "b"}], evaluators=["nope"])
    with pytest.raises(TypeError):
        Task("t", [{"a": 1}], not_a_key=1)  # type: ignore[call-arg]
