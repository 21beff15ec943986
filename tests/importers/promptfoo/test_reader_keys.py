"""Every key of promptfoo's config schema (the version the reader claims, vendored as JSON Schema) is honoured,
ignored or refused by name: a key of a new promptfoo version fails here until someone decides what it means."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from assay.errors import ConfigError
from assay.tasks.importers.promptfoo.keys import HONOURED, IGNORED, REFUSED, SCHEMA_VERSION, SECTIONS
from assay.tasks.importers.promptfoo.reader import read_config

SCHEMA = Path(__file__).parent / f"config-schema-{SCHEMA_VERSION}.json"


def _objects(node: Any) -> list[dict[str, Any]]:
    """The object schemas (with properties) a schema node may be: itself, or its anyOf / items variants."""
    if not isinstance(node, dict):
        return []
    out = [node] if "properties" in node else []
    for variant in node.get("anyOf", []):
        out += _objects(variant)
    if "items" in node:
        out += _objects(node["items"])
    if isinstance(node.get("additionalProperties"), dict):  # {id: ProviderOptions}, the map form of a provider
        out += _objects(node["additionalProperties"])
    return out


def _with(node: Any, key: str) -> list[dict[str, Any]]:
    return [o for o in _objects(node) if key in o["properties"]]


def schema_sections() -> dict[str, set[str]]:
    """Each section's keys as promptfoo's schema has them (several schema places may feed one section)."""
    top = json.loads(SCHEMA.read_text())
    props = top["properties"]
    tests = _with(props["tests"], "vars")
    test = tests[0]["properties"]
    scenario = _with(props["scenarios"], "config")[0]["properties"]
    assertions = _objects(test["assert"])
    places: dict[str, list[dict[str, Any]]] = {
        "top": [top],
        "defaultTest": _with(props["defaultTest"], "vars"),
        "test": tests + _with(scenario["config"], "vars") + _with(scenario["tests"], "vars"),
        "test_file": _with(props["tests"], "path"),
        "scenario": [{"properties": scenario}],
        "assertion": [a for a in assertions if "value" in a["properties"]],
        "assert_set": [a for a in assertions if "assert" in a["properties"]],
        "options": _objects(test["options"]),
        "provider": _with(props["providers"], "id") + _with(test["provider"], "id"),
        "prompt": [p for p in _objects(props["prompts"]) if "id" in p["properties"] or "raw" in p["properties"]],
        "evaluateOptions": [props["evaluateOptions"]],
        "commandLineOptions": [props["commandLineOptions"]],
    }
    out: dict[str, set[str]] = {}
    for section, objects in places.items():
        assert objects, f"the schema has no {section!r} section where the test looks: update the test"
        out[section] = {key for o in objects for key in o["properties"]}
    return out


def test_every_schema_key_is_honoured_ignored_or_refused() -> None:
    missing = {
        section: sorted(keys - set(SECTIONS[section]))
        for section, keys in schema_sections().items()
        if keys - set(SECTIONS[section])
    }
    assert not missing, f"keys of promptfoo {SCHEMA_VERSION}'s schema with no decision in keys.py: {missing}"
    for section, table in SECTIONS.items():
        for key, (decision, reason) in table.items():
            assert decision in (HONOURED, IGNORED, REFUSED) and reason, (section, key)


def test_the_schema_sections_are_found() -> None:
    sections = schema_sections()
    assert {"prompts", "providers", "tests", "scenarios", "defaultTest", "redteam"} <= sections["top"]
    assert {"prefix", "suffix", "transform", "provider", "repeat"} <= sections["options"]
    assert {"type", "value", "contextTransform"} <= sections["assertion"]
    assert {"callApi", "inputs", "env"} <= sections["provider"]


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "line", "key"),
    [
        ("prompts: [p]\nproviders: [echo]\nderivedMetrics: []\n", 3, "derivedMetrics"),
        ("prompts: [p]\nproviders: [echo]\nredteam: {}\n", 3, "redteam"),
        ("prompts: [p]\nproviders: [echo]\nnunjucksFilters: {}\n", 3, "nunjucksFilters"),
        ("prompts: [p]\nproviders: [echo]\ntests:\n  - vars: {a: 1}\n    provider: echo\n", 5, "tests[0].provider"),
        (
            "prompts: [p]\nproviders: [echo]\ndefaultTest:\n  options:\n    transformVars: x\n",
            5,
            "defaultTest.options.transformVars",
        ),
        (
            "prompts: [p]\nproviders:\n  - id: echo\n    transform: output.trim()\n",
            4,
            "providers[0].transform",
        ),
        ("prompts: [p]\nproviders: [echo]\nevaluateOptions: {filterRange: '0:2'}\n", 3, "evaluateOptions.filterRange"),
    ],
)
def test_a_refused_key_names_file_line_and_key(tmp_path: Path, text: str, line: int, key: str) -> None:
    path = _config(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        read_config(path)
    assert str(err.value).startswith(f"{path}:{line}: {key}: not supported by assay's promptfoo reader: ")


def test_an_unknown_key_is_ignored_with_a_warning_naming_file_line_and_key(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """promptfoo's zod schemas strip keys they do not know, so promptfoo runs such a config: so does assay, saying
    so on stderr (issue 40: nothing silently dropped), once per key, with a suggestion for a typo."""
    path = _config(
        tmp_path,
        "prompts: [p]\nproviders: [echo]\noutputs: x\ntests:\n  - vars: {a: 1}\n    asert: []\n    type: q\n"
        "    assert:\n      - type: equals\n        value: p\n        description: d\n",
    )
    with caplog.at_level(logging.WARNING, logger="assay.promptfoo"):
        config = read_config(path)
    assert config.tests[0].checks == [{"type": "equals", "value": "p"}]  # dropped, as promptfoo's parse drops it
    messages = [r.getMessage() for r in caplog.records if r.name == "assay.promptfoo"]
    ignored = "ignored (promptfoo 0.123.1 ignores this key too)"
    assert messages == [
        f"{path}:3: outputs: not a key of promptfoo 0.123.1's top (did you mean 'outputPath'?); {ignored}",
        f"{path}:6: tests[0].asert: not a key of promptfoo 0.123.1's test (did you mean 'assert'?); {ignored}",
        f"{path}:7: tests[0].type: not a key of promptfoo 0.123.1's test; {ignored}",
        f"{path}:11: tests[0].assert[0].description: not a key of promptfoo 0.123.1's assertion; {ignored}",
    ], messages


def test_an_unknown_key_of_a_free_form_mapping_is_still_refused(tmp_path: Path) -> None:
    """A provider's config is free-form in promptfoo's schema (its provider reads it): a key the OpenAI provider
    does not read is refused, not guessed at."""
    path = _config(tmp_path, "prompts: [p]\nproviders:\n  - id: openai:gpt-4o\n    config: {temprature: 0}\n")
    with pytest.raises(ConfigError, match=r":4: providers\[0\]\.config\.temprature: not a key of promptfoo"):
        read_config(path)


def test_an_unknown_key_warning_reaches_stderr_from_the_cli(tmp_path: Path) -> None:
    """`assay run` on such a config: the warning is on stderr (logging's last-resort handler), the run goes on."""
    import subprocess
    import sys

    path = _config(tmp_path, "prompts: ['say {{a}}']\nproviders: [echo]\ntests:\n  - vars: {a: 1}\n    type: q\n")
    code = "from assay.tasks.importers.promptfoo import load_promptfoo; import sys; load_promptfoo(sys.argv[1])"
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"{path}:5: tests[0].type: not a key of promptfoo 0.123.1's test; ignored" in proc.stderr


def test_ignored_keys_are_accepted(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        "prompts: [p]\nproviders: [echo]\noutputPath: out.json\nsharing: false\nwriteLatestResults: true\n"
        "tags: {team: a}\ntracing: {enabled: true}\nevaluateOptions: {maxConcurrency: 2, cache: false}\n"
        "tests:\n  - vars: {a: 1}\n",
    )
    assert len(read_config(path).tests) == 1


def test_the_docs_name_every_refused_key() -> None:
    from assay.tasks.importers.promptfoo.keys import OPENAI_CONFIG

    docs = Path(__file__).parents[3] / "docs" / "how-to" / "import-tasks.md"
    section = docs.read_text().split("## promptfoo configs", 1)[1]
    tables = {name: table for name, table in SECTIONS.items() if name != "commandLineOptions"}
    refused = {key for table in [*tables.values(), OPENAI_CONFIG] for key, (d, _) in table.items() if d == REFUSED}
    missing = sorted(key for key in refused if f"`{key}`" not in section)
    assert not missing, f"refused keys the promptfoo section of the docs does not name: {missing}"
