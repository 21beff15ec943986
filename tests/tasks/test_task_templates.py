"""Prompt templates: text and chat, the sample's own input, strict undefined variables, errors naming the template."""

from __future__ import annotations

import pytest

from assay.errors import ConfigError, DataError
from assay.tasks import Task, load_task
from tests.tasks.task_support import ROWS


def make(**overrides):
    config = {
        "name": "t",
        "dataset": [dict(r) for r in ROWS],
        "fields": {"input": "question", "target": "answer", "metadata": ["subject"]},
        "evaluators": ["exact_match"],
    }
    config.update(overrides)
    return Task(**config)


def first_messages(task):
    return task.build_request(task.samples()[0]).messages


def test_text_template_is_one_user_message():
    task = make(template="Q: {{ question }}\nA:")
    assert first_messages(task) == [{"role": "user", "content": "Q: Capital of France?\nA:"}]


def test_template_variables_fields_doc_input_target_metadata():
    task = make(
        template="{{ question }}|{{ doc.answer }}|{{ input }}|{{ target }}|{{ metadata.subject }}|{{ fewshot }}"
    )
    assert first_messages(task)[0]["content"] == "Capital of France?|Paris|Capital of France?|Paris|geo|[]"


def test_system_makes_a_chat_and_prompt_text_joins_role_lines():
    task = make(system="You are terse about {{ subject }}.", template="{{ question }}")
    request = task.build_request(task.samples()[0])
    assert request.messages == [
        {"role": "system", "content": "You are terse about geo."},
        {"role": "user", "content": "Capital of France?"},
    ]
    assert Task.prompt_text(request) == "system: You are terse about geo.\nuser: Capital of France?"


def test_messages_template_renders_every_turn():
    task = make(
        messages=[
            {"role": "system", "content": "Answer about {{ subject }}."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": "{{ question }}"},
        ]
    )
    assert [m["content"] for m in first_messages(task)] == ["Answer about geo.", "Hi", "Hello.", "Capital of France?"]
    assert [m["role"] for m in first_messages(task)] == ["system", "user", "assistant", "user"]


def test_without_template_the_input_is_the_prompt():
    task = make()
    assert first_messages(task) == [{"role": "user", "content": "Capital of France?"}]


def test_input_holding_chat_messages_is_the_chat():
    rows = [
        {
            "chat": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "yo"},
                {"role": "user", "content": "2+2?"},
            ],
            "answer": "4",
        }
    ]
    task = make(dataset=rows, fields={"input": "chat", "target": "answer"}, system="Be exact.")
    messages = first_messages(task)
    assert messages[0] == {"role": "system", "content": "Be exact."}
    assert messages[1:] == rows[0]["chat"]
    messages[1]["content"] = "changed"
    assert rows[0]["chat"][0]["content"] == "hi"  # the dataset row is not mutated through the request


def test_without_template_an_input_that_is_not_text_is_a_config_error():
    rows = [{"input": {"a": 1}, "target": "x"}]
    with pytest.raises(
        ConfigError, match=r"no template and the input is a dict.*row 1.*set 'template' or 'messages', or fields.input"
    ):
        make(dataset=rows, fields={}).samples()
    with pytest.raises(ConfigError, match="the input is missing"):
        make(dataset=[{"q": "x", "target": "y"}], fields={}).samples()


def test_undefined_variable_fails_at_load_naming_file_line_and_template(write):
    write("d.jsonl", '{"question": "a", "answer": "b"}\n')
    path = write(
        "t.yaml",
        """
        name: t
        dataset: d.jsonl
        fields: {input: question, target: answer}
        template: "Q: {{ questoin }}"
        evaluators: [exact_match]
        """,
    )
    with pytest.raises(ConfigError) as err:
        load_task(path)
    message = str(err.value)
    assert message.startswith(f"{path.name}:4: template: undefined variable 'questoin' (did you mean 'question'?)") or (
        "t.yaml:4: template: undefined variable 'questoin' (did you mean 'question'?)" in message
    )
    assert "d.jsonl:1" in message


def test_undefined_variable_in_a_later_row_is_a_data_error_naming_the_row(write):
    data = write("d.jsonl", '{"question": "a", "answer": "b", "hint": "h"}\n{"question": "c", "answer": "d"}\n')
    task = make(
        dataset=str(data), template="{{ question }} ({{ hint }})", fields={"input": "question", "target": "answer"}
    )
    first, second = task.samples()
    assert task.build_request(first).messages[0]["content"] == "a (h)"
    with pytest.raises(DataError, match=r"d\.jsonl:2: rendering task 't': template: undefined variable 'hint'"):
        task.build_request(second)


def test_template_syntax_error_names_file_line_and_template_line(write):
    write("d.jsonl", '{"question": "a", "answer": "b"}\n')
    path = write(
        "t.yaml",
        """
        name: t
        dataset: d.jsonl
        fields: {input: question, target: answer}
        template: |
          Question: {{ question }}
          Answer: {{ answer
        evaluators: [exact_match]
        """,
    )
    with pytest.raises(ConfigError, match=r"t\.yaml:4: template: template syntax error on template line 2"):
        load_task(path)


def test_syntax_error_in_a_chat_message_names_its_key_path(write):
    write("d.jsonl", '{"question": "a", "answer": "b"}\n')
    path = write(
        "t.yaml",
        """
        name: t
        dataset: d.jsonl
        fields: {input: question, target: answer}
        messages:
          - role: system
            content: ok
          - role: user
            content: "{% if question %}{{ question }}"
        evaluators: [exact_match]
        """,
    )
    with pytest.raises(ConfigError, match=r"t\.yaml:8: messages\[1\]\.content: template syntax error"):
        load_task(path)


def test_tojson_writes_plain_json():
    rows = [{"question": "a<b & 'c'", "answer": "x", "subject": "s"}]
    task = make(dataset=rows, template="{{ doc | tojson }}")
    assert first_messages(task)[0]["content"] == '{"question": "a<b & \'c\'", "answer": "x", "subject": "s"}'


def test_templates_are_sandboxed():
    with pytest.raises(ConfigError, match="template"):
        make(template="{{ question.__class__.__mro__[1].__subclasses__() }}").samples()


def test_whitespace_and_trailing_newline_are_kept():
    task = make(template="  {{ question }}\n\n")
    assert first_messages(task)[0]["content"] == "  Capital of France?\n\n"


def test_prompt_text_of_non_text_content_is_canonical_json():
    from assay.models.base import Request

    request = Request(sample_id="a", messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    assert Task.prompt_text(request) == 'user: [{"text":"hi","type":"text"}]'
