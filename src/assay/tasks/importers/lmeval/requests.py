"""lm-eval's requests (``Instance`` objects) as assay requests, and assay's answers as lm-eval's responses.

One assay request per document (and repeat): a ``generate_until`` document is its prompt (one user message, or the
chat lm-eval built with ``--apply-chat-template``) with lm-eval's generation kwargs; a log-likelihood document is
one query holding every (context, continuation) pair its instances ask, in ``idx`` order; a rolling document the
text it scores. Back from the model, the answers become what lm-eval's models return: the text, ``(loglikelihood,
is_greedy)`` per pair, the log-likelihood of a rolling text."""

from __future__ import annotations

from typing import Any

from assay.errors import DataError
from assay.models.base import LoglikelihoodQuery, Message, Request, Response
from assay.models.loglikelihood import figures_of
from assay.tasks.importers.lmeval.suite import ChatPrompt, Document

DEFAULT_MAX_GEN_TOKS = 256  # lm-eval's models' default
_DROPPED = ("do_sample", "until", "max_gen_toks")  # lm-eval's generation kwargs that assay names otherwise


def kind_of(document: Document) -> str:
    """The request type of the document's instances (``generate_until``, ``loglikelihood``, ...)."""
    return str(document.instances[0].request_type)


def prompt_messages(context: Any) -> list[Message]:
    """The messages a prompt is sent as: a chat's own messages, else one user message holding the text."""
    if isinstance(context, ChatPrompt):
        return context.messages()
    if not isinstance(context, str):
        raise DataError(f"lm-eval built a prompt of type {type(context).__name__}; assay's models take text")
    return [{"role": "user", "content": context}]


def generation_params(gen_kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """lm-eval's generation kwargs as assay's parameters: ``until`` the stop sequences, ``max_gen_toks`` the token
    limit (256 by default, as lm-eval's models), greedy (temperature 0) unless a temperature is given."""
    kwargs = dict(gen_kwargs or {})
    until = kwargs.get("until")
    stop = [until] if isinstance(until, str) else [str(u) for u in until or ()]
    limit = kwargs.get("max_gen_toks", kwargs.get("max_tokens", DEFAULT_MAX_GEN_TOKS))
    params: dict[str, Any] = {"max_tokens": int(limit)}
    if stop:
        params["stop"] = stop
    params["temperature"] = float(kwargs.get("temperature", 0.0))
    for key, value in kwargs.items():
        if key not in _DROPPED and key not in ("temperature", "max_tokens"):
            params[key] = value
    return params


def build_request(document: Document, sample_id: str, doc_row: dict[str, Any], repeat: int) -> Request:
    """The assay request of one document (and repeat)."""
    kind = kind_of(document)
    first = document.instances[0]
    if kind == "generate_until":
        context, gen_kwargs = first.arguments[0], first.arguments[1]
        return Request(
            sample_id=sample_id,
            messages=prompt_messages(context),
            params=generation_params(gen_kwargs),
            repeat=repeat,
            doc=doc_row,
        )
    if kind == "loglikelihood_rolling":
        query = LoglikelihoodQuery(kind="loglikelihood_rolling", continuations=(str(first.arguments[0]),))
        return Request(sample_id=sample_id, messages=[], doc=doc_row, loglikelihood=query)
    if kind != "loglikelihood":
        raise DataError(f"lm-eval request type {kind!r} is not one assay's models answer")
    contexts = tuple(str(i.arguments[0]) for i in document.instances)
    continuations = tuple(str(i.arguments[1]) for i in document.instances)
    shared = len(set(contexts)) == 1
    query = LoglikelihoodQuery(
        kind="multiple_choice" if len(continuations) > 1 else "loglikelihood",
        context=contexts[0] if shared else "",
        continuations=continuations,
        contexts=None if shared else contexts,
    )
    messages = [{"role": "user", "content": contexts[0]}] if shared else []
    return Request(sample_id=sample_id, messages=messages, doc=doc_row, loglikelihood=query)


def lmeval_responses(document: Document, responses: list[Response | None]) -> list[list[Any]] | None:
    """Each instance's ``resps`` as lm-eval's model would have filled them from these answers (one per repeat), or
    None when an answer is missing (the model failed)."""
    if any(r is None for r in responses):
        return None
    kind = kind_of(document)
    if kind == "generate_until":
        texts = [r.text if r is not None and r.text is not None else "" for r in responses]
        return [texts]
    figures = figures_of(responses[0])
    logprobs = [float(x) for x in figures["logprobs"]]
    if kind == "loglikelihood_rolling":
        return [[logprobs[0]]]
    greedy = [bool(x) for x in figures.get("greedy") or [False] * len(logprobs)]
    if len(logprobs) != len(document.instances):
        raise DataError(f"{len(logprobs)} log-likelihoods came back for {len(document.instances)} requests")
    return [[(lp, g)] for lp, g in zip(logprobs, greedy, strict=True)]
