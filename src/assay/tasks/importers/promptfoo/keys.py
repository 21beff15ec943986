"""What assay does with every key of promptfoo 0.123.1's config schema: honoured with promptfoo's meaning, ignored
(output, sharing, UI: nothing a prompt or a score depends on), or refused at load naming the file, line and key. A key
the schema does not have is dropped by promptfoo's parse (its zod objects strip unknown keys), so assay runs the config
too, with a warning naming ``FILE:LINE: key.path`` on stderr (the ``assay.promptfoo`` logger): nothing is dropped
silently.

``tests/importers/promptfoo/test_reader_keys.py`` walks promptfoo's own schema (vendored as JSON Schema) and fails
when a key of any section is in none of the three lists, so a key of a new promptfoo version cannot slip through."""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from assay.tasks.importers.promptfoo.where import At

SCHEMA_VERSION = "0.123.1"
LOG = logging.getLogger("assay.promptfoo")  # load-time warnings (stderr: logging's last-resort handler, or the app's)
_warned: ContextVar[set[str] | None] = ContextVar("assay_promptfoo_warned", default=None)
HONOURED, IGNORED, REFUSED = "honoured", "ignored", "refused"
ROW_CHECKS = "passed to row_checks with promptfoo's meaning (see /tmp/pf/CONTRACT.md)"
_SHOWN = "output, sharing or UI only: no prompt, answer or score depends on it"
_RUNNER = "pacing or scheduling of promptfoo's runner; assay's runner has its own (--concurrency, --timeout)"


def _h(reason: str) -> tuple[str, str]:
    return HONOURED, reason


def _i(reason: str) -> tuple[str, str]:
    return IGNORED, reason


def _r(reason: str) -> tuple[str, str]:
    return REFUSED, reason


_TEST_COMMON: dict[str, tuple[str, str]] = {
    "vars": _h("the row's vars; list values expand into one test per combination, file:// values and globs read"),
    "provider": _r(
        "runs a test on another model than the config's providers; assay runs every row on the task's "
        "model (a grader for llm-rubric is options.provider)"
    ),
    "providers": _h("the providers a test runs on; refused unless it names every provider of the config"),
    "prompts": _h("the prompts a test runs with (labels, ids, 'Group:*'): the test is a row of those prompts' tasks"),
    "providerOutput": _r("a fixed output instead of a model's answer; use `assay run --predictions` for that"),
    "assert": _h("the test's assertions, after defaultTest's; " + ROW_CHECKS),
    "assertScoringFunction": _r("a custom scoring function replacing promptfoo's weighted mean is not run by assay"),
    "options": _h("see the 'options' section"),
    "threshold": _h("the test's pass threshold on the weighted mean (row field __threshold)"),
    "metadata": _h("the sample's metadata (row field __metadata; reports can group by it)"),
}

SECTIONS: dict[str, dict[str, tuple[str, str]]] = {
    "top": {
        "description": _h("the tasks' name"),
        "prompts": _h("one task per prompt"),
        "providers": _h("the model(s): one provider is the tasks' model, several run as a matrix"),
        "targets": _h("another name of providers (promptfoo rewrites it to providers); refused beside providers"),
        "tests": _h("the rows"),
        "scenarios": _h("each scenario's config × its tests, appended after the tests (promptfoo's order)"),
        "defaultTest": _h("merged into every test (a mapping or a file:// reference)"),
        "metadata": _h("every test's metadata when defaultTest has none (promptfoo's rule)"),
        "env": _h(
            "environment overrides of what the reader and the OpenAI provider read (see ENV_HONOURED); "
            "PROMPTFOO_* switches assay does not implement are refused, other providers' settings ignored"
        ),
        "evaluateOptions": _h("see the 'evaluateOptions' section"),
        "commandLineOptions": _h("see the 'commandLineOptions' section"),
        "assertionTemplates": _h("assertions named by $ref: '#/assertionTemplates/NAME' (resolved at load)"),
        "tags": _i("labels stored with promptfoo's eval record; " + _SHOWN),
        "outputPath": _i("where promptfoo writes its results; assay writes run folders (-o)"),
        "sharing": _i("promptfoo cloud sharing; " + _SHOWN),
        "writeLatestResults": _i("promptfoo's results database; " + _SHOWN),
        "tracing": _i("OpenTelemetry tracing of promptfoo's run (the trace-* assertions that read it are refused)"),
        "nunjucksFilters": _r("JavaScript filter functions for nunjucks templates; assay renders prompts with Jinja2"),
        "derivedMetrics": _r(
            "metrics computed from named scores (mathjs expressions or functions) are not implemented by assay"
        ),
        "extensions": _r("hooks (JavaScript/Python code run around the evaluation) are not run by assay"),
        "redteam": _r(
            "red-team test generation is promptfoo's own (run `promptfoo redteam generate` and read the "
            "generated config)"
        ),
        "plugins": _r("promptfoo rewrites it to redteam.plugins: red-team test generation"),
        "strategies": _r("promptfoo rewrites it to redteam.strategies: red-team test generation"),
    },
    "defaultTest": dict(_TEST_COMMON),
    "test": {
        "description": _h("the sample's description (row field __description, metadata.description)"),
        **_TEST_COMMON,
    },
    "test_file": {
        "path": _h("a file of tests (CSV, JSON, JSONL, YAML; a Python generator file.py:function)"),
        "config": _h("the argument of a Python test generator (ignored for data files, as by promptfoo)"),
    },
    "scenario": {
        "description": _i("the scenario's label in promptfoo's UI; its tests keep their own descriptions"),
        "config": _h("the scenario's settings, each one merged with each of its tests"),
        "tests": _h("the scenario's tests (inline or file:// references)"),
    },
    "assertion": {
        "type": _h("the assertion type; one row_checks cannot judge is refused at load"),
        "value": _h("the expected value; file:// python/javascript files are checked to exist at load; " + ROW_CHECKS),
        "config": _h(ROW_CHECKS),
        "threshold": _h(ROW_CHECKS),
        "weight": _h(ROW_CHECKS),
        "provider": _h("the grader of a model-graded assertion; " + ROW_CHECKS),
        "rubricPrompt": _h(ROW_CHECKS),
        "metric": _h("the named score; " + ROW_CHECKS),
        "transform": _h(
            "a transform of the output for this assertion (a file:// file is checked at load); " + ROW_CHECKS
        ),
        "contextTransform": _h(ROW_CHECKS),
    },
    "assert_set": {
        "type": _h("assert-set"),
        "assert": _h("the set's assertions; " + ROW_CHECKS),
        "weight": _h(ROW_CHECKS),
        "metric": _h(ROW_CHECKS),
        "threshold": _h(ROW_CHECKS),
        "config": _h(ROW_CHECKS),
    },
    "options": {
        "prefix": _h("text before the prompt (rendered with the vars, as part of the prompt)"),
        "suffix": _h("text after the prompt (rendered with the vars, as part of the prompt)"),
        "transform": _h("a transform of the output before the assertions; " + ROW_CHECKS),
        "postprocess": _h("promptfoo's older name of transform; " + ROW_CHECKS),
        "rubricPrompt": _h("the grading prompt of model-graded assertions; " + ROW_CHECKS),
        "provider": _h("the grader of model-graded assertions (defaultTest's is row_checks' judge); " + ROW_CHECKS),
        "factuality": _h("the scores of the factuality assertion's answers; " + ROW_CHECKS),
        "disableVarExpansion": _h("a list-valued var stays one value (no test per item)"),
        "disableDefaultAsserts": _h("defaultTest's assertions are left out of this test"),
        "disableConversationVar": _i("assay never sets promptfoo's _conversation var, so there is none to disable"),
        "runSerially": _i(_RUNNER),
        "transformVars": _r("a JavaScript/Python transform of the vars before rendering is not run by assay"),
        "storeOutputAs": _r(
            "storing an answer as a var of later tests makes tests depend on each other; assay "
            "judges rows independently"
        ),
        "repeat": _h("1 is accepted; more repeats of one test are refused (use assay's --repeats for all rows)"),
    },
    "provider": {
        "id": _h("openai:MODEL, openai:chat:MODEL (any OpenAI-compatible server) and echo; others are refused"),
        "label": _h("the matrix cell's name"),
        "config": _h("the OpenAI provider's settings (see OPENAI_CONFIG)"),
        "env": _h("this provider's environment overrides (as the top-level env)"),
        "prompts": _h("the prompts this provider runs; refused unless it names every prompt"),
        "transform": _r(
            "a transform of this provider's answers before every test's assertions is not run by "
            "assay (options.transform per test is)"
        ),
        "delay": _i(_RUNNER),
        "inputs": _r("multi-input red-team targets are not run by assay"),
        "callApi": _r("a JavaScript provider object; assay reads YAML configs"),
        "callEmbeddingApi": _r("a JavaScript provider object; assay reads YAML configs"),
        "callClassificationApi": _r("a JavaScript provider object; assay reads YAML configs"),
    },
    "prompt": {
        "raw": _h("the prompt text, or a file:// reference"),
        "id": _h("the prompt text or file:// reference when raw is absent; tests' prompts: filters match it"),
        "label": _h("the task's alias; tests' prompts: filters match it"),
        "display": _h("promptfoo's deprecated name of label"),
        "config": _h("the provider settings this prompt overrides (OPENAI_CONFIG), as the task's generation"),
        "template": _i("the unrendered prompt promptfoo shows in its UI; " + _SHOWN),
        "function": _r("a JavaScript prompt function; assay reads YAML configs"),
    },
    "evaluateOptions": {
        "cache": _i("promptfoo's response cache; assay has its own (--no-cache)"),
        "delay": _i(_RUNNER),
        "maxConcurrency": _i(_RUNNER),
        "timeoutMs": _i(_RUNNER),
        "maxEvalTimeMs": _i(_RUNNER),
        "interactiveProviders": _i(_RUNNER),
        "showProgressBar": _i(_SHOWN),
        "silent": _i(_SHOWN),
        "progressCallback": _i(_SHOWN),
        "repeat": _h("1 is accepted; more repeats are refused (use assay's --repeats)"),
        "filterRange": _r("a slice of the tests; use assay's --limit"),
        "generateSuggestions": _r("model-written prompt variants are promptfoo's own"),
        "suggestionsCount": _r("model-written prompt variants are promptfoo's own"),
        "isRedteam": _r("red-team evaluation is promptfoo's own"),
    },
    "commandLineOptions": {
        **{
            key: _i("a default of promptfoo's command line for its output or display; " + _SHOWN)
            for key in (
                "output",
                "verbose",
                "tableCellMaxLength",
                "write",
                "table",
                "share",
                "noShare",
                "progressBar",
                "watch",
                "cache",
                "tags",
            )
        },
        **{key: _i(_RUNNER) for key in ("maxConcurrency", "delay")},
        **{
            key: _r(
                "a default of promptfoo's command line that changes what runs; give assay the matching option instead"
            )
            for key in (
                "description",
                "prompts",
                "providers",
                "vars",
                "tests",
                "config",
                "assertions",
                "modelOutputs",
                "grader",
                "repeat",
                "filterErrorsOnly",
                "filterFailing",
                "filterFailingOnly",
                "filterFirstN",
                "filterMetadata",
                "filterPattern",
                "filterPrompts",
                "filterProviders",
                "filterRange",
                "filterSample",
                "filterSampleSeed",
                "filterTargets",
                "var",
                "generateSuggestions",
                "suggestionsCount",
                "promptPrefix",
                "promptSuffix",
                "retryErrors",
                "envPath",
                "extension",
            )
        },
    },
}

# the OpenAI provider's `config` keys (free-form in the schema; these are what promptfoo's OpenAI chat provider reads)
OPENAI_CONFIG: dict[str, tuple[str, str]] = {
    **{
        key: _h("sent with every request")
        for key in (
            "temperature",
            "max_tokens",
            "top_p",
            "seed",
            "stop",
            "presence_penalty",
            "frequency_penalty",
            "max_completion_tokens",
            "response_format",
            "reasoning_effort",
            "service_tier",
            "user",
            "metadata",
            "store",
            "verbosity",
            "prompt_cache_key",
            "prompt_cache_options",
            "prompt_cache_retention",
        )
    },
    "passthrough": _h("its keys are sent with every request"),
    "omitDefaults": _h("temperature 0 and max_tokens 1024 (promptfoo's defaults) are not sent"),
    "apiBaseUrl": _h("the server's base URL"),
    "apiHost": _h("the server's host (https://HOST/v1)"),
    "apiKeyEnvar": _h("the environment variable that holds the API key"),
    "headers": _h("HTTP headers sent with every request"),
    "organization": _h("the OpenAI-Organization header"),
    **{
        key: _h("USD per token of this model, for the cost assertion (row_checks' prices)")
        for key in ("cost", "inputCost", "outputCost")
    },
    "apiKeyRequired": _i("assay asks for a key only for a server other than this machine"),
    "maxRetries": _i(_RUNNER),
    "showThinking": _h("false is assay's behaviour (a reasoning model's thinking is never scored); true is refused"),
    "useDefaultApiKey": _r("assay reads the key from OPENAI_API_KEY or the variable apiKeyEnvar names"),
    "apiKey": _r("a key written in the config; put it in an environment variable and name it with apiKeyEnvar"),
    **{
        key: _h(
            "sent with every request (a file:// list read at load); tools and functions also reach row_checks for "
            "the is-valid-openai-*-call assertions"
        )
        for key in ("tools", "functions", "function_call", "tool_choice", "parallel_tool_calls")
    },
    **{
        key: _r(
            "promptfoo runs tool calls through callbacks or MCP servers and scores their results; assay scores the "
            "model's answer"
        )
        for key in ("functionToolCallbacks", "mcp", "tool_resources")
    },
    **{
        key: _r("audio and reasoning-summary modes are not read by assay")
        for key in ("modalities", "audio", "reasoning")
    },
}

# environment variables (config `env`, a provider's `env`, or the process environment) the reader honours
ENV_HONOURED = {
    "OPENAI_BASE_URL": "apiBaseUrl", "OPENAI_API_BASE_URL": "apiBaseUrl", "OPENAI_API_HOST": "apiHost",
    "OPENAI_ORGANIZATION": "organization", "OPENAI_TEMPERATURE": "temperature", "OPENAI_MAX_TOKENS": "max_tokens",
    "OPENAI_MAX_COMPLETION_TOKENS": "max_completion_tokens", "OPENAI_TOP_P": "top_p",
    "OPENAI_PRESENCE_PENALTY": "presence_penalty", "OPENAI_FREQUENCY_PENALTY": "frequency_penalty",
    "PROMPTFOO_DISABLE_VAR_EXPANSION": "list-valued vars are not expanded",
    "PROMPTFOO_CSV_DELIMITER": "the delimiter of CSV test files",
    "PROMPTFOO_PROMPT_SEPARATOR": "the line that splits a prompt file (default ---)",
    "PROMPTFOO_DISABLE_TELEMETRY": "(nothing is sent by assay)",
    "PROMPTFOO_CACHE_ENABLED": "(assay's cache is its own)",
}  # fmt: skip


ENV_REFUSED = {
    "OPENAI_API_KEY": "a key written in the config; set OPENAI_API_KEY in the environment (or name another "
    "variable with the provider's apiKeyEnvar)",
}


def env_decision(name: str) -> tuple[str, str]:
    """What the reader does with an environment override of ``name`` in a config's ``env``."""
    if name in ENV_REFUSED:
        return _r(ENV_REFUSED[name])
    if name in ENV_HONOURED:
        return _h(ENV_HONOURED[name])
    if name.startswith("PROMPTFOO_"):
        return _r("a promptfoo switch assay does not implement")
    return _i("read only by providers or features assay does not run (their use is refused where it appears)")


def decision(section: str, key: str) -> tuple[str, str] | None:
    """(HONOURED|IGNORED|REFUSED, reason) of ``key`` in ``section``; None for a key promptfoo does not know."""
    return SECTIONS[section].get(key)


@contextmanager
def one_warning_each() -> Iterator[None]:
    """Within one config's reading, each warning is given once (a mapping may be checked more than once)."""
    token = _warned.set(set())
    try:
        yield
    finally:
        _warned.reset(token)


def warn(message: str) -> None:
    """A load-time warning on the ``assay.promptfoo`` logger (stderr), once per config read."""
    seen = _warned.get()
    if seen is not None:
        if message in seen:
            return
        seen.add(message)
    LOG.warning("%s", message)


def check_keys(
    mapping: Any,
    section: str,
    at: At,
    *,
    table: dict[str, tuple[str, str]] | None = None,
    allow: set[str] | frozenset[str] = frozenset(),
) -> None:
    """Refuse a refused key of ``mapping`` (a ``section`` of a config at ``at``), naming file:line; a key that is
    not in promptfoo's schema for the section is ignored with a warning naming file:line (promptfoo's parse drops
    it, and so does this: the key is deleted from ``mapping``). With ``table`` (a free-form mapping of the schema,
    e.g. a provider's config, whose keys the reader knows only from promptfoo's code), an unknown key is refused.
    Unknown keys in ``allow`` are accepted silently (a top-level key that only holds ``$ref`` targets)."""
    if not isinstance(mapping, dict):
        return
    known = SECTIONS[section] if table is None else table
    dropped = []
    for key in mapping:
        found = known.get(key) if isinstance(key, str) else None
        if found is None and key in allow:
            continue
        if found is None:
            close = difflib.get_close_matches(str(key), list(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            what = f"not a key of promptfoo {SCHEMA_VERSION}'s {section.replace('_', ' ')}{hint}"
            if table is None:
                warn(f"{at.key(mapping, key)}: {what}; ignored (promptfoo {SCHEMA_VERSION} ignores this key too)")
                dropped.append(key)
                continue
            raise at.key(mapping, key).error(f"{what}; known: " + ", ".join(sorted(known)))
        if found[0] == REFUSED:
            raise at.key(mapping, key).error(f"not supported by assay's promptfoo reader: {found[1]}")
    for key in dropped:  # as promptfoo's parse strips it: nothing downstream reads it
        del mapping[key]
