"""Tasks from YAML and from Python: samples, field mapping, requests, repeats, to_config and info."""

from __future__ import annotations

import json

import pytest

from assay import evaluators
from assay.errors import ConfigError, DataError
from assay.models.base import Request
from assay.tasks import MetricSpec, Sample, Task, load_task
from tests.tasks.task_support import DATA, ROWS


def basic(**overrides):
    config = {
        "name": "qa",
        "dataset": list(ROWS),
        "fields": {"input": "question", "target": "answer"},
        "template": "Q: {{ question }}\nA:",
        "evaluators": ["exact_match"],
    }
    config.update(overrides)
    return Task(**config)


def test_yaml_task_maps_fields_and_skips_blank_lines():
    task = load_task(DATA / "qa.yaml")
    samples = task.samples()
    assert task.n_docs == 6 and len(samples) == 6
    assert [s.doc_id for s in samples] == list(range(6))  # the blank line in the file does not shift positions
    second = samples[1]
    assert second.id == "q2"
    assert second.input == "What is 2 + 2?"
    assert second.target == ["4", "four"]
    assert second.metadata == {"meta.subject": "math", "meta.level": 1}
    assert second.doc["qid"] == "q2"
    assert task.version == "2" and task.tags == ["smoke"] and task.groups == ["trivia"]
    assert task.system == "Answer with one word."
    assert task.generation == {"temperature": 0.0, "max_tokens": 16, "stop": ["\n"]}
    assert task.filters == ["strict", "first_word"]
    assert [m.name for m in task.metrics] == ["exact_match", "exact_match_ci"]


def test_load_task_accepts_a_dict_and_task_from_yaml_equals_load_task():
    a = load_task(DATA / "qa.yaml")
    b = Task.from_yaml(str(DATA / "qa.yaml"))
    c = load_task(a.to_config())
    assert a.hash == b.hash == c.hash


def test_limit_and_seeded_shuffle_keep_doc_ids():
    task = basic()
    assert [s.doc_id for s in task.samples(limit=2)] == [0, 1]
    shuffled = task.samples(shuffle_seed=3)
    assert sorted(s.doc_id for s in shuffled) == list(range(5))
    assert [s.doc_id for s in shuffled] == [s.doc_id for s in basic().samples(shuffle_seed=3)]
    assert [s.doc_id for s in shuffled] != [0, 1, 2, 3, 4]
    assert [s.doc_id for s in task.samples(limit=2, shuffle_seed=3)] == [s.doc_id for s in shuffled[:2]]
    assert task.n_docs == 5
    with pytest.raises(ValueError, match="limit"):
        task.samples(limit=-1)


def test_ids_default_to_the_id_field_then_the_position():
    assert [s.id for s in basic().samples()] == ["0", "1", "2", "3", "4"]
    rows = [{**r, "id": f"x{i}"} for i, r in enumerate(ROWS)]
    assert [s.id for s in basic(dataset=rows).samples()][:2] == ["x0", "x1"]
    numeric = [{**r, "id": i * 10} for i, r in enumerate(ROWS)]
    assert basic(dataset=numeric).samples()[1].id == "10"


def test_duplicate_ids_are_a_data_error():
    rows = [{**r, "id": "same"} for r in ROWS[:2]]
    with pytest.raises(DataError, match=r"row 2: duplicate id 'same', first used at .*row 1.*set fields.id"):
        basic(dataset=rows).samples()


def test_dotted_paths_reach_into_nested_rows_and_lists():
    rows = [{"q": {"text": "Pick one", "choices": ["a", "b"]}, "gold": {"idx": 1}, "m": {"lang": "en"}}]
    task = basic(
        dataset=rows,
        fields={"input": "q.text", "target": "q.choices.1", "metadata": {"language": "m.lang"}},
        template="{{ input }} {{ q.choices | join(',') }}",
    )
    (sample,) = task.samples()
    assert (sample.input, sample.target, sample.metadata) == ("Pick one", "b", {"language": "en"})
    assert task.build_request(sample).messages[0]["content"] == "Pick one a,b"


def test_a_literal_dotted_key_wins_over_nesting():
    rows = [{"a.b": "literal", "a": {"b": "nested"}, "answer": "x"}]
    task = basic(dataset=rows, fields={"input": "a.b", "target": "answer"}, template="{{ input }}")
    assert task.samples()[0].input == "literal"


def test_missing_mapped_field_names_file_line_and_field(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"question": "a", "answer": "b"}\n\n{"question": "c"}\n', encoding="utf-8")
    task = basic(dataset=str(path))
    with pytest.raises(DataError) as err:
        task.samples()
    message = str(err.value)
    assert "d.jsonl:3:" in message and "no field 'answer'" in message and "fields.target" in message
    assert "its fields: question" in message


def test_missing_field_in_inline_yaml_rows_names_the_task_file_line(write):
    path = write(
        "t.yaml",
        """
        name: t
        dataset:
          rows:
            - {question: a, answer: b}
            - {question: c}
        fields: {input: question, target: answer}
        template: "{{ question }}"
        evaluators: [exact_match]
        """,
    )
    with pytest.raises(DataError, match=r"t\.yaml:5: row has no field 'answer'"):
        load_task(path)


def test_build_request_carries_everything_the_model_needs():
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    task = basic(
        generation={"temperature": 0.2, "max_tokens": 5, "top_k": 3},
        tools=tools,
        response_format={"type": "json_object"},
        fields={"input": "question", "target": "answer", "metadata": ["subject"]},
    )
    sample = task.samples()[0]
    request = task.build_request(sample)
    assert isinstance(request, Request)
    assert request.sample_id == "0" and request.repeat == 0
    assert request.messages == [{"role": "user", "content": "Q: Capital of France?\nA:"}]
    assert request.params == {"temperature": 0.2, "max_tokens": 5, "top_k": 3}  # unknown params pass through
    assert request.tools == tools and request.response_format == {"type": "json_object"}
    assert request.doc == ROWS[0] and request.metadata == {"subject": "geo"}
    assert Task.prompt_text(request) == "Q: Capital of France?\nA:"


def test_repeats_share_the_prompt_and_offset_a_fixed_seed():
    task = basic(repeats=3, generation={"seed": 10, "temperature": 1.0})
    sample = task.samples()[0]
    requests = [task.build_request(sample, r) for r in range(3)]
    assert [r.repeat for r in requests] == [0, 1, 2]
    assert [r.params["seed"] for r in requests] == [10, 11, 12]
    assert all(r.messages == requests[0].messages for r in requests)
    with pytest.raises(ValueError, match=r"repeat must be in \[0, 3\)"):
        task.build_request(sample, 3)
    single = basic(generation={"seed": 10})
    assert single.build_request(single.samples()[0]).params["seed"] == 10


def test_python_task_accepts_evaluator_objects_and_metric_specs():
    strict = evaluators.get("exact_match")
    loose = MetricSpec("em_loose", evaluators.get("exact_match", ignore_case=True), expected="target")
    task = basic(evaluators=[strict, loose])
    assert [m.name for m in task.metrics] == ["exact_match", "em_loose"]
    assert task.metrics[1].evaluator.evaluate("paris", "Paris").passed


def test_to_config_is_json_safe_and_round_trips(tmp_path):
    task = load_task(DATA / "qa.yaml")
    config = task.to_config()
    again = Task.from_config(json.loads(json.dumps(config)))
    assert again.to_config() == config and again.hash == task.hash
    assert config["dataset"]["path"] == str((DATA / "qa.jsonl").resolve())  # absolute: works from anywhere
    python_task = basic(fewshot={"fixed": [ROWS[0]], "n": 1}, filters=[{"name": "f", "steps": [{"type": "strip"}]}])
    assert Task.from_config(json.loads(json.dumps(python_task.to_config()))).hash == python_task.hash


def test_info_describes_the_task_for_results():
    task = load_task(DATA / "qa.yaml")
    info = task.info(n_selected=4)
    assert info.name == "qa_small" and info.version == "2" and info.task_hash == task.hash
    assert info.n_docs == 6 and info.n_selected == 4 and info.n_shot == 2 and info.repeats == 1
    assert info.filters == ["strict", "first_word"] and info.groups == ["trivia"]
    assert [(m.name, m.evaluator) for m in info.metrics] == [
        ("exact_match", {"name": "exact_match"}),
        ("exact_match_ci", {"name": "exact_match", "ignore_case": True}),
    ]
    assert info.system_instruction == "Answer with one word."
    assert info.config == task.to_config()


def test_task_without_data_problems_reads_the_dataset_once(monkeypatch):
    import assay.tasks.task as task_module

    calls = []
    real = task_module.read_dataset

    def counting(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(task_module, "read_dataset", counting)
    task = load_task(DATA / "qa.yaml")
    task.samples()
    task.samples(limit=2)
    _ = task.hash, task.n_docs
    assert len(calls) == 1


def test_sample_is_a_frozen_value():
    sample = Sample(doc_id=0, id="a", doc={"x": 1}, input="hi", target="t", metadata={})
    with pytest.raises(AttributeError):
        sample.id = "b"  # type: ignore[misc]
    assert sample == Sample(0, "a", {"x": 1}, "hi", "t", {})


def test_python_task_errors_name_the_task():
    with pytest.raises(ConfigError, match=r"task 'qa': repeats: Input should be greater than or equal to 1"):
        basic(repeats=0)


def test_yaml_shorthands_anchors_and_merge_keys(write, qa_jsonl):
    path = write(
        "t.yaml",
        """
        name: t
        version: 3
        tags: one
        groups: [g1, g2]
        dataset: qa.jsonl
        fields: {input: question, target: answer}
        template: "{{ question }}"
        fewshot: 1
        evaluators:
          - &loose {name: exact_match, ignore_case: true}
          - {<<: *loose, metric: em2, strip: true}
        """,
    )
    task = load_task(path)
    assert task.version == "3" and task.tags == ["one"] and task.groups == ["g1", "g2"] and task.n_shot == 1
    assert [m.to_config() for m in task.metrics] == [
        {"name": "exact_match", "ignore_case": True},
        {"name": "exact_match", "ignore_case": True, "strip": True, "metric": "em2"},
    ]


def test_from_config_source_and_base_dir_name_errors_and_find_files(tmp_path, qa_jsonl):
    config = {"name": "t", "dataset": "qa.jsonl", "fields": {"input": "question", "target": "answer"}}
    task = Task.from_config({**config, "template": "{{ question }}"}, base_dir=tmp_path)
    assert task.n_docs == len(ROWS)
    with pytest.raises(ConfigError, match=r"^my-config: template: undefined variable 'x'"):
        Task.from_config({**config, "template": "{{ x }}"}, base_dir=tmp_path, source="my-config")
    with pytest.raises(ConfigError, match="a task config is a mapping"):
        Task.from_config(["not", "a", "dict"])  # type: ignore[arg-type]


def test_alias_and_repeat_reduction_reach_the_config_without_changing_the_hash():
    plain = basic(repeats=3)
    named = basic(repeats=3, alias="Capitals", repeat_reduction="majority")
    assert named.alias == "Capitals" and named.repeat_reduction == "majority"
    info = named.info(5)
    assert info.config["alias"] == "Capitals" and info.config["repeat_reduction"] == "majority"
    assert "alias" not in plain.to_config() and "repeat_reduction" not in plain.to_config()
    assert named.hash == plain.hash  # aggregation and display only
    assert Task.from_config(named.to_config()).repeat_reduction == "majority"
    with pytest.raises(ConfigError, match=r"repeat_reduction: Input should be 'mean', 'max', 'min' or 'majority'"):
        basic(repeat_reduction="median")


def test_repeat_reductions_match_the_results_module():
    import typing

    from assay.tasks.config import RepeatReduction

    aggregate = pytest.importorskip("assay.results.aggregate")
    assert typing.get_args(RepeatReduction) == tuple(aggregate.REPEAT_REDUCTIONS)
