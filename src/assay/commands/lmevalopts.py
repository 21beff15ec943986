"""``assay run``'s lm-eval options, with ``lm_eval``'s meanings: they shape how lm-eval builds its tasks' requests
and figures, and are passed on as one ``lmeval`` dict (see :class:`assay.tasks.importers.lmeval.LmevalSettings`)."""

from __future__ import annotations

import ast
import functools
import json
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

_NAMES = (
    "num_fewshot",
    "apply_chat_template",
    "fewshot_as_multiturn",
    "system_instruction",
    "gen_kwargs",
    "lmeval_seed",
    "metadata",
    "lmeval_bootstrap_iters",
)

_OPTIONS = [
    click.option("--num-fewshot", type=click.IntRange(min=0), help="lm-eval tasks: few-shot examples per prompt."),
    click.option(
        "--apply-chat-template",
        is_flag=False,
        flag_value="default",
        default=None,
        metavar="[TEMPLATE]",
        help="lm-eval tasks: send prompts as chat messages (the task description as a system message), as "
        "lm_eval --apply_chat_template; an hf: model renders them with its tokenizer's template (or TEMPLATE).",
    ),
    click.option(
        "--fewshot-as-multiturn/--no-fewshot-as-multiturn",
        default=None,
        help="lm-eval tasks, with --apply-chat-template: each few-shot example a user/assistant turn (the default "
        "with a chat template, as lm_eval's), or all of them in the one user message.",
    ),
    click.option("--system-instruction", help="lm-eval tasks: a system instruction before every prompt."),
    click.option(
        "--gen-kwargs",
        help="lm-eval tasks: generation kwargs over the tasks' own, as lm_eval's 'temperature=0.7,top_p=0.9' or JSON.",
    ),
    click.option(
        "--lmeval-seed",
        help="lm-eval tasks: seeds of random, numpy, torch and the few-shot sampler, as lm_eval --seed "
        "('0,1234,1234,1234', the default; one number sets all four; 'None' leaves one unset).",
    ),
    click.option("--metadata", help="lm-eval tasks: JSON metadata passed to every task (lm_eval --metadata)."),
    click.option(
        "--lmeval-bootstrap-iters",
        type=click.IntRange(min=0),
        help="lm-eval tasks: bootstrap resamples of lm-eval's stderrs for non-mean metrics (lm-eval's 100000).",
    ),
]


def lmeval_options(command: F) -> F:
    """Add the lm-eval options to ``command``; it receives them together as ``lmeval`` (a dict, or None)."""

    @functools.wraps(command)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        given = {name: kwargs.pop(name, None) for name in _NAMES}
        kwargs["lmeval"] = settings_from(**given)
        return command(*args, **kwargs)

    for option in reversed(_OPTIONS):
        wrapped = option(wrapped)
    return wrapped  # type: ignore[return-value]


def _value(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_kwargs(text: str, option: str) -> dict[str, Any]:
    """``key=value,key=value`` (lm-eval's form, values read as Python literals) or a JSON object."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            value = json.loads(stripped)
        except json.JSONDecodeError as err:
            raise click.BadParameter(f"invalid JSON: {err.msg}", param_hint=option) from None
        if not isinstance(value, dict):
            raise click.BadParameter("a JSON object", param_hint=option)
        return value
    out: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in stripped.split(","))):
        key, sep, raw = part.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{part!r} is not key=value", param_hint=option)
        out[key.strip()] = _value(raw.strip())
    return out


def parse_seeds(text: str) -> list[int | None]:
    """lm_eval's ``--seed``: one number for all four seeds, or four comma-separated ones (``None`` for unset)."""
    parts = [p.strip() for p in text.split(",")]
    try:
        values = [None if p == "None" else int(p) for p in parts]
    except ValueError:
        raise click.BadParameter(f"{text!r}: whole numbers or None", param_hint="--lmeval-seed") from None
    if len(values) == 1:
        return values * 4
    if len(values) != 4:
        raise click.BadParameter("one number, or four (random, numpy, torch, few-shot)", param_hint="--lmeval-seed")
    return values


def settings_from(
    *,
    num_fewshot: int | None = None,
    apply_chat_template: str | None = None,
    fewshot_as_multiturn: bool | None = None,
    system_instruction: str | None = None,
    gen_kwargs: str | None = None,
    lmeval_seed: str | None = None,
    metadata: str | None = None,
    lmeval_bootstrap_iters: int | None = None,
) -> dict[str, Any] | None:
    """The ``lmeval`` dict of the options given (None when none was)."""
    out: dict[str, Any] = {}
    if num_fewshot is not None:
        out["num_fewshot"] = num_fewshot
    if apply_chat_template is not None:
        out["apply_chat_template"] = True if apply_chat_template == "default" else apply_chat_template
    if fewshot_as_multiturn is not None:
        if apply_chat_template is None:
            raise click.UsageError("--[no-]fewshot-as-multiturn goes with --apply-chat-template (as lm_eval's)")
        out["fewshot_as_multiturn"] = fewshot_as_multiturn
    if system_instruction is not None:
        out["system_instruction"] = system_instruction
    if gen_kwargs is not None:
        out["gen_kwargs"] = parse_kwargs(gen_kwargs, "--gen-kwargs")
    if lmeval_seed is not None:
        out["seeds"] = parse_seeds(lmeval_seed)
    if metadata is not None:
        out["metadata"] = parse_kwargs(metadata, "--metadata")
    if lmeval_bootstrap_iters is not None:
        out["bootstrap_iters"] = lmeval_bootstrap_iters
    return out or None
