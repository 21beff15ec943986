"""The built-in evaluators as a Python user imports them: classes and typed factories beside the registry."""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from assay import evaluators
from assay.errors import ConfigError
from assay.evaluators import registry
from assay.reference import factories

ROOT = Path(__file__).resolve().parents[2]


def test_the_generated_factories_are_current():
    """Fails when an evaluator's options, name or module changed without ``python -m assay.reference.factories``."""
    stale = [str(path.relative_to(ROOT)) for path, text in factories.expected().items() if path.read_text() != text]
    assert stale == [], f"regenerate with `python -m assay.reference.factories`: {stale} are stale"


def test_every_builtin_is_importable_as_its_class_and_a_factory():
    built = {name for name in registry._BUILTIN_MODULES if name not in factories.REGISTRY_ONLY}
    assert set(factories.REGISTRY_ONLY) <= set(registry._BUILTIN_MODULES)
    for name in built:
        cls = registry.get_class(name)
        assert getattr(evaluators, cls.__name__) is cls
        factory = getattr(evaluators, name)
        assert name in evaluators.__all__ and cls.__name__ in evaluators.__all__
        assert list(inspect.signature(factory).parameters) == list(cls.Options.model_fields)
        assert factory.__doc__ and cls.__name__ in factory.__doc__


def test_a_factory_builds_what_the_registry_builds():
    from assay.evaluators import ExactMatch, exact_match, fuzzy_match, regex

    built = exact_match(ignore_case=True, regexes_to_ignore=["^A: "])
    assert type(built) is ExactMatch
    assert built == ExactMatch(ignore_case=True, regexes_to_ignore=["^A: "])
    assert built == evaluators.get("exact_match", ignore_case=True, regexes_to_ignore=["^A: "])
    assert built.evaluate("a: PARIS", "Paris").passed is False and built.evaluate("A: PARIS", "paris").passed
    assert fuzzy_match() == evaluators.get("fuzzy_match")
    assert regex(pattern=r"\d+").to_config() == {"name": "regex", "pattern": r"\d+"}


def test_a_factory_passes_on_only_the_options_given():
    """tool_usage reads which options were set: ``order="any"`` beside expected_calls must count as set, even though
    it is the default."""
    from assay.evaluators import tool_usage

    calls = [{"name": "search", "arguments": {"q": "x"}}]
    built = tool_usage(expected_calls=calls, order="any")
    assert built.options.model_fields_set == {"expected_calls", "order"}
    assert built == evaluators.get("tool_usage", expected_calls=calls, order="any")


def test_a_factory_refuses_what_a_function_would():
    from assay.evaluators import exact_match, regex

    with pytest.raises(TypeError, match=r"exact_match\(\): got an unexpected keyword argument 'ignore_cse'"):
        exact_match(ignore_cse=True)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="too many positional arguments"):
        exact_match(True)  # type: ignore[misc]
    with pytest.raises(TypeError, match="missing a required argument: 'pattern'"):
        regex()  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match="option 'ignore_case'"):
        exact_match(ignore_case="x")  # type: ignore[arg-type]


def test_importing_the_evaluators_loads_none_of_them():
    code = (
        "import sys, assay.evaluators as e\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('assay.evaluators.'))\n"
        "assert loaded == ['assay.evaluators.base', 'assay.evaluators.registry'], loaded\n"
        "e.ExactMatch\n"
        "assert 'assay.evaluators._factories' not in sys.modules and 'assay.evaluators.judge' not in sys.modules\n"
        "e.exact_match\n"
        "assert 'assay.evaluators._factories' in sys.modules and 'assay.evaluators.judge' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


@pytest.mark.timeout(300)
def test_a_type_checker_checks_a_factorys_keywords(tmp_path: Path):
    """What a user's type-checked project sees (py.typed, the names re-exported, the options typed), by mypy --strict
    on a small user file; the cache outlives the test, so only the first run checks assay itself (about 20 s)."""
    user = tmp_path / "user.py"
    user.write_text(
        textwrap.dedent(
            """
            from assay.evaluators import ExactMatch, exact_match

            good: ExactMatch = exact_match(ignore_case=True)
            misspelt = exact_match(ignore_cse=True)
            mistyped = exact_match(ignore_case="x")
            """
        )
    )
    cache = ROOT / ".mypy_cache" / "user-project"
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--cache-dir", str(cache), str(user)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=280,
    )
    errors = sorted(
        line.split(": error: ")[0].rpartition(":")[2] for line in result.stdout.splitlines() if ": error: " in line
    )
    assert errors == ["5", "6"], result.stdout + result.stderr
    assert 'Unexpected keyword argument "ignore_cse" for "exact_match"' in result.stdout
    assert 'Argument "ignore_case" to "exact_match" has incompatible type "str"; expected "bool"' in result.stdout
