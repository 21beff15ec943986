"""Rows as /tmp/pf/CONTRACT.md has them (``__id``, ``__assert``, ``__threshold``, ``__description``, ``__options``,
``__metadata``; every other field a var), CSV ``__expected`` shorthands exactly as promptfoo 0.123.1's
assertionFromString makes them (the table below is its output for these cells), a test's prefix/suffix in its
prompt's template, and the OpenAI provider's settings with promptfoo's defaults."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest

from assay.errors import ConfigError
from assay.tasks.importers.promptfoo import load_promptfoo
from assay.tasks.importers.promptfoo.convert import task_configs
from assay.tasks.importers.promptfoo.csvtests import csv_row_test
from assay.tasks.importers.promptfoo.reader import read_config
from assay.tasks.importers.promptfoo.where import At
from assay.tasks.importers.promptfoo.yaml12 import plain

# an __expected cell -> promptfoo 0.123.1's assertion (its out.json; every one also got the row's __metric)
SHORTHANDS: list[tuple[str, dict[str, Any]]] = [
    ("fn:output.length > 1", {"type": "javascript", "value": "output.length > 1"}),
    ("eval: output === 'x'", {"type": "javascript", "value": "output === 'x'"}),
    ("javascript:  spaced  ", {"type": "javascript", "value": "spaced"}),
    ("file://check.js", {"type": "javascript", "value": "file://check.js"}),
    ("grade: is good ", {"type": "llm-rubric", "value": " is good"}),
    ("llm-rubric:ok", {"type": "llm-rubric", "value": "ok"}),
    ("python: len(output)", {"type": "python", "value": "len(output)"}),
    ("contains:abc ", {"type": "contains", "value": "abc"}),
    ("not-contains:x", {"type": "not-contains", "value": "x"}),
    ('icontains-any:a, "b,c" ,d', {"type": "icontains-any", "value": ["a", "b,c", "d"]}),
    ("contains-all:", {"type": "contains-all", "value": ""}),
    ("is-json", {"type": "is-json"}),
    ('contains-json:{"type":"object"}', {"type": "contains-json", "value": '{"type":"object"}'}),
    ("similar:hello", {"type": "similar", "value": "hello", "threshold": 0.8}),
    ("similar(0.6):hello", {"type": "similar", "value": "hello", "threshold": 0.6}),
    ("levenshtein(3):abc", {"type": "levenshtein", "value": "abc", "threshold": 3}),
    ("starts-with:ab", {"type": "starts-with", "value": "ab", "threshold": 0.75}),
    ("regex:^a.*", {"type": "regex", "value": "^a.*"}),
    ("equals:x", {"type": "equals", "value": "x"}),
    ("random text: here", {"type": "equals", "value": "random text: here"}),
    ("latency(200)", {"type": "latency", "threshold": 200}),
    ("cost", {"type": "cost", "threshold": 0.75}),
    ("not-is-json", {"type": "not-is-json"}),
    ("similar:cosine:foo", {"type": "similar", "value": "cosine:foo", "threshold": 0.8}),
    ("rouge-n(0.5):the cat", {"type": "rouge-n", "value": "the cat", "threshold": 0.5}),
    ("word-count:5", {"type": "word-count", "value": "5"}),
    ("answer-relevance", {"type": "answer-relevance", "threshold": 0.75}),
    ("webhook:http://x", {"type": "webhook", "value": "http://x"}),
    ("g-eval:clear", {"type": "g-eval", "value": "clear"}),
    ("select-best:x", {"type": "equals", "value": "select-best:x"}),
]


def test_csv_cells_are_the_assertions_promptfoo_makes_of_them() -> None:
    cells = [cell for cell, _ in SHORTHANDS]
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["a", *(f"__expected{i + 1}" for i in range(len(cells))), "__metric",
                     "__config:__expected2:threshold", "__threshold"])  # fmt: skip
    writer.writerow(["1", *cells, "m1", "0.25", "0.5"])
    from assay.tasks.importers.promptfoo.files import Files

    (row,) = Files(Path(".")).csv(text.getvalue(), Path("t.csv"))
    test = plain(csv_row_test(row, At("t.csv", 2)))
    expected = [dict(a, metric="m1") for _, a in SHORTHANDS]
    expected[1]["threshold"] = 0.25  # __config:__expected2:threshold
    assert test["assert"] == expected
    assert (test["threshold"], test["metadata"], test["vars"]) == (0.5, {"threshold": 0.25}, {"a": "1"})
    # a python file keeps its file:// (promptfoo 0.123.1 drops it and then runs 'c.py' as Python code)
    assert csv_row_test({"__expected": "file://c.py:fn"}, At("t.csv", 2))["assert"] == [
        {"type": "python", "value": "file://c.py:fn"}
    ]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(text)
    return path


def test_rows_carry_the_contract_fields(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "prompts: ['{{q}}']\nproviders: [echo]\n"
        "defaultTest: {threshold: 0.5, options: {provider: openai:chat:judge}, metadata: {suite: s}}\n"
        "tests:\n  - description: d {{q}}\n    vars: {q: hi}\n    metadata: {k: v}\n"
        "    options: {transform: output.trim()}\n    assert: [{type: contains, value: h}]\n",
    )
    (task,) = task_configs(read_config(path))
    (row,) = task["dataset"]["rows"]
    assert row == {
        "q": "hi",
        "__id": "test-1",
        "__assert": [{"type": "contains", "value": "h"}],
        "__threshold": 0.5,
        "__description": "d {{q}}",  # promptfoo shows a description as written (its vars are not rendered)
        "__options": {"provider": "openai:chat:judge", "transform": "output.trim()"},
        "__metadata": {"suite": "s", "k": "v"},
    }
    evaluator = task["evaluators"][0]
    assert evaluator["judge"] == {"provider": "openai", "model": "judge", "params": {"temperature": 0,
                                                                                      "max_tokens": 1024}}  # fmt: skip
    assert (evaluator["options_field"], evaluator["vars_exclude_prefix"]) == ("__options", "__")
    assert task["fields"]["metadata"] == {"description": "__description", "suite": "__metadata.suite",
                                          "k": "__metadata.k"}  # fmt: skip


def test_prefix_and_suffix_are_part_of_the_prompt(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "prompts: ['Say {{word}}']\nproviders: [echo]\n"
        "defaultTest:\n  options: {prefix: 'PRE {{word}} ', suffix: ' SUF'}\n"
        "tests:\n  - vars: {word: [x, y]}\n  - vars: {word: z}\n    options: {prefix: 'P2 '}\n"
        "  - vars: {word: w}\n    options: {prefix: ''}\n",
    )
    (task,) = load_promptfoo(path)
    rendered = {s.id: task._render(s)[-1]["content"] for s in task.samples()}
    # promptfoo 0.123.1 sent these (an empty prefix falls back to defaultTest's, as its `||` does)
    assert rendered == {"test-1": "PRE x Say x SUF", "test-2": "PRE y Say y SUF", "test-3": "P2 Say z SUF",
                        "test-4": "PRE w Say w SUF"}  # fmt: skip
    chat = write(
        tmp_path,
        'prompts: [\'[{"role": "user", "content": "{{w}}"}]\']\nproviders: [echo]\n'
        "tests:\n  - vars: {w: a}\n    options: {prefix: 'P '}\n",
    )
    with pytest.raises(ConfigError, match=r":4: tests\[0\]: not supported .*prefix/suffix with the chat prompt"):
        load_promptfoo(chat)


def test_reserved_and_template_var_names_are_refused(tmp_path: Path) -> None:
    for name in ("__x", "doc", "metadata"):
        path = write(tmp_path, f"prompts: [hi]\nproviders: [echo]\ntests:\n  - vars: {{{name}: 1}}\n")
        with pytest.raises(ConfigError, match=rf":4: tests\[0\]: var '{name}'"):
            load_promptfoo(path)


def test_the_openai_provider_has_promptfoos_defaults_and_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_HOST", raising=False)
    path = write(
        tmp_path,
        "prompts: [hi]\nproviders:\n  - openai:gpt-4o-mini\n"
        "  - id: openai:chat:o3-mini\n    label: reasoner\n"
        "    config: {max_completion_tokens: 50, reasoning_effort: low}\n"
        "  - id: openai:chat:m\n    config: {omitDefaults: true, apiHost: example.test, organization: org,"
        " headers: {X-A: b}, passthrough: {top_k: 3}, stop: [END]}\n",
    )
    gpt, reasoner, plain_ = read_config(path).providers
    assert (gpt.spec, gpt.generation) == (
        {"provider": "openai", "model": "gpt-4o-mini"}, {"temperature": 0, "max_tokens": 1024}
    )  # fmt: skip
    assert reasoner.generation == {"max_completion_tokens": 50, "reasoning_effort": "low"}
    assert plain_.spec == {"provider": "openai", "model": "m", "base_url": "https://example.test/v1",
                           "headers": {"OpenAI-Organization": "org", "X-A": "b"}}  # fmt: skip
    assert plain_.generation == {"stop": ["END"], "top_k": 3}
    (task,) = task_configs(read_config(path))
    assert sorted(task["models"]) == ["gpt-4o-mini", "m", "reasoner"]
    assert task["models"]["reasoner"]["params"] == {"max_completion_tokens": 50, "reasoning_effort": "low"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("providers:\n  - id: openai:chat:m\n    config: {apiKey: sk-x}\n", r":4: providers\[0\]\.config\.apiKey: not"),
        ("providers: [echo]\nevaluateOptions: {repeat: 3}\n", r":3: evaluateOptions\.repeat: not supported"),
        (
            "providers: [echo, openai:chat:m]\ntests:\n  - vars: {a: 1}\n    providers: [echo]\n",
            r":5: tests\[0\]\.providers: not supported .*only some of the providers",
        ),
        ("providers:\n  - id: echo\n    prompts: [nope]\n", r":3: providers\[0\]\.prompts: not supported"),
        ("providers: [echo]\nenv: {OPENAI_API_KEY: sk-x}\n", r":3: env\.OPENAI_API_KEY: not supported"),
        ("providers: [echo]\ntests:\n  - vars: {a: 1}\n    options: {repeat: 2}\n", r":5: tests\[0\]\.options\.repeat"),
    ],
)
def test_what_assay_cannot_do_is_refused_where_it_is_written(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_promptfoo(write(tmp_path, "prompts: [hi]\n" + text))


def test_a_config_without_tests_runs_defaultTest_once(tmp_path: Path) -> None:
    path = write(tmp_path, "prompts: ['{{a}}']\nproviders: [echo]\ndefaultTest: {vars: {a: 1}}\n")
    assert [t.vars for t in read_config(path).tests] == [{"a": 1}]  # promptfoo's [{}] when there are no tests


def test_a_config_without_prompts_has_promptfoos_default_prompt(tmp_path: Path) -> None:
    path = write(tmp_path, "providers: [echo]\ntests:\n  - vars: {prompt: Hello there}\n")
    (task,) = load_promptfoo(path)
    assert [task._render(s)[-1]["content"] for s in task.samples()] == ["Hello there"]


def test_echo_returns_the_rendered_prompt_as_promptfoo_does() -> None:
    from assay.tasks.importers.promptfoo.echo import echo

    assert echo([{"role": "user", "content": "Say hi"}]) == "Say hi"
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Explain é"}]
    assert echo(chat) == (
        '[\n  {\n    "role": "system",\n    "content": "Be brief."\n  },\n'
        '  {\n    "role": "user",\n    "content": "Explain é"\n  }\n]'
    )  # JSON.stringify(messages, null, 2), promptfoo 0.123.1's echo of a chat prompt


def test_provider_costs_reach_the_cost_assertion(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "prompts: [hi]\nproviders:\n  - id: openai:chat:m\n    config: {inputCost: 0.000002, outputCost: 0.000008}\n"
        "tests:\n  - assert: [{type: cost, threshold: 0.01}]\n",
    )
    (task,) = task_configs(read_config(path))
    assert task["evaluators"][0]["prices"] == {"m": {"input": 2.0, "output": 8.0}}
