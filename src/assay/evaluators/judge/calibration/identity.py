"""Who a judge is, for calibration: its models, the hash of its prompt template, its scale and grading options.

A calibration record covers exactly the judge whose identity it names: another model, an edited criteria or
rubric, a changed prompt template in assay itself, another scale or pass threshold is another judge. Connection
settings (``base_url``, keys, retries, timeouts, caching, concurrency) are not part of it: the same judge served
from another address is the same judge.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from assay.evaluators.judge.parse import Scale
from assay.evaluators.judge.prompt import PLACEHOLDER, grade_messages, pairwise_messages

# options that change what the judge is asked or how its reply becomes a verdict
GRADING_OPTIONS = (
    "mode",
    "include_input",
    "reference",
    "baseline",
    "combine",
    "samples",
    "temperature",
    "max_tokens",
    "structured_output",
    "min_judges",
    "pass_threshold",
    "evaluation_steps",
    "score_from",
)
DEFAULTS: dict[str, Any] = {
    "scale": "binary",
    "pass_threshold": 0.5,
    "mode": "grade",
    "include_input": True,
    "reference": "target",
    "baseline": "output_b",
    "combine": "mean",
    "samples": 1,
    "temperature": 0.0,
    "max_tokens": None,
    "structured_output": True,
    "min_judges": None,
    "evaluation_steps": False,
    "rubric": None,
    "score_from": "reply",
}
# the judge evaluators built on JudgeBase besides llm_judge: their prompts are assay's, in rag/prompts.py
RAG_JUDGES = ("faithfulness", "answer_relevancy", "context_precision", "context_recall", "hallucination")
# how a judge is reached, cached and gated: never part of who it is
CONNECTION_OPTIONS = frozenset(
    {"model", "cache", "cache_path", "max_attempts", "initial_backoff_s", "timeout_s", "concurrency"}
    | {"require_calibration", "top_logprobs"}
)


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def model_names(model: Any) -> list[str]:
    """The judge models as ``provider:model``, without addresses or keys."""
    specs = model if isinstance(model, list) else [model]
    out: list[str] = []
    for spec in specs:
        if isinstance(spec, str):
            out.append(spec)
        elif isinstance(spec, Mapping):
            name = spec.get("model") or spec.get("name") or spec.get("target") or ""
            out.append(f"{spec.get('provider', 'openai')}:{name}")
        else:
            out.append(str(spec))
    return out


def prompt_template_hash(options: Mapping[str, Any]) -> str:
    """sha256 of the judge's prompt with stand-ins for the output, input and reference: the criteria, rubric,
    steps and the wording assay sends, so an edited rubric or a changed template is another hash."""
    opts = {**DEFAULTS, **options}
    steps = opts["evaluation_steps"]
    common = {
        "boundary": PLACEHOLDER,
        "criteria": str(opts.get("criteria", "")),
        "rubric": opts["rubric"],
        "input_text": "{input}" if opts["include_input"] else None,
        "reference": "{reference}" if opts["reference"] else None,
    }
    fixed = steps if isinstance(steps, list) else None
    if opts["mode"] == "pairwise":
        messages = pairwise_messages(first="{first}", second="{second}", steps=fixed, **common)
    else:
        messages = grade_messages(scale=Scale.parse(opts["scale"]), output="{output}", steps=fixed, **common)
    return _digest({"messages": messages, "generated_steps": steps is True})


def rag_prompt_hash(name: str) -> str:
    """sha256 of a RAG metric's name and assay's RAG prompt wording (the module that writes its prompts)."""
    import inspect

    from assay.evaluators.rag import prompts

    return _digest({"evaluator": name, "prompts": inspect.getsource(prompts)})


def judge_identity(config: Mapping[str, Any]) -> dict[str, Any]:
    """The identity of a judge evaluator config (``Evaluator.to_config()``, as run.json records it):
    ``evaluator``, ``models``, ``prompt_hash``, ``scale``, ``options`` and ``id`` (a hash of them all)."""
    name = str(config.get("name", "llm_judge"))
    opts = {k: v for k, v in config.items() if k != "name"}
    ident: dict[str, Any]
    if name == "llm_judge":
        grading = {k: opts.get(k, DEFAULTS[k]) for k in GRADING_OPTIONS}
        ident = {
            "models": model_names(opts.get("model")),
            "prompt_hash": prompt_template_hash(opts),
            "scale": opts.get("scale", DEFAULTS["scale"]),
            "options": grading,
        }
    else:  # a RAG metric: its grading options are all but how the judge is reached
        ident = {
            "evaluator": name,
            "models": model_names(opts.get("model")),
            "prompt_hash": rag_prompt_hash(name),
            "scale": "0-1",
            "options": {k: v for k, v in sorted(opts.items()) if k not in CONNECTION_OPTIONS},
        }
    ident["id"] = _digest(ident)[:16]
    return ident


def is_judge(config: Mapping[str, Any]) -> bool:
    """Whether an evaluator config is a judge: ``llm_judge`` or a RAG metric (all built on JudgeBase)."""
    return config.get("name") == "llm_judge" or config.get("name") in RAG_JUDGES
