"""An lm-eval task as an assay :class:`~assay.tasks.Task`: its documents are the samples, lm-eval's requests are
sent through assay's runner and models, and lm-eval's filters and ``process_results`` score each document
(:mod:`.scoring`). The task is rebuilt from its lm-eval settings (run.json: ``config["lmeval"]``) wherever it is
needed again: a resume, a re-score, a Ray worker."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from assay.hashing import sha256_hex
from assay.models.base import Request, Response
from assay.record import FilterRecord
from assay.tasks.config import expand_shorthands, validate_config
from assay.tasks.fields import FieldMap
from assay.tasks.filters import FilterPipeline
from assay.tasks.importers.lmeval.figures import CONFIG_KEY
from assay.tasks.importers.lmeval.metric import LmevalMetric
from assay.tasks.importers.lmeval.requests import build_request
from assay.tasks.importers.lmeval.scoring import jsonable, score_document
from assay.tasks.importers.lmeval.settings import LmevalSettings
from assay.tasks.importers.lmeval.suite import Document, Suite, filter_names, load_suite
from assay.tasks.metrics import MetricSpec
from assay.tasks.sample import Sample
from assay.tasks.task import Task
from assay.tasks.taskfile import ConfigContext

if TYPE_CHECKING:
    from assay.record import TaskInfo

PROMPT_KEY = "lmeval_prompt"  # the request's metadata key holding lm-eval's prompt (hashed as its prompt_hash)
_HEAVY = ("_suite_cache", "_samples_cache", "_by_doc")  # rebuilt from the settings after pickling


class LmevalTask(Task):
    """One task of an lm-eval suite (:class:`~.suite.Suite`), run on assay's runner."""

    external: ClassVar[bool] = True

    def __init__(self, settings: LmevalSettings, name: str) -> None:
        self.settings = settings
        self.name = name
        self._suite_cache: Suite | None = None
        self._samples_cache: list[Sample] | None = None
        self._by_doc: dict[int, Document] | None = None
        suite = self._suite
        lm = suite.tasks[name]
        config = lm.config
        ctx = ConfigContext(f"lm-eval task {name!r}")
        self._ctx = ctx
        placeholder = {"name": name, "dataset": [{"x": 0}], "template": "{{ x }}"}  # the runner's settings' defaults
        self.config = validate_config(expand_shorthands(placeholder, ctx), ctx)
        self.alias = str(config.task_alias) if getattr(config, "task_alias", None) else None
        self.version = str(lm.VERSION if lm.VERSION is not None else "")
        self.description = None
        self.tags = []
        self.groups = suite.groups_of(name)
        self.repeats = int(getattr(config, "repeats", 1) or 1)
        self.repeat_reduction = None
        self.model = self.models = None
        self.generation = {}
        self.tools = self.response_format = None
        self.system = settings.system_instruction
        self.fields = FieldMap()
        self.fewshot_spec = None
        self.output_type = str(lm.OUTPUT_TYPE)
        self.prompt = None  # type: ignore[assignment]  # lm-eval builds the prompts
        self._pipelines = [FilterPipeline(f) for f in filter_names(lm)]
        self.metrics = self._metric_specs(lm)
        self._queries = None
        self.agent = None
        self._hash = None
        self._validated = True
        self._last_render = None

    # ---- the suite ---------------------------------------------------------------------------------------

    @property
    def _suite(self) -> Suite:
        if self._suite_cache is None:
            self._suite_cache = load_suite(self.settings)
        return self._suite_cache

    @property
    def lm_task(self) -> Any:
        """lm-eval's own task object."""
        return self._suite.tasks[self.name]

    @property
    def documents(self) -> list[Document]:
        """The documents evaluated (after ``--limit``), with their lm-eval requests."""
        return self._suite.documents[self.name]

    def _metric_specs(self, lm: Any) -> list[MetricSpec]:
        better = lm.higher_is_better() or {}
        aggregations = lm.aggregation() or {}
        names = list(aggregations) or list(better)
        settings = self.settings.model_dump(mode="json")
        specs = []
        for metric in names:
            agg = aggregations.get(metric)
            evaluator = LmevalMetric(
                task=self.name,
                metric=metric,
                filter=self._pipelines[0].name,
                aggregation=getattr(agg, "__name__", "mean"),
                settings=settings,
            )
            specs.append(MetricSpec(metric, evaluator, bool(better.get(metric, True)), "none"))
        return specs

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without lm-eval's objects (a Ray worker or a forked scorer rebuilds them from the settings)."""
        state = dict(self.__dict__)
        for name in _HEAVY:
            state[name] = None
        return state

    # ---- samples and requests ------------------------------------------------------------------------------

    def _document_row(self, document: Document) -> dict[str, Any]:
        from lm_eval.utils import handle_non_serializable  # type: ignore[import-untyped]

        doc = document.doc
        row = json.loads(json.dumps(doc, default=handle_non_serializable, ensure_ascii=False))
        return row if isinstance(row, dict) else {"doc": row}

    def _all_samples(self) -> Sequence[Sample]:
        if self._samples_cache is None:
            lm = self.lm_task
            out = []
            for document in self.documents:
                row = self._document_row(document)
                target = jsonable(lm.doc_to_target(document.doc_for(filter_names(lm)[0])))
                out.append(Sample(document.doc_id, str(document.doc_id), row, None, target))
            self._samples_cache = out
        return self._samples_cache

    def validate(self) -> None:
        """Nothing to check: lm-eval built every request when the task was loaded."""

    def samples(self, limit: int | None = None, shuffle_seed: int | None = None) -> Sequence[Sample]:
        """The documents lm-eval evaluates (``--limit`` applied as lm-eval applies it), as samples."""
        samples = list(self._all_samples())
        if shuffle_seed is not None:
            random.Random(shuffle_seed).shuffle(samples)
        return samples[:limit] if limit is not None else samples

    @property
    def n_docs(self) -> int:
        """The documents of the evaluated split, as lm-eval counts them (before any limit)."""
        return self._suite.n_docs[self.name]

    @property
    def n_shot(self) -> int:
        """Few-shot examples per prompt, as lm-eval was told."""
        return int(self.lm_task.get_config("num_fewshot") or 0)

    def fewshot_for(self, sample: Sample) -> list[Sample]:
        """lm-eval lays the few-shot examples into the prompt itself."""
        return []

    def _document(self, sample: Sample) -> Document:
        if self._by_doc is None:
            self._by_doc = {d.doc_id: d for d in self.documents}
        return self._by_doc[sample.doc_id]

    def build_request(self, sample: Sample, repeat: int = 0) -> Request:
        """The request lm-eval built for the document (and repeat)."""
        if not 0 <= repeat < self.repeats:
            raise ValueError(f"repeat must be in [0, {self.repeats}), got {repeat}")
        document = self._document(sample)
        request = build_request(document, sample.id, sample.doc, repeat)
        prompt = document.instances[0].arguments[0]
        return request.model_copy(update={"metadata": {PROMPT_KEY: str(prompt)}})

    @staticmethod
    def prompt_text(request: Request) -> str:
        """lm-eval's prompt as it hashes it (``arguments[0]`` of the document's first request)."""
        prompt = request.metadata.get(PROMPT_KEY)
        return str(prompt) if prompt is not None else Task.prompt_text(request)

    def params_for(self, repeat: int = 0) -> dict[str, Any]:
        """lm-eval's generation kwargs are in each request."""
        return {}

    # ---- scoring ------------------------------------------------------------------------------------------

    def score_responses(
        self, sample: Sample, responses: list[Response | None], failure: str
    ) -> dict[str, FilterRecord]:
        """Every filter's record of one document: lm-eval's filters, then its ``process_results``."""
        return score_document(self.lm_task, self._document(sample), responses, failure)

    def apply_filters(self, responses: Sequence[Response | None]) -> dict[str, list[Any]]:
        raise NotImplementedError("an lm-eval task is scored by score_responses (lm-eval's filters need the document)")

    # ---- identity -----------------------------------------------------------------------------------------

    def _identity(self, scoring: bool) -> dict[str, Any]:
        import lm_eval  # type: ignore[import-untyped]

        lm = self.lm_task
        requests = [
            [i.request_type, [str(a) for a in i.args[:1]], repr(i.args[1:])]
            for d in self.documents
            for i in d.instances
        ]
        payload: dict[str, Any] = {
            "lm_eval": getattr(lm_eval, "__version__", "?"),
            "requests": sha256_hex(requests),
            "docs": sha256_hex([json.dumps(s.doc, sort_keys=True, default=str) for s in self._all_samples()]),
            "repeats": self.repeats,
        }
        if scoring:
            payload["config"] = sha256_hex(json.dumps(lm.dump_config(), sort_keys=True, default=str))
        return payload

    @property
    def hash(self) -> str:
        """sha256 of lm-eval's requests, documents and task config (what changes a request or a value)."""
        if self._hash is None:
            self._hash = sha256_hex(self._identity(scoring=True))
        return self._hash

    @property
    def request_hash(self) -> str:
        """sha256 of lm-eval's requests and documents alone."""
        return sha256_hex(self._identity(scoring=False))

    def fewshot_pool_hash(self) -> str | None:
        return None

    def to_config(self) -> dict[str, Any]:
        """The task as run.json keeps it: its name and the lm-eval settings that rebuild it."""
        out: dict[str, Any] = {"name": self.name, "version": self.version, "repeats": self.repeats}
        if self.alias is not None:
            out["alias"] = self.alias
        if self.groups:
            out["groups"] = list(self.groups)
        out[CONFIG_KEY] = {"settings": self.settings.model_dump(mode="json"), "task": self.name}
        return out

    def info(self, n_selected: int) -> TaskInfo:
        """What the results code records about this task."""
        from assay.record import MetricInfo, TaskInfo

        return TaskInfo(
            name=self.name,
            version=self.version,
            task_hash=self.hash,
            config=self.to_config(),
            n_shot=self.n_shot,
            metrics=[
                MetricInfo(name=m.name, evaluator=m.evaluator.to_config(), higher_is_better=m.higher_is_better)
                for m in self.metrics
            ],
            filters=self.filters,
            repeats=self.repeats,
            groups=list(self.groups),
            n_docs=self.n_docs,
            n_selected=n_selected,
            system_instruction=self.system,
        )

    def __repr__(self) -> str:
        return f"LmevalTask({self.name!r}, sources={list(self.settings.sources)})"
