"""The task hash: equal for equivalent definitions, changed by anything that changes requests or scoring."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from typing import Any

import pytest

from assay.tasks import Task, load_task
from tests.tasks.task_support import DATA, ROWS


def config(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "qa",
        "version": "1.0",
        "description": "questions",
        "tags": ["a"],
        "groups": ["g"],
        "dataset": {"rows": copy.deepcopy(ROWS)},
        "fields": {"input": "question", "target": "answer", "metadata": {"subject": "subject"}},
        "system": "Be brief.",
        "template": "Q: {{ question }}\nA:",
        "fewshot": {"n": 2, "seed": 1},
        "generation": {"temperature": 0.0, "max_tokens": 10},
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
        "response_format": {"type": "json_object"},
        "filters": [{"name": "first", "steps": [{"type": "regex", "pattern": r"(\w+)"}]}],
        "repeats": 2,
        "evaluators": [{"name": "exact_match", "ignore_case": True}],
        "model": {"provider": "python", "name": "x"},
    }
    base.update(overrides)
    return base


def hash_of(cfg: dict[str, Any]) -> str:
    return Task.from_config(cfg).hash


def test_hash_is_sha256_hex():
    h = hash_of(config())
    assert len(h) == 64 and int(h, 16) >= 0


def test_yaml_and_python_definitions_of_one_task_hash_equal(tmp_path):
    yaml_task = load_task(DATA / "qa.yaml")
    rows = [json.loads(line) for line in (DATA / "qa.jsonl").read_text().splitlines() if line.strip()]
    python_task = Task(
        "renamed_in_python",  # the name is cosmetic
        dataset=rows,  # inline rows with the same content as the YAML's JSONL file
        fields={"id": "qid", "input": "question", "target": "answer", "metadata": ["meta.subject", "meta.level"]},
        system="Answer with one word.",
        template="Q: {{ question }}\nA:",
        fewshot={"n": 2, "seed": 7},
        generation={"max_tokens": 16, "temperature": 0, "stop": "\n"},
        filters=[
            {"name": "strict"},
            {"name": "first_word", "steps": [{"type": "regex", "pattern": r"(\w+)"}, {"type": "strip"}]},
        ],
        evaluators=[
            "exact_match",
            {"name": "exact_match", "metric": "exact_match_ci", "ignore_case": True, "filters": ["first_word"]},
        ],
        version="2",
    )
    assert python_task.hash == yaml_task.hash
    path_task = Task.from_config({**yaml_task.to_config(), "dataset": str(DATA / "qa.jsonl")})
    assert path_task.hash == yaml_task.hash


def test_dataset_file_format_and_key_order_do_not_matter(tmp_path):
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    as_json = tmp_path / "d.json"
    as_json.write_text(json.dumps({"data": [dict(reversed(list(r.items()))) for r in ROWS]}, indent=2))
    assert hash_of(config(dataset=str(jsonl))) == hash_of(config(dataset=str(as_json))) == hash_of(config())


def _reverse_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reverse_keys(v) for k, v in reversed(list(value.items()))}
    if isinstance(value, list):
        return [_reverse_keys(v) for v in value]
    return value


def test_dict_key_order_does_not_matter():
    assert hash_of(_reverse_keys(config())) == hash_of(config())


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("name", "other_name"),
        ("description", "different words"),
        ("tags", ["b", "c"]),
        ("groups", ["h"]),
        ("model", {"provider": "openai", "name": "y"}),
    ],
)
def test_cosmetic_fields_do_not_change_the_hash(key, value):
    assert hash_of(config(**{key: value})) == hash_of(config())


def _changed_row() -> dict[str, Any]:
    rows = copy.deepcopy(ROWS)
    rows[3]["answer"] = "Ag"
    return {"rows": rows}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("version", "1.1"),
        ("dataset", _changed_row()),
        ("fields", {"input": "question", "target": "subject", "metadata": {"subject": "subject"}}),
        ("fields", {"input": "question", "target": "answer"}),
        ("system", "Be very brief."),
        ("template", "Question: {{ question }}\nA:"),
        ("fewshot", {"n": 1, "seed": 1}),
        ("fewshot", {"n": 2, "seed": 2}),
        ("fewshot", {"n": 2, "seed": 1, "separator": "\n---\n"}),
        ("fewshot", {"n": 2, "seed": 1, "target_delimiter": "\n"}),
        ("fewshot", None),
        ("generation", {"temperature": 0.7, "max_tokens": 10}),
        ("generation", {"temperature": 0.0, "max_tokens": 10, "seed": 3}),
        ("tools", None),
        ("tools", [{"type": "function", "function": {"name": "g", "parameters": {"type": "object"}}}]),
        ("response_format", None),
        ("filters", [{"name": "first", "steps": [{"type": "regex", "pattern": r"(\d+)"}]}]),
        ("filters", [{"name": "first", "steps": [{"type": "regex", "pattern": r"(\w+)", "select": "last"}]}]),
        ("filters", [{"name": "renamed", "steps": [{"type": "regex", "pattern": r"(\w+)"}]}]),
        ("repeats", 3),
        ("evaluators", [{"name": "exact_match"}]),
        ("evaluators", [{"name": "exact_match", "ignore_case": True, "metric": "em"}]),
        ("evaluators", [{"name": "exact_match", "ignore_case": True, "expected": "doc.subject"}]),
        ("evaluators", [{"name": "exact_match", "ignore_case": True, "filters": ["first"]}]),
    ],
)
def test_request_and_scoring_fields_change_the_hash(key, value):
    cfg = config(**{key: value})
    if value is None:
        del cfg[key]
    assert hash_of(cfg) != hash_of(config())


def test_chat_messages_change_the_hash():
    chat = config(template=None, system=None, messages=[{"role": "user", "content": "Q: {{ question }}\nA:"}])
    del chat["template"], chat["system"]
    other = copy.deepcopy(chat)
    other["messages"][0]["content"] = "{{ question }}"
    assert hash_of(chat) != hash_of(other) != hash_of(config())


def test_fewshot_source_content_changes_the_hash(tmp_path):
    source = tmp_path / "shots.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    first = hash_of(config(fewshot={"n": 1, "source": str(source)}))
    source.write_text("".join(json.dumps({**r, "answer": r["answer"] + "!"}) + "\n" for r in ROWS))
    assert hash_of(config(fewshot={"n": 1, "source": str(source)})) != first


def test_hash_is_stable_across_processes():
    script = (
        "import json, sys\nfrom assay.tasks import Task\nprint(Task.from_config(json.loads(sys.stdin.read())).hash)\n"
    )
    payload = json.dumps(config())
    hashes = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", script],
            input=payload,
            capture_output=True,
            text=True,
            env=env,
            check=True,
            timeout=60,
        )
        hashes.add(out.stdout.strip())
    assert hashes == {hash_of(config())}
