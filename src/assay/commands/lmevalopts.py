"""``assay run``'s lm-eval options, with ``lm_eval``'s meanings: they shape how lm-eval builds its tasks' requests
and figures, and are passed on as one ``lmeval`` dict (see :class:`assay.tasks.importers.lmeval.LmevalSettings`)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from assay.tasks.importers.lmeval.settings import KEYWORDS

F = TypeVar("F", bound=Callable[..., Any])

_OPTIONS = [
    click.option("--num-fewshot", type=click.IntRange(min=0), help="lm-eval tasks: few-shot examples per prompt."),
    click.option(
        "--apply-chat-template",
        is_flag=True,
        default=None,
        help="lm-eval tasks: send prompts as chat messages (the task description as a system message), as "
        "lm_eval --apply_chat_template; the model applies its own chat template (an hf: model its tokenizer's).",
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
        given = {name: kwargs.pop(name, None) for name in KEYWORDS}
        kwargs["lmeval"] = settings_from(**given)
        return command(*args, **kwargs)

    for option in reversed(_OPTIONS):
        wrapped = option(wrapped)
    return wrapped  # type: ignore[return-value]


def settings_from(**given: Any) -> dict[str, Any] | None:
    """The ``lmeval`` dict of the options given (None when none was); a bad value is a usage error."""
    from assay.errors import ConfigError
    from assay.tasks.importers.lmeval.settings import options_from

    try:
        return options_from(**given) or None
    except ConfigError as err:
        raise click.UsageError(str(err)) from None
