"""A read promptfoo config as assay task configs: one task per prompt over its tests (a test's ``prompts:`` filter
picks the tasks it is a row of), each test a row with its vars and the reserved fields of /tmp/pf/CONTRACT.md
(judged by ``row_checks``), the first provider as the tasks' model; several providers are also listed under
``models:``, which ``assay run`` runs as a matrix (prompts × providers, promptfoo's view). A test's
``options.prefix``/``suffix`` become part of its prompt's template, rendered with the vars as promptfoo renders
them; its metadata becomes the sample's metadata."""

from __future__ import annotations

import re
from typing import Any

from assay.errors import ConfigError
from assay.tasks.importers.promptfoo.keys import OPENAI_CONFIG, check_keys
from assay.tasks.importers.promptfoo.prompts import Prompt
from assay.tasks.importers.promptfoo.providers import Provider, model_spec, provider_env, ref_matches
from assay.tasks.importers.promptfoo.reader import PromptfooConfig
from assay.tasks.importers.promptfoo.testcases import TestCase
from assay.tasks.importers.promptfoo.yaml12 import plain

# reserved row fields (promptfoo reserves the ``__`` prefix too, so no var is shadowed)
ID, CHECKS, THRESHOLD, DESCRIPTION, OPTIONS, METADATA = (
    "__id", "__assert", "__threshold", "__description", "__options", "__metadata"
)  # fmt: skip
AFFIX = "__affix"  # which prefix/suffix pair a row's prompt has, when a task's rows differ in them
TEMPLATE_NAMES = ("doc", "fewshot", "metadata")  # names assay's templates give their own meaning
PROMPT_SETTINGS = (
    "temperature", "max_tokens", "top_p", "seed", "stop", "presence_penalty", "frequency_penalty",
    "max_completion_tokens", "response_format", "reasoning_effort", "service_tier", "user", "metadata", "store",
    "verbosity", "passthrough", "prompt_cache_key", "prompt_cache_options", "prompt_cache_retention",
)  # fmt: skip


__all__ = ["model_spec", "task_configs"]  # model_spec: row_checks builds its graders with it (providers.py)


def _name(text: str) -> str:
    return re.sub(r"[^\w.\-]+", "-", text).strip("-.") or "promptfoo"


def _rows(config: PromptfooConfig) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """Every test as a row, and the distinct (prefix, suffix) pairs of their prompts (a row's AFFIX indexes them
    when there are several)."""
    rows: list[dict[str, Any]] = []
    pairs: dict[tuple[str, str], int] = {}
    for i, test in enumerate(config.tests):
        for name in test.vars:
            if str(name).startswith("__") or name in TEMPLATE_NAMES:
                where = (
                    "assay reserves the __ prefix (promptfoo too)"
                    if str(name).startswith("__")
                    else (
                        "assay's templates give it their own meaning (the row, the few-shot examples, the sample's "
                        "metadata); rename the var"
                    )
                )
                raise test.at.error(f"var {name!r}: {where}")
        row: dict[str, Any] = {**test.vars, ID: f"test-{i + 1}", CHECKS: test.checks}  # plain data (expand)
        if test.threshold is not None:
            row[THRESHOLD] = test.threshold
        row[DESCRIPTION] = test.description or ""
        row[OPTIONS] = test.options
        row[METADATA] = test.metadata
        pair = (str(test.options.get("prefix") or ""), str(test.options.get("suffix") or ""))
        row[AFFIX] = pairs.setdefault(pair, len(pairs))
        rows.append(row)
    ordered = sorted(pairs, key=pairs.__getitem__)
    if len(ordered) <= 1:
        for row in rows:
            del row[AFFIX]
    return rows, ordered


def _metadata_fields(rows: list[dict[str, Any]]) -> dict[str, str]:
    """The sample's metadata: the description and every metadata key (a row without a key has it as null)."""
    keys: dict[str, None] = {}
    for row in rows:
        keys.update(dict.fromkeys(row[METADATA]))
    fields = {"description": DESCRIPTION} if "description" not in keys else {}
    for key in keys:
        if isinstance(key, str) and "." not in key:  # a dotted key stays in __metadata only (a path would split it)
            fields[key] = f"{METADATA}.{key}"
            for row in rows:
                row[METADATA].setdefault(key, None)
    return fields


def _template(prompt: Prompt, rows: list[dict[str, Any]], pairs: list[tuple[str, str]], tests: list[TestCase],
              ) -> dict[str, Any]:  # fmt: skip
    """The task's prompt: promptfoo's ``prefix + prompt + suffix``, the pair chosen per row when rows differ."""
    used = sorted({row.get(AFFIX, 0) for row in rows})
    if prompt.messages is not None:
        for row, test in zip(rows, tests, strict=True):
            if any(pairs[row.get(AFFIX, 0)]):
                raise test.at.error(
                    "not supported by assay's promptfoo reader: options.prefix/suffix with the chat prompt "
                    f"{prompt.alias!r} (promptfoo would send the joined text as one user message)"
                )
        return {"messages": prompt.messages}
    assert prompt.text is not None
    if len(pairs) <= 1:
        prefix, suffix = pairs[0] if pairs else ("", "")
        return {"template": prefix + prompt.text + suffix}

    def branches(part: int) -> str:
        texts = [(k, pairs[k][part]) for k in used if pairs[k][part]]
        if not texts:
            return ""
        body = "".join(f"{'{% if' if n == 0 else '{% elif'} {AFFIX} == {k} %}}{text}" for n, (k, text) in
                       enumerate(texts))  # fmt: skip
        return body + "{% endif %}"

    return {"template": branches(0) + prompt.text + branches(1)}


_ENV_NAME = re.compile(r"""\benv\s*(?:\.\s*(\w+)|\[\s*['"]([^'"]+)['"]\s*\])""")


def template_dialect(config: PromptfooConfig, texts: list[str]) -> dict[str, Any]:
    """promptfoo's nunjucks for the tasks' templates (assay.tasks.template's ``promptfoo`` dialect): undefined vars
    as empty text, ``load``, ``env``. The ``env`` global's overrides are the config's ``env`` entries the templates
    name (``env.NAME``, ``env['NAME']``), so no other value of it is written into the task (and its run folder)."""
    named = {a or b for text in texts for a, b in _ENV_NAME.findall(text)}
    return {"name": "promptfoo", "env": {k: v for k, v in config.env_overrides.items() if k in named}}


def _generation(prompt: Prompt, provider_generation: dict[str, Any]) -> dict[str, Any]:
    """The provider's settings under the prompt's own (promptfoo merges a prompt's config over the provider's)."""
    check_keys(prompt.config, "openai config", prompt.at.named(f"{prompt.at.path}.config"),
               table={k: OPENAI_CONFIG[k] for k in PROMPT_SETTINGS})  # fmt: skip
    own = {k: v for k, v in prompt.config.items() if k != "passthrough"}
    return {**provider_generation, **plain(own), **plain(prompt.config.get("passthrough") or {})}


# promptfoo 0.123.1's default grading provider with an OpenAI key (graders' getDefaultProviders:
# DefaultGradingProvider = OpenAiChatCompletionProvider(DEFAULT_OPENAI_GRADING_MODEL)), reached as its openai
# providers are (OPENAI_BASE_URL / OPENAI_API_HOST): model-graded checks that name no grader go there, as in promptfoo
DEFAULT_GRADER = "openai:chat:gpt-5.6-sol"


def default_grader() -> dict[str, Any]:
    """The model spec of promptfoo's default grader (its reasoning-model settings are the graders' own)."""
    return model_spec(DEFAULT_GRADER, "defaultTest.options.provider")[0]


def task_configs(config: PromptfooConfig) -> list[dict[str, Any]]:
    """One assay task config per prompt; the tests are the rows, their checks judged by ``row_checks``."""
    providers = config.providers
    model = providers[0].spec if providers else None
    generation = providers[0].generation if len(providers) == 1 else {}
    models = _named_models(providers) if len(providers) > 1 else None
    judge = config.judge if config.judge is not None else default_grader()
    all_rows, pairs = _rows(config)
    if not all_rows:
        raise ConfigError(f"{config.path}: tests: a promptfoo config needs at least one test to run")
    metadata_fields = _metadata_fields(all_rows)
    checks: dict[str, Any] = {"name": "row_checks", "expected": f"doc.{CHECKS}", "threshold_field": THRESHOLD,
                              "judge": judge}  # fmt: skip
    checks.update(options_field=OPTIONS, vars_exclude_prefix="__", base_dir=str(config.path.resolve().parent))
    checks["provider_env"] = provider_env()  # graders resolve where the run's models did, on a resume too
    for key in ("tools", "functions"):  # what the is-valid-openai-*-call assertions check calls against
        given = [p.generation[key] for p in providers if key in p.generation]
        if given and any(g != given[0] for g in given[1:]):
            raise ConfigError(
                f"{config.path}: providers: the providers give different {key}; row_checks checks calls against "
                "one list (run them as separate configs)"
            )
        if given:
            checks[key] = given[0]
    prices: dict[str, dict[str, float]] = {}
    for provider in providers:  # the cost assertion's prices, from the providers' cost/inputCost/outputCost
        if provider.price is not None:
            model_name = str(provider.spec.get("model"))
            if prices.get(model_name, provider.price) != provider.price:
                raise ConfigError(f"{config.path}: providers: two providers give model {model_name!r} different costs")
            prices[model_name] = provider.price
    if prices:
        checks["prices"] = prices
    base = _name(config.description or config.path.resolve().parent.name)
    out = []
    for k, prompt in enumerate(config.prompts):
        chosen = [i for i, t in enumerate(config.tests) if t.prompts is None or
                  any(ref_matches(r, prompt.label, prompt.id) for r in t.prompts)]  # fmt: skip
        if not chosen:
            continue
        rows = [all_rows[i] for i in chosen]
        task: dict[str, Any] = {
            "name": base if len(config.prompts) == 1 else f"{base}.prompt-{k + 1}",
            "alias": prompt.alias[:80],
            "dataset": {"rows": rows},
            "fields": {"id": ID, "metadata": metadata_fields},
            **_template(prompt, rows, pairs, [config.tests[i] for i in chosen]),
            "evaluators": [checks],
            "headline": "tests",  # promptfoo's summary: tests passed / failed / errored, not a mean of scores
        }
        texts = [task.get("template") or "", *(m["content"] for m in task.get("messages") or [])]
        task["template_dialect"] = template_dialect(config, texts)
        task_generation = _generation(prompt, generation)
        if task_generation:
            task["generation"] = task_generation
        if model is not None:
            task["model"] = model
        if models is not None:
            task["models"] = models
        out.append(task)
    return out


def _named_models(providers: list[Provider]) -> dict[str, dict[str, Any]]:
    """Each provider as a named model (its ``label``, else its model's name), its settings as the model's params."""
    out: dict[str, dict[str, Any]] = {}
    for i, provider in enumerate(providers):
        spec = dict(provider.spec)
        if provider.generation and spec.get("provider") == "openai":
            spec["params"] = provider.generation
        name = _name(str(provider.label or spec.get("model") or "echo"))
        while name in out:  # two providers of one model with different settings
            name += f"-{i + 1}"
        out[name] = spec
    return out
