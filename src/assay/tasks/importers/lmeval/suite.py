"""lm-eval's own task objects, built as ``lm_eval`` builds them: seeds set, tasks loaded by its ``TaskManager``, its
overrides applied (few-shot count, generation kwargs, few-shot seed), every task's requests built in order
(``build_all_requests``), then, as lm-eval's evaluator does after the model has answered, each filter's pass over
the documents (``doc_iterator``): a ``process_docs`` that draws from ``random`` gives the documents lm-eval gives.

One suite per settings and process (:func:`load_suite`): a resume, a re-score or a Ray worker rebuilds it from the
settings recorded in run.json and gets the same requests."""

from __future__ import annotations

import functools
import json
import logging
import random
import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from assay.errors import ConfigError
from assay.tasks.importers.lmeval.settings import EXTRA_HINT, LmevalSettings

_SUITES: dict[str, Suite] = {}
_LOCK = threading.Lock()


class ChatPrompt(str):
    """A prompt that is a chat: the JSON of its messages, as lm-eval's API models carry a chat (``JsonChatStr``), so
    that its ``prompt_hash`` is lm-eval's."""

    __slots__ = ()

    def messages(self) -> list[dict[str, Any]]:
        """The chat's messages."""
        return list(json.loads(self))


def chat_template(chat_history: list[dict[str, Any]], add_generation_prompt: bool = True) -> ChatPrompt:
    """The chat template given to lm-eval: the messages themselves, sent to the model as a chat."""
    return ChatPrompt(json.dumps(chat_history, ensure_ascii=False))


def require_lm_eval() -> Any:
    """The ``lm_eval`` package; ConfigError naming the extra when it is not installed."""
    try:
        import lm_eval  # type: ignore[import-untyped]
        import lm_eval.evaluator_utils  # type: ignore[import-untyped]
        from lm_eval.tasks import TaskManager  # type: ignore[import-untyped]  # noqa: F401
    except ImportError as err:
        raise ConfigError(
            f"lm-eval tasks are read by lm-eval's own task layer, which is not installed ({EXTRA_HINT}): {err}"
        ) from None
    return lm_eval


@dataclass
class Document:
    """One document of an lm-eval task: its requests (lm-eval ``Instance`` objects, in ``idx`` order) and the
    document each filter's ``process_results`` is given (lm-eval iterates the documents again per filter)."""

    doc_id: int
    doc: Any
    instances: list[Any]
    scored_docs: dict[str, Any] = field(default_factory=dict)  # filter -> doc, where it differs from ``doc``

    def doc_for(self, filter_name: str) -> Any:
        """The document ``process_results`` is given under ``filter_name``."""
        return self.scored_docs.get(filter_name, self.doc)


@dataclass
class Suite:
    """The tasks and groups of one lm-eval load, each task's documents and requests built."""

    settings: LmevalSettings
    tasks: dict[str, Any]  # name -> lm-eval Task, in lm-eval's order
    groups: dict[str, Any]  # name -> lm-eval Group
    documents: dict[str, list[Document]]
    limits: dict[str, int | None]
    n_docs: dict[str, int]  # each task's evaluated split, before any limit

    def groups_of(self, task_name: str) -> list[str]:
        """The groups ``task_name`` belongs to, outermost first."""
        out: list[str] = []
        for name, group in self.groups.items():
            if any(getattr(t, "task_name", None) == task_name for t in group.get_all_tasks()):
                out.append(name)
        return out


def load_suite(settings: LmevalSettings) -> Suite:
    """The suite of ``settings``, built once per process (a resume or re-score in this process reuses it)."""
    key = settings.key()
    with _LOCK:
        found = _SUITES.get(key)
        if found is None:
            found = _SUITES[key] = _build(settings)
        return found


def _seed(settings: LmevalSettings) -> None:
    """lm-eval's seeding (``simple_evaluate``): Python's ``random``, numpy, and torch where it is installed."""
    import numpy as np

    py, numpy_seed, torch_seed, _ = settings.seeds
    if py is not None:
        random.seed(py)
    if numpy_seed is not None:
        np.random.seed(numpy_seed)
    if torch_seed is not None:
        from lm_eval.utils import set_torch_seed  # type: ignore[import-untyped]

        set_torch_seed(torch_seed)


def _manager(settings: LmevalSettings, defaults: bool) -> Any:
    from lm_eval.tasks import TaskManager

    return TaskManager(
        include_path=list(settings.include_path) or None, include_defaults=defaults, metadata=settings.metadata
    )


def _load(settings: LmevalSettings) -> dict[str, Any]:
    """lm-eval's ``TaskManager.load`` of the sources. Where task files' folders are given, lm-eval's own task
    folder (an 8-second index) is read only when a name is found nowhere else."""
    attempts = (False, True) if settings.include_path else (True,)
    for defaults in attempts:
        _seed(settings)
        try:
            return dict(_manager(settings, defaults).load(list(settings.sources)))
        except KeyError as err:
            if not defaults:
                continue
            raise ConfigError(f"lm-eval: {err.args[0] if err.args else err}") from None
        except Exception as err:  # a dataset lm-eval cannot read (offline, missing files), a broken task file
            raise ConfigError(
                f"lm-eval could not load {', '.join(settings.sources)}: {type(err).__name__}: {err}"
            ) from None
    raise AssertionError("unreachable")


@functools.lru_cache(maxsize=4096)
def _compiled(source: str) -> Any:
    """lm-eval's Jinja environment's template for ``source``, compiled once (lm-eval compiles it for every call)."""
    from lm_eval import utils

    return utils.env.from_string(source)


def _apply_template(template: str, doc: dict[str, Any]) -> str:
    """``lm_eval.utils.apply_template`` with its templates compiled once: the same environment, the same text."""
    return str(_compiled(template).render(**doc))


@contextmanager
def templates_compiled_once() -> Iterator[None]:
    """lm-eval's ``apply_template`` (every ``doc_to_text``/``doc_to_choice``/``doc_to_target`` template, for every
    document and every time the task reads it) compiles its Jinja template on each call: 1.3 of 5.5 s of a 500-document
    multiple-choice run on the tiny model (benchmarks/CHANGELOG.md). This block compiles each template once."""
    from lm_eval import utils

    original = utils.apply_template
    utils.apply_template = _apply_template
    try:
        yield
    finally:
        utils.apply_template = original


@contextmanager
def _quiet() -> Iterator[None]:
    """lm-eval's and datasets' progress bars and info logs off while a suite is built (assay shows its own)."""
    import lm_eval.api.task as lm_task_module  # type: ignore[import-untyped]

    bar = getattr(lm_task_module, "tqdm", None)
    if bar is not None:
        lm_task_module.tqdm = functools.partial(bar, disable=True)
    logger = logging.getLogger("lm_eval")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        import datasets  # type: ignore[import-untyped]

        bars = datasets.utils.logging.is_progress_bar_enabled()
        datasets.utils.logging.disable_progress_bar()
    except ImportError:
        bars = False
    try:
        yield
    finally:
        if bar is not None:
            lm_task_module.tqdm = bar
        logger.setLevel(level)
        if bars:
            datasets.utils.logging.enable_progress_bar()


def _build(settings: LmevalSettings) -> Suite:
    require_lm_eval()
    with _quiet(), templates_compiled_once():
        return _build_quietly(settings)


def _build_quietly(settings: LmevalSettings) -> Suite:
    loaded = _load(settings)
    tasks: dict[str, Any] = loaded["tasks"]
    if not tasks:
        raise ConfigError(f"lm-eval found no tasks in {', '.join(settings.sources)}")
    fewshot_seed = settings.seeds[3]
    for task in tasks.values():  # simple_evaluate's overrides, in its order
        if task.get_config("output_type") == "generate_until" and settings.gen_kwargs:
            task.set_config(key="generation_kwargs", value=dict(settings.gen_kwargs), update=True)
        if settings.num_fewshot is not None:
            if task.get_config("num_fewshot") != 0:
                task.set_config(key="num_fewshot", value=settings.num_fewshot)
        elif task.get_config("num_fewshot") is None:
            task.set_config(key="num_fewshot", value=0)
        task.set_fewshot_seed(seed=fewshot_seed)
    from lm_eval.evaluator_utils import get_sample_size

    limits: dict[str, int | None] = {}
    for name, task in tasks.items():  # evaluate(): every task's requests, in order
        _refuse_unsupported(name, task)
        limit = get_sample_size(task, settings.limit)
        limits[name] = limit
        try:
            task.build_all_requests(
                limit=limit,
                rank=0,
                world_size=1,
                system_instruction=settings.system_instruction,
                apply_chat_template=settings.chat,
                fewshot_as_multiturn=settings.multiturn,
                chat_template=chat_template if settings.chat else None,
                tokenizer_name="",
            )
        except ConfigError:
            raise
        except Exception as err:
            raise ConfigError(
                f"lm-eval task {name!r}: building its requests failed: {type(err).__name__}: {err}"
            ) from err
    documents = {name: _documents(name, task, limits[name]) for name, task in tasks.items()}
    n_docs = {name: len(task.eval_docs) for name, task in tasks.items()}  # as lm-eval counts them, last
    return Suite(settings, tasks, dict(loaded.get("groups") or {}), documents, limits, n_docs)


def _refuse_unsupported(name: str, task: Any) -> None:
    """Refuse, before anything runs, what assay's models cannot answer."""
    if getattr(task, "MULTIMODAL", False) or task.get_config("doc_to_image") or task.get_config("doc_to_audio"):
        raise ConfigError(f"lm-eval task {name!r} is multimodal (images or audio); assay's models take text")
    if getattr(task, "UNSAFE_CODE", False):
        raise ConfigError(
            f"lm-eval task {name!r} runs model-written code unsandboxed (lm-eval's unsafe_code); "
            "use assay's code_exec evaluator, which runs it in a sandbox"
        )


def _documents(name: str, task: Any, limit: int | None) -> list[Document]:
    """The task's documents with their requests, and the documents lm-eval scores each filter on."""
    by_doc: dict[int, list[Any]] = defaultdict(list)
    for instance in task.instances:
        by_doc[instance.doc_id].append(instance)
    kinds = {i.request_type for i in task.instances}
    if len(kinds) > 1:
        raise ConfigError(
            f"lm-eval task {name!r} asks each document for {' and '.join(sorted(kinds))} at once; assay sends one "
            "kind of request per document"
        )
    docs: list[Document] = []
    for doc_id in sorted(by_doc):
        instances = sorted(by_doc[doc_id], key=lambda i: i.idx)
        docs.append(Document(doc_id, instances[0].doc, instances))
    for filter_name in filter_names(task):  # evaluate() iterates the documents anew for each filter
        for document, (doc_id, doc) in zip(docs, task.doc_iterator(rank=0, limit=limit, world_size=1), strict=False):
            if doc_id != document.doc_id:
                raise ConfigError(f"lm-eval task {name!r}: documents came back in another order")
            if doc is not document.doc and doc != document.doc:
                document.scored_docs[filter_name] = doc
    return docs


def filter_names(task: Any) -> list[str]:
    """The names of an lm-eval task's filter pipelines, in order (``none`` when it has none)."""
    filters = getattr(task, "_filters", None)
    return [f.name for f in filters] if filters else ["none"]
