"""``$ref``s and ``file://`` references are resolved and checked at load (promptfoo resolves ``$ref`` over the whole
config with json-schema-ref-parser): a sample never meets a dangling reference, and a refusal names FILE:LINE."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.errors import ConfigError
from assay.tasks.importers.promptfoo.reader import read_config

HEAD = "prompts: ['{{a}}']\nproviders: [echo]\n"


def config(tmp_path: Path, text: str, **files: str) -> Path:
    for name, content in files.items():
        path = tmp_path / name.replace("__", ".").replace("_SLASH_", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(HEAD + text)
    return path


def refused(path: Path) -> str:
    with pytest.raises(ConfigError) as err:
        read_config(path)
    return str(err.value).replace(str(path.parent) + "/", "")


def test_refs_are_resolved_anywhere_with_their_own_keys_winning(tmp_path: Path) -> None:
    path = config(
        tmp_path,
        "tests:\n  - vars: {a: 1}\n    assert:\n      - $ref: '#/assertionTemplates/hi'\n        weight: 3\n"
        "      - $ref: 'shared.yaml#/checks/0'\n"
        "  - $ref: '#/x-tests/one'\n"
        "assertionTemplates:\n  hi: {type: contains, value: hi, weight: 1}\n"
        "x-tests:\n  one: {vars: {a: 2}, assert: [{$ref: '#/assertionTemplates/hi'}]}\n",
        shared__yaml="checks:\n  - {type: icontains, value: HO}\n",
    )
    first, second = read_config(path).tests
    assert first.checks == [{"weight": 3, "type": "contains", "value": "hi"}, {"type": "icontains", "value": "HO"}]
    assert second.vars == {"a": 2} and second.checks == [{"type": "contains", "value": "hi", "weight": 1}]


def test_a_ref_to_a_missing_template_names_its_line_and_the_known_names(tmp_path: Path) -> None:
    path = config(
        tmp_path,
        "tests:\n  - vars: {a: 1}\n    assert:\n      - $ref: '#/assertionTemplates/nope'\n"
        "assertionTemplates:\n  yes_: {type: contains, value: a}\n  other: {type: equals, value: b}\n",
    )
    assert refused(path) == (
        "promptfooconfig.yaml:6: tests[0].assert[0].$ref: '#/assertionTemplates/nope' names nothing: no 'nope' "
        "(/assertionTemplates has: other, yes_)"
    )


def test_circular_and_external_refs(tmp_path: Path) -> None:
    path = config(tmp_path, "tests:\n  - vars: {a: 1}\n    assert: [{$ref: '#/t/a'}]\nt:\n  a: {$ref: '#/t/a'}\n")
    assert "'#/t/a' is inside the value it names (a circular $ref)" in refused(path)
    path = config(tmp_path, "tests:\n  - vars: {a: 1}\n    assert: [{$ref: 'gone.yaml#/a'}]\n")
    assert refused(path).startswith("promptfooconfig.yaml:5: tests[0].assert[0].$ref: 'gone.yaml': file not found")


def test_code_files_are_checked_and_made_absolute(tmp_path: Path) -> None:
    path = config(
        tmp_path,
        "tests:\n  - vars: {a: 1}\n    options: {transform: 'file://t.py:fix'}\n    assert:\n"
        "      - {type: python, value: 'file://checks/c.py:check'}\n"
        "      - {type: equals, value: 'file://expected.txt'}\n"
        "      - {type: is-json, value: 'file://schema.json', transform: 'file://t.js'}\n",
        t__py="def fix(output, context):\n    return output\n",
        t__js="module.exports = (output) => output;\n",
        checks_SLASH_c__py="def check(output, context):\n    return True\n",
        expected__txt="  Ahoy\n",
        schema__json='{"type": "object"}',
    )
    (test,) = read_config(path).tests
    base = path.parent.resolve()
    assert test.options == {"transform": f"file://{base}/t.py:fix"}
    assert test.checks == [
        {"type": "python", "value": f"file://{base}/checks/c.py:check"},
        {"type": "equals", "value": "Ahoy"},  # read now, as promptfoo reads a .txt value: trimmed
        {"type": "is-json", "value": {"type": "object"}, "transform": f"file://{base}/t.js"},
    ]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("      - {type: python, value: 'file://missing.py'}\n", "promptfooconfig.yaml:6: tests[0].assert[0].value"),
        (
            "      - {type: contains, value: x, transform: 'file://t.js'}\n",
            "promptfooconfig.yaml:6: tests[0].assert[0]",
        ),
        ("      - {type: llm-rubric, value: x, rubricPrompt: 'file://r.txt'}\n", "promptfooconfig.yaml:6: tests[0]"),
    ],
)
def test_a_missing_file_is_refused_at_load(tmp_path: Path, text: str, where: str) -> None:
    path = config(tmp_path, "tests:\n  - vars: {a: 1}\n    assert:\n" + text)
    message = refused(path)
    assert message.startswith(where) and "file not found" in message


def test_vars_from_files_and_globs(tmp_path: Path) -> None:
    path = config(
        tmp_path,
        "tests:\n  - vars: {a: 'file://docs/*.txt', b: file://d.yaml}\n  - vars: file://v.yaml\n"
        "  - vars: {a: file://missing.txt}\n",
        docs_SLASH_1__txt="one\n",
        docs_SLASH_2__txt="two",
        d__yaml="k: [1, 2]\n",
        v__yaml="a: from v\n",
    )
    assert refused(path).startswith("promptfooconfig.yaml:6: tests[2].vars.a: 'file://missing.txt': file not found")
    path.write_text(path.read_text().rsplit("  - vars: {a: file://missing.txt}\n", 1)[0])
    assert [t.vars for t in read_config(path).tests] == [
        {"a": "one", "b": '{"k":[1,2]}'},  # one test per file; YAML as its JSON text (promptfoo's renderPrompt)
        {"a": "two", "b": '{"k":[1,2]}'},
        {"a": "from v"},
    ]
    path.write_text(HEAD + "tests:\n  - vars: {a: file://get.py}\n")
    assert "a var computed by a python/javascript file (get_var) is not run by assay" in refused(path)


def test_env_templates_and_env_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PF_TEST_HOST", "127.0.0.1:9")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(
        "env: {WHO: crew, OPENAI_TEMPERATURE: '0.3'}\nprompts: ['{{ env.WHO }} {{a}}']\n"
        "providers:\n  - id: openai:chat:m\n    config: {apiBaseUrl: 'http://{{ env.PF_TEST_HOST }}/v1'}\n"
        "tests:\n  - vars: {a: '{{ env.UNSET_VAR_X }}'}\n"
    )
    config_ = read_config(path)
    assert config_.prompts[0].text == "crew {{a}}"
    assert config_.tests[0].vars == {"a": "{{ env.UNSET_VAR_X }}"}  # an unset variable's template stays
    provider = config_.providers[0]
    assert provider.spec == {"provider": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}
    assert provider.generation == {"temperature": 0.3, "max_tokens": 1024}
    path.write_text("env: {PROMPTFOO_DISABLE_TEMPLATING: 'true'}\n" + HEAD)
    assert refused(path).startswith("promptfooconfig.yaml:1: env.PROMPTFOO_DISABLE_TEMPLATING: not supported")
