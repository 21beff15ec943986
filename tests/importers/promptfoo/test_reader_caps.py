"""Bad input is refused fast, before anything is built: a config expanding past the cap of tests (default 100,000,
raised by load_promptfoo(max_tests=) or ASSAY_PROMPTFOO_MAX_TESTS) with the count, and YAML aliases expanding a
document past 100,000 nodes with the line of the alias."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from assay.errors import ConfigError
from assay.tasks.importers.promptfoo import load_promptfoo
from assay.tasks.importers.promptfoo.reader import read_config

SIX = "prompts: ['{{a}}{{b}}{{c}}{{d}}{{e}}{{f}}']\nproviders: [echo]\ndefaultTest:\n  vars:\n" + (
    "    a: &x [x0, x1, x2, x3, x4, x5, x6, x7, x8, x9]\n    b: *x\n    c: *x\n    d: *x\n    e: *x\n    f: *x\n"
)
NESTED = """\
prompts: ['{{a}}']
providers: [echo]
defaultTest:
  vars:
    a: &a [x, x, x, x, x, x, x, x, x, x]
    b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
    c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
    d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
    e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
tests:
  - assert: [{type: contains, value: x}]
"""


def test_a_million_combinations_are_refused_with_the_count_in_under_a_second(tmp_path: Path) -> None:
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(SIX + "tests:\n  - assert: [{type: contains, value: x}]\n")
    start = time.perf_counter()
    with pytest.raises(ConfigError) as err:
        read_config(path)
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, elapsed
    message = str(err.value)
    assert message.startswith(f"{path}:1: tests: the config expands to 1,000,000 tests")
    assert "more than the cap of 100,000" in message and "a (10), b (10), c (10), d (10), e (10), f (10)" in message


def test_tests_and_scenarios_count_together(tmp_path: Path) -> None:
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(
        "prompts: ['{{a}}{{b}}']\nproviders: [echo]\ntests:\n  - vars: {a: [1, 2], b: [x, y, z]}\n"
        "  - vars: {a: [p, q], b: [x, y, z]}\n"
        "scenarios:\n  - config: [{vars: {b: 1}}, {vars: {b: 2}}]\n"
        "    tests: [{vars: {a: [u, v, w]}}, {vars: {a: 1}}]\n"
    )
    assert len(read_config(path).tests) == 3 + 6 + 2 * 3 + 2 * 1  # a list of numbers is one value
    with pytest.raises(ConfigError, match=r"expands to 17 tests .*more than the cap of 16"):
        read_config(path, max_tests=16)


def test_the_cap_is_raised_by_keyword_or_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text("prompts: ['{{a}}{{b}}']\nproviders: [echo]\ntests:\n  - vars: {a: [a, b, c], b: [x, y]}\n")
    with pytest.raises(ConfigError, match="expands to 6 tests"):
        load_promptfoo(path, max_tests=5)
    monkeypatch.setenv("ASSAY_PROMPTFOO_MAX_TESTS", "5")
    with pytest.raises(ConfigError, match="cap of 5"):
        load_promptfoo(path)
    assert len(load_promptfoo(path, max_tests=6)[0].samples()) == 6  # the keyword wins
    monkeypatch.setenv("ASSAY_PROMPTFOO_MAX_TESTS", "many")
    with pytest.raises(ConfigError, match="ASSAY_PROMPTFOO_MAX_TESTS='many' is not a whole number"):
        load_promptfoo(path)


def test_nested_aliases_are_bounded_naming_the_alias(tmp_path: Path) -> None:
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(NESTED)
    assert len(NESTED) < 400
    start = time.perf_counter()
    with pytest.raises(ConfigError) as err:
        read_config(path)
    assert time.perf_counter() - start < 1.0
    assert str(err.value).startswith(f"{path}:9: YAML aliases expand this document by more than 100,000 nodes")


def test_an_alias_inside_itself_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text("prompts: [hi]\nproviders: [echo]\ndefaultTest:\n  vars: &v {a: *v}\n")
    with pytest.raises(ConfigError, match=r"promptfooconfig.yaml:4: a YAML alias refers to its own anchor"):
        read_config(path)
