"""One config using most of what the reader honours, read by assay and compared with what promptfoo 0.123.1 made of
it (its ``-o out.json``, run once against a local echo server: the prompts it sent, each test's description,
metadata, assertions and options). Two documented differences: ``vars: file://vars/*.yaml`` is read by assay
(promptfoo 0.123.1 resolves the glob without stripping ``file://``, finds nothing and runs the test without those
vars), and a glob of files is read in sorted order (promptfoo's is the file system's)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assay.tasks.importers.promptfoo import load_promptfoo

CONFIG = """\
description: fidelity
env:
  GREETING: Ahoy
prompts:
  - id: 'Q: {{question}} ({{topic}})'
    label: qa
  - raw: 'Summarise {{doc_text}}'
    label: summary
providers: [openai:chat:m]
defaultTest: file://default.yaml
metadata: {suite: top}
tests:
  - file://tests/*.csv
  - description: inline {{question}}
    vars:
      question: ['What is {{topic}}?', 'Why {{topic}}?']
      topic: ships
      doc_text: file://docs/a.txt
    prompts: [qa]
    assert:
      - $ref: '#/assertionTemplates/mentions'
        weight: 2
  - vars: file://vars/*.yaml
    prompts: [summary]
    options:
      disableVarExpansion: true
      disableDefaultAsserts: true
  - vars:
      doc_text: file://docs/*.txt
      question: '{{ env.GREETING }} there'
      topic: none
    prompts: [summary]
scenarios:
  - description: two langs
    config:
      - vars: {lang: en}
        metadata: {lang: en}
      - vars: {lang: fr}
    tests:
      - vars: {question: 'Hello in {{lang}}', topic: greet, doc_text: d}
        prompts: [qa]
        assert: [{type: icontains, value: hello}]
assertionTemplates:
  mentions:
    type: contains
    value: '{{topic}}'
"""
DEFAULT = """\
vars:
  topic: default-topic
  doc_text: none
assert:
  - type: javascript
    value: output.length > 0
options:
  suffix: ' [end]'
metadata: {from: default}
"""
CSV = '''\
question,topic,__expected1,__expected2,__metadata:cat,__metadata:tags[],__prefix,__description
"What is a {{topic}}?",boat,"contains-any:boat,""a b""",similar(0.7):boat,nautical,"x,y\\,z",">> ",csv one
How?,sea,icontains:SEA,,shipping,,,
'''
JS = {"type": "javascript", "value": "output.length > 0"}
CSV1 = [JS, {"type": "contains-any", "value": ["boat", "a b"]}, {"type": "similar", "value": "boat", "threshold": 0.7}]
CSV2 = [JS, {"type": "icontains", "value": "SEA"}]
INLINE = [JS, {"weight": 2, "type": "contains", "value": "{{topic}}"}]
SCENARIO = [JS, {"type": "icontains", "value": "hello"}]
# (task, test id) -> (prompt sent, description, metadata, assertions): promptfoo 0.123.1's out.json
PROMPTFOO = {
    (0, "test-1"): (">> Q: What is a boat? (boat) [end]", "csv one", {"from": "default", "cat": "nautical",
                                                                       "tags": ["x", "y,z"]}, CSV1),
    (0, "test-2"): ("Q: How? (sea) [end]", "Row #2", {"from": "default", "cat": "shipping"}, CSV2),
    (0, "test-3"): ("Q: What is ships? (ships) [end]", "inline {{question}}", {"from": "default"}, INLINE),
    (0, "test-4"): ("Q: Why ships? (ships) [end]", "inline {{question}}", {"from": "default"}, INLINE),
    (0, "test-8"): ("Q: Hello in en (greet) [end]", "", {"from": "default", "lang": "en",
                                                           "conversationId": "__scenario_0__"}, SCENARIO),
    (0, "test-9"): ("Q: Hello in fr (greet) [end]", "", {"from": "default", "conversationId": "__scenario_1__"},
                    SCENARIO),
    (1, "test-1"): (">> Summarise none [end]", "csv one", {"from": "default", "cat": "nautical",
                                                            "tags": ["x", "y,z"]}, CSV1),
    (1, "test-2"): ("Summarise none [end]", "Row #2", {"from": "default", "cat": "shipping"}, CSV2),
    (1, "test-5"): ("Summarise none [end]", "", {"from": "default"}, []),
    (1, "test-6"): ("Summarise The first document. [end]", "", {"from": "default"}, [JS]),
    (1, "test-7"): ("Summarise The second document. [end]", "", {"from": "default"}, [JS]),
}  # fmt: skip


def write(tmp_path: Path) -> Path:
    for name, text in {
        "promptfooconfig.yaml": CONFIG,
        "default.yaml": DEFAULT,
        "tests/t.csv": CSV,
        "docs/a.txt": "The first document.\n",
        "docs/b.txt": "The second document.\n\n",
        "vars/v1.yaml": "question: From file\nitems: [a, b]\n",
        "vars/v2.yaml": "topic: from-yaml\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path / "promptfooconfig.yaml"


def seen(path: Path) -> dict[tuple[int, str], tuple[str, str, dict[str, Any], list[Any]]]:
    out = {}
    for k, task in enumerate(load_promptfoo(path)):
        for sample in task.samples():
            doc = sample.doc
            text = task._render(sample)[-1]["content"]
            metadata = {key: v for key, v in doc["__metadata"].items() if v is not None}
            out[(k, sample.id)] = (text, doc["__description"], metadata, doc["__assert"])
    return out


def test_prompts_tests_and_metadata_as_promptfoo_makes_them(tmp_path: Path) -> None:
    assert seen(write(tmp_path)) == PROMPTFOO


def test_vars_are_resolved_and_the_sample_metadata_is_flat(tmp_path: Path) -> None:
    tasks = load_promptfoo(write(tmp_path))
    qa = {s.id: s for s in tasks[0].samples()}
    assert qa["test-1"].doc["question"] == "What is a boat?"  # a var naming another var, resolved
    assert qa["test-3"].doc["doc_text"] == "The first document."  # a file:// var: the file's text, trimmed
    assert qa["test-1"].metadata == {
        "description": "csv one", "from": "default", "cat": "nautical", "tags": ["x", "y,z"], "lang": None,
        "conversationId": None,
    }  # fmt: skip
    assert qa["test-8"].metadata["lang"] == "en"
    summary = {s.id: s.doc for s in tasks[1].samples()}
    assert {k: summary["test-5"][k] for k in ("question", "topic", "items")} == {
        "question": "From file", "topic": "from-yaml", "items": ["a", "b"]
    }  # fmt: skip
    assert json.dumps(summary["test-5"]["__options"]) == json.dumps(
        {"suffix": " [end]", "disableVarExpansion": True, "disableDefaultAsserts": True}
    )
