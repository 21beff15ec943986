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

from assay.evaluators.judge_parse import Scale
from assay.evaluators.judge_prompt import PLACEHOLDER, grade_messages, pairwise_messages

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
}


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


def judge_identity(config: Mapping[str, Any]) -> dict[str, Any]:
    """The identity of an ``llm_judge`` evaluator config (``Evaluator.to_config()``, as run.json records it):
    ``models``, ``prompt_hash``, ``scale``, ``options`` and ``id`` (a hash of the four)."""
    opts = {k: v for k, v in config.items() if k != "name"}
    grading = {k: opts.get(k, DEFAULTS[k]) for k in GRADING_OPTIONS}
    ident: dict[str, Any] = {
        "models": model_names(opts.get("model")),
        "prompt_hash": prompt_template_hash(opts),
        "scale": opts.get("scale", DEFAULTS["scale"]),
        "options": grading,
    }
    ident["id"] = _digest(ident)[:16]
    return ident


def is_judge(config: Mapping[str, Any]) -> bool:
    """Whether an evaluator config is an ``llm_judge``."""
    return config.get("name") == "llm_judge"
