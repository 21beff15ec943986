"""Read a promptfoo config as promptfoo 0.123.1 reads it, and check everything at load: every key honoured with
promptfoo's meaning or refused naming ``FILE:LINE: key.path`` (keys.py), ``$ref``s resolved, ``{{ env.X }}``
rendered, file references found, the number of tests counted before anything is built and refused past
``max_tests``. What promptfoo does at run time that assay cannot do is refused here, never dropped."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import ConfigError
from assay.tasks.importers.promptfoo.asserts import Checker
from assay.tasks.importers.promptfoo.envs import check_env, config_env, render_env_in
from assay.tasks.importers.promptfoo.files import FILE, Files
from assay.tasks.importers.promptfoo.keys import check_keys, one_warning_each
from assay.tasks.importers.promptfoo.prompts import Prompt, read_prompts
from assay.tasks.importers.promptfoo.providers import Provider, check_grader, grader, read_providers, ref_matches
from assay.tasks.importers.promptfoo.refs import REF, resolve_refs
from assay.tasks.importers.promptfoo.testcases import (
    MAX_TESTS,
    Prepared,
    TestCase,
    check_count,
    expand,
    prepare,
    scenario_tests,
)
from assay.tasks.importers.promptfoo.testfiles import RawTest, TestFiles
from assay.tasks.importers.promptfoo.where import At
from assay.tasks.importers.promptfoo.yaml12 import LineDict, load_yaml12

MAX_TESTS_ENV = "ASSAY_PROMPTFOO_MAX_TESTS"


@dataclass
class PromptfooConfig:
    """What a promptfoo config holds that assay runs."""

    path: Path
    description: str | None
    prompts: list[Prompt]
    providers: list[Provider]
    tests: list[TestCase]
    judge: dict[str, Any] | None = None  # defaultTest.options.provider: the grader of model-graded assertions
    env: dict[str, str] = field(default_factory=dict)  # the process environment under the config's env
    env_overrides: dict[str, str] = field(default_factory=dict)  # the config's env alone (rendered)


def max_tests_from(value: int | None) -> int:
    """The cap of tests: the keyword, else ASSAY_PROMPTFOO_MAX_TESTS, else 100,000."""
    if value is None:
        text = os.environ.get(MAX_TESTS_ENV)
        if not text:
            return MAX_TESTS
        try:
            value = int(text.replace("_", ""))
        except ValueError:
            raise ConfigError(f"{MAX_TESTS_ENV}={text!r} is not a whole number") from None
    if value < 1:
        raise ConfigError(f"max_tests must be at least 1, got {value}")
    return value


def read_config(path: str | Path, *, max_tests: int | None = None) -> PromptfooConfig:
    """A promptfoo config file, read and checked; every problem names the file, line and key (a key promptfoo's
    schema does not have is ignored, as promptfoo ignores it, with a warning naming it: keys.check_keys)."""
    with one_warning_each():
        return _read_config(path, max_tests=max_tests)


def _read_config(path: str | Path, *, max_tests: int | None = None) -> PromptfooConfig:
    p = Path(path)
    cap = max_tests_from(max_tests)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{p}: cannot read the promptfoo config: {err}") from None
    raw = load_yaml12(text, str(p))
    at = At(str(p), 1)
    if not isinstance(raw, dict):
        raise at.error("a promptfoo config is a mapping (prompts, providers, tests, …)")
    _check_top(raw, at)
    files = Files(p.resolve().parent)
    raw = resolve_refs(raw, p, files)
    overrides = check_env(raw.get("env"), at.key(raw, "env"))
    env = config_env(overrides)
    raw = render_env_in(raw, env)
    files = Files(files.base, env)
    if "providers" in raw and "targets" in raw:
        raise at.key(raw, "targets").error("give providers or targets, not both (promptfoo refuses both too)")
    providers_key = "targets" if "targets" in raw else "providers"
    for section in ("evaluateOptions", "commandLineOptions"):
        check_keys(raw.get(section), section, at.key(raw, section))
    repeat = (raw.get("evaluateOptions") or {}).get("repeat")
    if repeat not in (None, 1):
        raise (
            at.key(raw, "evaluateOptions")
            .key(raw["evaluateOptions"], "repeat")
            .error(f"not supported by assay's promptfoo reader: repeat {repeat!r} (use assay's --repeats)")
        )
    checker = Checker(files, lambda provider, where: check_grader(provider, where, env, files))
    default, default_at = _default_test(raw, at, files)
    for key, check in (("options", checker.options), ("assert", checker.assertions)):  # once, named as defaultTest's
        if default.get(key) is not None:
            default[key] = check(default[key], default_at.key(default, key))
    separator = env.get("PROMPTFOO_PROMPT_SEPARATOR") or "---"
    # promptfoo's readConfig: a config without prompts has the one prompt '{{prompt}}' (a var of each test)
    prompts = read_prompts(raw.get("prompts", ["{{prompt}}"]), at.key(raw, "prompts"), files, separator)
    if providers_key not in raw:
        raise at.error("a promptfoo config needs providers (or targets): promptfoo refuses one without them too")
    providers = read_providers(raw[providers_key], at.key(raw, providers_key), env, files)
    for provider in providers:
        _check_prompt_filter(provider.prompts, prompts, provider.at.named(f"{provider.at.path}.prompts"), "provider")
    reader = TestFiles(files)
    tests = reader.read(raw.get("tests"), at.key(raw, "tests"))
    scenarios = raw.get("scenarios")
    if isinstance(scenarios, str):
        loaded = files.load(files.paths(scenarios, at.key(raw, "scenarios"))[0], at.key(raw, "scenarios"))
        scenarios = loaded if isinstance(loaded, list) else [loaded]
    if not tests and scenarios is None:
        tests = [RawTest(LineDict(source=str(p), line=default_at.line), default_at.named("defaultTest"), files.base)]
    if scenarios:
        tests += scenario_tests(scenarios, default, at.key(raw, "scenarios"), reader.read)
    prepared: list[Prepared] = []
    for test in tests:  # counted before anything is built or checked further
        check_keys(test.data, "test", test.at)
        prepared.append(prepare(test, default, files, env))
    check_count(prepared, cap, at.named("tests"))
    for item in prepared:
        merged, t_at = item.merged, item.at
        merged["options"] = checker.options(merged["options"], t_at.key(merged, "options"))
        merged["assert"] = checker.assertions(merged.get("assert"), t_at.key(merged, "assert"))
        _check_prompt_filter(merged.get("prompts"), prompts, t_at.key(merged, "prompts"), "test")
        _check_provider_filter(merged.get("providers"), providers, t_at.key(merged, "providers"))
    judge = None
    if (default.get("options") or {}).get("provider") is not None:
        options = default["options"]
        if not (
            isinstance(options["provider"], dict)
            and "id" not in options["provider"]
            and "text" not in options["provider"]
        ):  # an embedding-only grader is not the judge
            judge = grader(options["provider"], default_at.key(options, "provider"), env, files)
    return PromptfooConfig(
        path=p,
        description=raw.get("description"),
        prompts=prompts,
        providers=providers,
        tests=[case for item in prepared for case in expand(item, files)],
        judge=judge,
        env=env,
        env_overrides={k: env[k] for k in overrides},
    )


def _check_top(raw: dict[str, Any], at: At) -> None:
    """Top-level keys: promptfoo's, or a key only ``$ref``s point into (a holder of templates)."""
    check_keys(raw, "top", at, allow=_ref_roots(raw))


def _ref_roots(value: Any) -> set[str]:
    """The top-level keys local ``$ref``s (``#/KEY/…``) point into."""
    out: set[str] = set()
    if isinstance(value, dict):
        ref = value.get(REF)
        if isinstance(ref, str) and ref.startswith("#/"):
            out.add(ref[2:].split("/", 1)[0])
        for item in value.values():
            out |= _ref_roots(item)
    elif isinstance(value, list):
        for item in value:
            out |= _ref_roots(item)
    return out


def _default_test(raw: dict[str, Any], at: At, files: Files) -> tuple[dict[str, Any], At]:
    """defaultTest (a mapping or a ``file://`` reference), with the config's metadata when it has none."""
    default_at = at.key(raw, "defaultTest")
    default = raw.get("defaultTest")
    if isinstance(default, str):
        if not default.startswith(FILE):
            raise default_at.error("a defaultTest string must start with file:// (promptfoo refuses it too)")
        path = files.paths(default, default_at)[0]
        default = files.load(path, default_at)
        default_at = At.of(default, "defaultTest", default_at)
    if default is None:
        default = LineDict(source=at.file, line=None)
    if not isinstance(default, dict):
        raise default_at.error(f"defaultTest is a mapping (vars, assert, options, …), got {default!r}")
    check_keys(default, "defaultTest", default_at)
    default = TestFiles(files).test(default, default_at, files.base, default=True).data
    if "metadata" not in default and raw.get("metadata") is not None:
        lines = getattr(default, "lines", {})
        default = LineDict(default, source=getattr(default, "source", at.file), line=getattr(default, "line", None))
        default.lines.update(lines)
        default["metadata"] = raw["metadata"]
    if not isinstance(default.get("assert") or [], list):
        raise default_at.key(default, "assert").error("defaultTest.assert is a list of assertions")
    return default, default_at


def _check_prompt_filter(refs: Any, prompts: list[Prompt], at: At, owner: str) -> None:
    if refs is None:
        return
    if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
        raise at.error(f"prompts is a list of prompt labels or ids, got {refs!r}")
    if owner == "provider" and not all(any(ref_matches(r, p.label, p.id) for r in refs) for p in prompts):
        raise at.error(
            "not supported by assay's promptfoo reader: a provider that runs only some of the prompts (every "
            "provider runs every prompt's task in assay's matrix)"
        )
    if owner == "test" and not any(ref_matches(r, p.label, p.id) for r in refs for p in prompts):
        raise at.error(f"{refs!r} matches no prompt (labels: {', '.join(p.alias for p in prompts)})")


def _check_provider_filter(refs: Any, providers: list[Provider], at: At) -> None:
    if refs is None:
        return
    if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
        raise at.error(f"providers is a list of provider labels or ids, got {refs!r}")
    if not all(any(ref_matches(r, p.label, p.id) for r in refs) for p in providers):
        raise at.error(
            "not supported by assay's promptfoo reader: a test that runs on only some of the providers (every row "
            "runs on every model of assay's matrix)"
        )
