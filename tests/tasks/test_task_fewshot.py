"""Few-shot examples: counts, seeding, never the sample itself, fixed examples, other sources, layouts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from assay.errors import ConfigError, DataError
from assay.tasks import Task
from tests.tasks.task_support import ROWS

QUESTIONS = {r["question"] for r in ROWS}


def make(fewshot: Any, **overrides: Any) -> Task:
    config: dict[str, Any] = {
        "name": "t",
        "dataset": [dict(r) for r in ROWS],
        "fields": {"input": "question", "target": "answer"},
        "template": "Q: {{ question }}\nA:",
        "fewshot": fewshot,
        "evaluators": ["exact_match"],
    }
    config.update(overrides)
    return Task(**config)


def prompt(task: Task, index: int) -> str:
    return str(task.build_request(task.samples()[index]).messages[-1]["content"])


def shown_questions(text: str) -> list[str]:
    return [line.removeprefix("Q: ") for line in text.split("\n") if line.startswith("Q: ")]


def test_n_examples_in_lm_eval_layout():
    task = make({"n": 2, "seed": 0})
    text = prompt(task, 0)
    blocks = text.split("\n\n")
    assert len(blocks) == 3 and blocks[-1] == "Q: Capital of France?\nA:"
    for block in blocks[:2]:
        question, answer = block.split("\nA: ")
        row = next(r for r in ROWS if "Q: " + r["question"] == question)
        assert answer == row["answer"]
    assert task.n_shot == 2 and task.info(5).n_shot == 2


def test_a_sample_is_never_its_own_example():
    task = make({"n": 4, "seed": 3})  # n = N - 1: every other row, never the sample itself
    for i, sample in enumerate(task.samples()):
        shown = shown_questions(prompt(task, i))
        assert shown[-1] == sample.input
        assert sorted(shown[:-1]) == sorted(QUESTIONS - {sample.input})
    with pytest.raises(ConfigError, match=r"fewshot\.n: 5 examples asked for but the dataset .* offers only 4"):
        make({"n": 5}).samples()


def test_examples_are_seeded_reproducible_and_independent_of_limit():
    a, b = make({"n": 2, "seed": 11}), make({"n": 2, "seed": 11})
    assert [prompt(a, i) for i in range(5)] == [prompt(b, i) for i in range(5)]
    limited = a.samples(limit=4)[3]
    assert a.build_request(limited).messages == b.build_request(b.samples()[3]).messages
    shuffled = next(s for s in a.samples(shuffle_seed=1) if s.doc_id == 3)
    assert a.build_request(shuffled).messages == b.build_request(b.samples()[3]).messages
    others = [make({"n": 2, "seed": s}) for s in range(6)]
    assert len({tuple(prompt(t, i) for i in range(5)) for t in others}) > 1  # the seed matters


def test_the_same_examples_for_every_repeat():
    task = make({"n": 2, "seed": 5}, repeats=3)
    sample = task.samples()[2]
    assert len({json.dumps(task.build_request(sample, r).messages) for r in range(3)}) == 1
    assert task.fewshot_for(sample) == task.fewshot_for(sample)


def test_fixed_examples_in_order_and_n_takes_the_first():
    fixed = [{"question": "Ex1?", "answer": "one"}, {"question": "Ex2?", "answer": ["two", "2"]}]
    text = prompt(make({"fixed": fixed}), 0)
    assert text == "Q: Ex1?\nA: one\n\nQ: Ex2?\nA: two\n\nQ: Capital of France?\nA:"  # a list target shows its first
    assert prompt(make({"fixed": fixed, "n": 1}), 0) == "Q: Ex1?\nA: one\n\nQ: Capital of France?\nA:"
    assert make({"fixed": fixed}).n_shot == 2


def test_fixed_examples_errors():
    with pytest.raises(ConfigError, match=r"fewshot: n is 3 but only 1 fixed examples are given"):
        make({"fixed": [ROWS[0]], "n": 3})
    with pytest.raises(ConfigError, match="'fixed' is empty"):
        make({"fixed": []})
    with pytest.raises(ConfigError, match=r"fewshot: set 'n'"):
        make({"seed": 1})
    with pytest.raises(ConfigError, match="give either 'fixed' examples or a 'source'"):
        make({"fixed": [ROWS[0]], "source": {"rows": [ROWS[0]]}})
    with pytest.raises(DataError, match=r"task 't': row 1: row has no field 'answer'"):
        make({"fixed": [{"question": "no answer"}]}).samples()


def test_n_zero_means_zero_shot():
    task = make({"n": 0})
    assert prompt(task, 0) == "Q: Capital of France?\nA:" and task.n_shot == 0


def test_examples_from_another_dataset(tmp_path):
    source = tmp_path / "train.jsonl"
    train = [{"question": f"Train {i}?", "answer": str(i)} for i in range(3)]
    source.write_text("".join(json.dumps(r) + "\n" for r in train))
    task = make({"n": 3, "source": str(source), "seed": 2})
    shown = shown_questions(prompt(task, 0))
    assert sorted(shown[:3]) == ["Train 0?", "Train 1?", "Train 2?"] and shown[3] == "Capital of France?"
    with pytest.raises(ConfigError, match=r"fewshot\.n: 4 examples asked for but .*train\.jsonl offers only 3"):
        make({"n": 4, "source": str(source)}).samples()
    assert make({"n": 1, "source": "same"}).to_config()["fewshot"]["source"] == "same"


def test_fewshot_source_relative_to_the_task_file(write):
    write("d.jsonl", '{"question": "q", "answer": "a"}\n')
    write("shots.jsonl", '{"question": "shot?", "answer": "yes"}\n')
    path = write(
        "t.yaml",
        """
        name: t
        dataset: d.jsonl
        fields: {input: question, target: answer}
        template: "{{ question }}"
        fewshot: {n: 1, source: shots.jsonl}
        evaluators: [exact_match]
        """,
    )
    task = Task.from_yaml(path)
    assert prompt(task, 0) == "shot? yes\n\nq"


def test_separator_and_target_delimiter():
    fixed = [{"question": "Ex?", "answer": "ok"}]
    text = prompt(make({"fixed": fixed, "separator": "\n###\n", "target_delimiter": "\n=> "}), 0)
    assert text == "Q: Ex?\nA:\n=> ok\n###\nQ: Capital of France?\nA:"


def test_chat_templates_get_examples_as_earlier_turns():
    fixed = [{"question": "Ex?", "answer": "ok"}]
    task = make(
        {"fixed": fixed},
        template=None,
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "{{ question }}"}],
    )
    assert task.build_request(task.samples()[0]).messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Ex?"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "Capital of France?"},
    ]


def test_a_template_using_fewshot_lays_out_the_examples_itself():
    fixed = [{"question": "Ex1?", "answer": "one"}, {"question": "Ex2?", "answer": "two"}]
    template = "{% for ex in fewshot %}[{{ ex.question }}={{ ex.target }}]{% endfor %} {{ question }}"
    assert prompt(make({"fixed": fixed}, template=template), 0) == "[Ex1?=one][Ex2?=two] Capital of France?"


def test_examples_without_a_template_use_the_input():
    fixed = [{"question": "Ex?", "answer": "ok"}]
    assert prompt(make({"fixed": fixed}, template=None), 0) == "Ex? ok\n\nCapital of France?"
    chat_rows = [{"m": [{"role": "user", "content": "hi"}], "answer": "hello"}]
    task = Task(
        "c",
        chat_rows,
        fields={"input": "m", "target": "answer"},
        fewshot={"fixed": chat_rows},
        evaluators=["exact_match"],
    )
    assert task.build_request(task.samples()[0]).messages == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "hi"},
    ]


def test_an_example_without_target_names_where_it_came_from():
    rows = [dict(r) for r in ROWS]
    rows[1]["answer"] = None
    task = make({"n": 4, "seed": 0}, dataset=rows)
    with pytest.raises(DataError, match=r"^few-shot example at task 't': row 2: a few-shot example needs a target"):
        for sample in task.samples():
            task.build_request(sample)
