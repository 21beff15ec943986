"""Every refusal of the promptfoo reader names FILE:LINE: key.path — in the config, in a defaultTest file, in CSV,
JSON and JSONL test files — and what promptfoo refuses at load is refused here too (a key given twice)."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.errors import ConfigError
from assay.tasks.importers.promptfoo import load_promptfoo
from assay.tasks.importers.promptfoo.yaml12 import load_yaml12


def refusal(tmp_path: Path, config: str, **files: str) -> str:
    for name, text in files.items():
        (tmp_path / name.replace("__", ".")).write_text(text)
    (tmp_path / "promptfooconfig.yaml").write_text(config)
    with pytest.raises(ConfigError) as err:
        load_promptfoo(tmp_path / "promptfooconfig.yaml")
    return str(err.value).replace(str(tmp_path) + "/", "")


def test_a_provider_that_is_not_one_names_the_file_and_line(tmp_path: Path) -> None:
    assert refusal(tmp_path, "prompts: [hi]\nproviders: 42\n").startswith(
        "promptfooconfig.yaml:2: providers: providers are a list of"
    )


def test_an_unsupported_assertion_type_names_its_line(tmp_path: Path) -> None:
    config = "prompts: [hi]\nproviders: [echo]\ntests:\n  - vars: {a: 1}\n    assert:\n      - type: moderation\n"
    assert refusal(tmp_path, config).startswith(
        "promptfooconfig.yaml:6: tests[0].assert[0].type: assertion type 'moderation' is refused at load: "
    )


def test_an_unknown_provider_names_its_line(tmp_path: Path) -> None:
    message = refusal(tmp_path, "prompts: [hi]\nproviders:\n  - echo\n  - anthropic:messages:claude\n")
    assert message.startswith("promptfooconfig.yaml:4: providers[1]: provider 'anthropic:messages:claude' is not")


def test_a_provider_config_key_names_its_line(tmp_path: Path) -> None:
    config = "prompts: [hi]\nproviders:\n  - id: openai:chat:m\n    config:\n      temperature: 0.5\n      tools_: []\n"
    assert refusal(tmp_path, config).startswith(
        "promptfooconfig.yaml:6: providers[0].config.tools_: not a key of promptfoo 0.123.1's openai config"
    )


def test_csv_rows_name_the_csv_file_and_line(tmp_path: Path) -> None:
    config = "prompts: [hi]\nproviders: [echo]\ntests: [file://t.csv]\n"
    csv = 'a,__expected\n1,contains:1\n"two\nlines",webhook:http://x\n'
    assert refusal(tmp_path, config, t__csv=csv).startswith("t.csv:3: t.csv row 2.assert[0].type: assertion type")
    assert refusal(tmp_path, config, t__csv="a,__expected\n1,contains:1\n2,x,y\n").startswith(
        "t.csv:3: a row of 3 fields under a header of 2 columns"
    )
    assert refusal(tmp_path, config, t__csv="a,__providerOutput\n1,x\n").startswith(
        "t.csv:2: __providerOutput: not supported"
    )


def test_json_and_jsonl_test_files_name_their_lines(tmp_path: Path) -> None:
    config = "prompts: [hi]\nproviders: [echo]\ntests: file://t.json\n"
    json_tests = '[\n  {"vars": {"a": 1}},\n  {"vars": {"a": 2},\n   "assert": [{"type": "nope"}]}\n]\n'
    assert refusal(tmp_path, config, t__json=json_tests).startswith(
        "t.json:4: t.json row 2.assert[0].type: assertion type 'nope' is refused at load"
    )
    config = "prompts: [hi]\nproviders: [echo]\ntests: file://t.jsonl\n"
    jsonl = '{"vars": {"a": 1}}\n\n{"vars": {"a": 2}, "assert": [{"type": "nope"}]}\n'
    assert refusal(tmp_path, config, t__jsonl=jsonl).startswith(
        "t.jsonl:3: t.jsonl row 2.assert[0].type: assertion type 'nope' is refused at load: 'nope' is not an "
        "assertion type of promptfoo 0.123.1"
    )


def test_a_defaultTest_file_names_itself(tmp_path: Path) -> None:
    config = "prompts: [hi]\nproviders: [echo]\ndefaultTest: file://d.yaml\n"
    assert refusal(tmp_path, config, d__yaml="vars: {a: 1}\noptions:\n  storeOutputAs: x\n").startswith(
        "d.yaml:3: defaultTest.options.storeOutputAs: not supported by assay's promptfoo reader: "
    )


def test_a_key_given_twice_is_refused_as_promptfoo_refuses_it(tmp_path: Path) -> None:
    assert refusal(tmp_path, "prompts: [hi]\nproviders: [echo]\nprompts: [ho]\n").startswith(
        "promptfooconfig.yaml:3: duplicated mapping key 'prompts' (first on line 1)"
    )
    merged = load_yaml12("base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\n", "f.yaml")
    assert merged["m"] == {"x": 1, "y": 3} and merged["m"].lines == {"x": 1, "y": 4}  # a merge key may be overridden


def test_a_test_without_any_key_promptfoo_needs_is_refused(tmp_path: Path) -> None:
    assert refusal(tmp_path, "prompts: [hi]\nproviders: [echo]\ntests:\n  - {}\n").startswith(
        "promptfooconfig.yaml:4: tests[0]: a test needs one of assert, vars, options"
    )


def test_tests_a_test_names_pick_the_prompts_it_runs_with(tmp_path: Path) -> None:
    config = "prompts: [hi]\nproviders: [echo]\ntests:\n  - vars: {a: 1}\n    prompts: [nothing]\n"
    assert refusal(tmp_path, config).startswith("promptfooconfig.yaml:5: tests[0].prompts: ['nothing'] matches no")


def test_an_unknown_key_in_a_json_test_file_is_ignored_naming_its_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """promptfoo's parse drops it; assay too, with a warning naming the file's own line."""
    (tmp_path / "t.json").write_text('[\n  {"vars": {"a": 1}},\n  {"vars": {"a": 2},\n   "asert": []}\n]\n')
    (tmp_path / "promptfooconfig.yaml").write_text("prompts: [hi]\nproviders: [echo]\ntests: file://t.json\n")
    with caplog.at_level("WARNING", logger="assay.promptfoo"):
        (task,) = load_promptfoo(tmp_path / "promptfooconfig.yaml")
    assert len(task.dataset) == 2
    assert [r.getMessage().replace(str(tmp_path) + "/", "") for r in caplog.records] == [
        "t.json:4: t.json row 2.asert: not a key of promptfoo 0.123.1's test (did you mean 'assert'?); ignored "
        "(promptfoo 0.123.1 ignores this key too)"
    ]
