"""A load sweep over more of promptfoo's own example configs (sweep/<example>/, upstream files unchanged, blob ids in
sweep/sources.json; often the config alone, its references not fetched): each either loads with assay's promptfoo
reader into promptfoo's prompts x tests x providers, no test dropped or added (counted as promptfoo counts them,
checked against real promptfoo 0.123.1 where it can run the config), or is refused with a ConfigError naming the
config file and what is refused (the key, the provider, the missing file). Any other exception fails."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass

import pytest

from assay.errors import ConfigError
from assay.tasks.importers.promptfoo import load_promptfoo
from tests.importers.promptfoo.examples.support import SWEEP


@dataclass(frozen=True)
class Loads:
    """promptfoo's numbers: prompts (tasks), tests per prompt (rows), providers (models)."""

    prompts: int
    tests: int
    providers: int
    how: str  # how promptfoo counts them


@dataclass(frozen=True)
class Refused:
    """What the refusal names besides the config file: the key path and the refused thing."""

    names: tuple[str, ...]
    why: str  # what promptfoo does with it


MISSING = "not fetched with the config (the sweep keeps the config alone)"
PROVIDER = "a provider assay does not read (only openai:[chat:]MODEL and echo); promptfoo needs that service"

Outcome = Loads | Refused
CASES: dict[str, Outcome | tuple[Outcome, ...]] = {  # a tuple: any of them is right
    "adaline-eval-factuality/promptfooconfig.yaml": Refused(
        ("defaultTest.options.provider.id", "adaline:openai:chat:gpt-4.1-mini"), PROVIDER
    ),
    "aimlapi/promptfooconfig.yaml": Refused(("providers[0]", "aimlapi:gpt-4o"), PROVIDER),
    "amazon-bedrock-models/promptfooconfig.openai-compatible.yaml": Refused(
        ("providers[0].id", "bedrock:zai.glm-5"), PROVIDER
    ),
    "assertion-scoring-override/promptfooconfig.yaml": Refused(
        ("defaultTest.assertScoringFunction",), "promptfoo runs the JS/Python scoring function in place of its mean"
    ),
    "assistant-cli/promptfooconfig.yaml": Loads(2, 10, 1, "prompts.txt split at --- (2) x tests.csv rows (10): 20"),
    "cerebras/promptfooconfig.yaml": Refused(
        ("prompts[0]", "prompts.txt", "file not found"),
        f"{MISSING}; the unknown top key `outputs` is ignored with a warning, as promptfoo 0.123.1 drops it",
    ),
    "chat-messages-format/promptfooconfig.yaml": Refused(
        ("prompts[1]", "'messages'"),
        "promptfoo 0.123.1 refuses it too: 'Invalid prompt object' (its parse drops the unknown `messages` key)",
    ),
    "claude-thinking/promptfooconfig.yaml": Refused(
        ("providers[0].id", "anthropic:messages:claude-3-7-sonnet-20250219"), PROVIDER
    ),
    "config-dynamic-var/promptfooconfig.yaml": Refused(("providers[0]", "openai:responses:gpt-5.4"), PROVIDER),
    "config-multi-turn/promptfooconfig.yaml": (
        Loads(1, 7, 1, "promptfoo 0.123.1 runs it: one prompt x seven tests (7 passed)"),
        Refused(
            ("prompt.json", "_conversation"),
            "promptfoo 0.123.1 runs it (7 passed): prompt.json is a nunjucks template rendering to JSON, its "
            "{% for completion in _conversation %} replaying each conversationId thread's earlier turns",
        ),
    ),
    "config-multiple-translations/promptfooconfig-scenarios.yaml": Refused(
        ("providers[2]", "anthropic:claude-sonnet-5"), PROVIDER
    ),
    "config-multiple-translations/promptfooconfig.yaml": Refused(
        ("providers[2]", "anthropic:claude-sonnet-5"), PROVIDER
    ),
    "config-prompts-per-model/promptfooconfig.yaml": Refused(("prompts[0]", "prompt1.txt", "file not found"), MISSING),
    "config-separate-test-configs/promptfooconfig.yaml": Refused(
        ("tests[0]", "tests/tests2.yaml", "file not found"), MISSING
    ),
    "custom-grader-csv/promptfooconfig.yaml": Refused(("prompts[0]", "prompts.txt", "file not found"), MISSING),
    "custom-prompt-function/promptfooconfig.yaml": Refused(("prompts[2]", "prompt.txt", "file not found"), MISSING),
    "custom-provider/promptfooconfig.yaml": Refused(("prompts[0]", "prompts.txt", "file not found"), MISSING),
    "cyberseceval/promptfooconfig.yaml": Refused(("prompts[0]", "prompt.json", "file not found"), MISSING),
    "dynamic-var/promptfooconfig.yaml": Refused(
        ("tests[0].vars.context", "load_context.py"), "promptfoo runs get_var in load_context.py for the var"
    ),
    "eval-summarization/promptfooconfig.yaml": Refused(("tests[0].vars.article", "articles/*", "no file"), MISSING),
    "f-score/promptfooconfig.yaml": Refused(("derivedMetrics",), "promptfoo computes them from the named scores"),
    "g-eval/promptfooconfig-vision.yaml": Refused(
        ("prompts[0]",), "image prompts (content parts); bedrock: and vertex: providers follow"
    ),
    "github-action/promptfooconfig.yaml": (
        Loads(1, 4, 1, "promptfoo 0.123.1 runs it (4 passed): its default prompt '{{prompt}}' x four tests"),
        Refused(
            ("prompts",),
            "promptfoo 0.123.1 runs it (4 passed): with no prompts its default prompt '{{prompt}}' renders the "
            "undefined var as '' and sends an empty user message",
        ),
    ),
    "google-sheets/promptfooconfig.yaml": Refused(("prompts[0]", "prompts.txt", "file not found"), MISSING),
    "harmbench/promptfooconfig.yaml": Refused(("providers[0]", "ollama:mannix/llama3.1-8b-abliterated"), PROVIDER),
    "huggingface-bbq/promptfooconfig.yaml": Refused(
        ("prompts[0]", "bbq_prompt.yaml", "file not found"),
        f"{MISSING}; defaultTest.assert[0].description is ignored with a warning, as promptfoo drops it",
    ),
    "llama-gpt-comparison/promptfooconfig.yaml": Refused(
        ("prompts[0]", "prompts/chat_prompt.json", "file not found"), MISSING
    ),
    "mistral-llama-comparison/promptfooconfig.yaml": Refused(("prompts/mistral_prompt.txt", "file not found"), MISSING),
    "mmlu/promptfooconfig.yaml": Refused(("tests", "mmlu_data.csv", "file not found"), MISSING),
    "multiple-translations/promptfooconfig-scenarios.yaml": Refused(
        ("prompts[0]", "prompts.txt", "file not found"), MISSING
    ),
    "nunjucks-custom-filters/promptfooconfig.yaml": Refused(
        ("No filter named 'allcaps'",),
        "promptfoo 0.123.1 drops the unknown key `filters` (assay: with a warning) and then fails every prompt: "
        "'filter not found: allcaps'",
    ),
    "openai-eval-factuality/promptfooconfig.yaml": Refused(
        ("prompts[0]", "prompts/name_capitals_concise.txt", "file not found"), MISSING
    ),
    "prompt-labels/promptfooconfig.yaml": Refused(("prompts[0]", "prompts1.txt", "file not found"), MISSING),
    "prompts-per-model/promptfooconfig.yaml": Refused(("prompts[0]", "prompt1.txt", "file not found"), MISSING),
    "python-assert/promptfooconfig-external.yaml": Refused(
        ("tests[0].assert[0].value", "assert.py", "file not found"), MISSING
    ),
    "redteam-deepseek/promptfooconfig.yaml": Refused(
        ("providers[0].id", "openrouter:deepseek/deepseek-r1-0528"), PROVIDER
    ),
    "separate-test-configs/promptfooconfig.yaml": Refused(
        ("vars.system_message", "system_prompt.txt", "file not found"), MISSING
    ),
    "simple-cli/promptfooconfig.yaml": Loads(2, 4, 1, "two prompts x four tests: 8"),
    "structured-outputs-config/promptfooconfig.yaml": Refused(
        ("providers[1].id", "azure:chat:gpt-4o-2024-08-06"), PROVIDER
    ),
    "summarization/promptfooconfig.yaml": Refused(("tests[0].vars.article", "articles/*", "no file"), MISSING),
}

XFAIL: dict[str, str] = {}  # a config assay gets wrong: the precise reason, naming the code at fault


def _param(case: str) -> object:
    marks = [pytest.mark.xfail(strict=True, reason=XFAIL[case])] if case in XFAIL else []
    return pytest.param(case, id=case, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_sweep_config_loads_whole_or_is_refused_by_name(case: str) -> None:
    path = SWEEP / case
    wanted = CASES[case]
    outcomes = wanted if isinstance(wanted, tuple) else (wanted,)
    try:
        tasks = load_promptfoo(path)
    except ConfigError as exc:
        message = str(exc)
        refusals = [w for w in outcomes if isinstance(w, Refused)]
        assert refusals, f"promptfoo runs {case} ({outcomes[0]}); assay refused it: {message}"
        assert path.name in message and path.parent.name in message, message
        missing = [[n for n in w.names if n not in message] for w in refusals]
        assert [] in missing, f"the refusal does not name {min(missing, key=len)}: {message}"
        return
    loads = [w for w in outcomes if isinstance(w, Loads)]
    assert loads, f"assay loaded {case}, expected a refusal naming {outcomes[0]}"
    (want,) = loads
    assert len(tasks) == want.prompts, [t.name for t in tasks]
    for task in tasks:
        assert len(task.dataset) == want.tests, task.name
        models = task.models or ({"model": task.model} if task.model else {})
        assert len(models) == want.providers, task.name


def test_sweep_covers_every_config_and_more_than_40() -> None:
    """Every promptfoo config in sweep/ is a case (and only those), over 40 of them, none of them one of the
    examples run against promptfoo's verdicts (test_examples.py)."""
    found = sorted(
        str(p.relative_to(SWEEP))
        for p in SWEEP.rglob("promptfooconfig*")
        if p.suffix in (".yaml", ".yml", ".json") and p.parent.parent == SWEEP
    )
    assert found == sorted(CASES)
    assert len(CASES) >= 40
    from tests.importers.promptfoo.examples.replies import EXAMPLES

    ran = {f"{e.name}/{e.config}" for e in EXAMPLES}
    assert not ran & set(CASES)


def test_sweep_files_are_upstream_files_unchanged() -> None:
    sources = json.loads((SWEEP / "sources.json").read_text())
    assert {p.name for p in SWEEP.iterdir() if p.is_dir()} == set(sources)
    for name, entry in sources.items():
        folder = SWEEP / name
        on_disk = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
        assert on_disk == sorted(entry["files"]), name
        for rel, meta in entry["files"].items():
            blob = subprocess.run(["git", "hash-object", str(folder / rel)], capture_output=True, text=True)
            assert blob.stdout.strip() == meta["blob"], f"{name}/{rel} differs from upstream {meta['path']}"
            assert meta["path"] == f"{entry['upstream'].split(':', 1)[1]}/{rel}"
