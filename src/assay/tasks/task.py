"""The Task: dataset + field mapping + prompt + few-shot + generation settings + filters + metrics + repeats."""

from __future__ import annotations

import random
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from assay.data.readers import Dataset, read_dataset
from assay.data.spec import DatasetSpec
from assay.errors import ConfigError, DataError
from assay.hashing import sha256_hex
from assay.models.base import Message, Request, Response
from assay.tasks import identity
from assay.tasks.config import TaskConfig, check_tools, expand_shorthands, validate_config
from assay.tasks.fewshot import FewshotSampler, shot_target
from assay.tasks.fields import FieldMap
from assay.tasks.filters import NO_FILTER, FilterPipeline, build_step
from assay.tasks.lazy_samples import LazySamples, RowCheck, SampleView
from assay.tasks.loglikelihood import DEFAULT_METRICS, ChoiceSource, QueryBuilder, gold_text
from assay.tasks.loglikelihood import check_config as check_loglikelihood_config
from assay.tasks.metrics import MetricSpec, build_metrics, expected_value
from assay.tasks.prompt import Prompt, RenderError
from assay.tasks.reasoning import DEFAULT_DELIMITERS, ReasoningSplitter
from assay.tasks.sample import Sample, has_path
from assay.tasks.taskfile import ConfigContext, KeyPath, read_task_file
from assay.tasks.template import Template, compile_template, describe_render_error

if TYPE_CHECKING:
    from assay.agents.taskspec import AgentSpec
    from assay.evaluators.base import Evaluator
    from assay.record import FilterRecord, TaskInfo


class Task:
    """An evaluation task, defined in YAML (:meth:`from_yaml`, :func:`assay.tasks.load_task`) or in Python.

    The configuration is checked when the task is built; the dataset is read (once) and the first sample
    rendered by :meth:`validate`, which :meth:`from_yaml`, :meth:`samples` and :attr:`hash` call, so that
    every error surfaces before anything runs.
    """

    # True for a task another tool's task layer builds and scores (an lm-eval task: lm-eval builds every request
    # when it is loaded, its filters and process_results score each sample through :meth:`score_responses`); the
    # runner then renders no prompt and applies no pipeline or metric of its own
    external: ClassVar[bool] = False
    # takes a reasoning model's reasoning out of each reply before filters and evaluators; None: scored as it came
    # (a task with ``reasoning: {strip: false}``, one that scores given text, or an external task)
    reasoning: ReasoningSplitter | None = None
    _unfiltered: FilterPipeline = NO_FILTER

    def __init__(
        self,
        name: str,
        dataset: str | Path | list[dict[str, Any]] | dict[str, Any] | DatasetSpec,
        *,
        template: str | None = None,
        messages: list[dict[str, Any]] | None = None,
        system: str | None = None,
        fields: dict[str, Any] | None = None,
        evaluators: Sequence[Evaluator | MetricSpec | dict[str, Any] | str] | None = None,
        metrics: Sequence[Evaluator | MetricSpec | dict[str, Any] | str] | None = None,
        filters: Sequence[FilterPipeline | dict[str, Any]] | None = None,
        fewshot: dict[str, Any] | int | None = None,
        generation: dict[str, Any] | None = None,
        tools: list[dict[str, Any] | str] | None = None,
        agent: dict[str, Any] | None = None,
        environment: dict[str, Any] | None = None,
        response_format: dict[str, Any] | None = None,
        repeats: int = 1,
        repeat_reduction: str | None = None,
        version: str = "1.0",
        alias: str | None = None,
        description: str | None = None,
        tags: list[str] | None = None,
        groups: list[str] | None = None,
        model: dict[str, Any] | None = None,
        reasoning: dict[str, Any] | bool | None = None,
        headline: str | dict[str, Any] | None = None,
        base_dir: str | Path | None = None,
    ) -> None:
        raw: dict[str, Any] = {
            "name": name,
            "dataset": dataset,
            "template": template,
            "messages": messages,
            "system": system,
            "fields": fields,
            "evaluators": list(evaluators) if evaluators is not None else None,
            "metrics": list(metrics) if metrics is not None else None,
            "filters": [f.to_config() if isinstance(f, FilterPipeline) else f for f in filters or ()] or None,
            "fewshot": fewshot,
            "generation": generation,
            "tools": tools,
            "agent": agent,
            "environment": environment,
            "response_format": response_format,
            "repeats": repeats,
            "repeat_reduction": repeat_reduction,
            "version": version,
            "alias": alias,
            "description": description,
            "tags": tags,
            "groups": groups,
            "model": model,
            "reasoning": reasoning,
            "headline": headline,
        }
        raw = {k: v for k, v in raw.items() if v is not None}
        ctx = ConfigContext(f"task {name!r}", base_dir=Path(base_dir) if base_dir is not None else None)
        self._setup(raw, ctx)

    # ---- construction ------------------------------------------------------------------------------

    @classmethod
    def from_yaml(cls, path: str | Path) -> Task:
        """Load, check and validate a YAML task file (relative dataset paths are relative to the file)."""
        raw, ctx = read_task_file(path)
        task = cls._from_raw(raw, ctx)
        task.validate()
        return task

    @classmethod
    def from_config(
        cls, config: dict[str, Any], *, base_dir: str | Path | None = None, source: str | None = None
    ) -> Task:
        """Build and validate a task from a config dict (the YAML schema, or :meth:`to_config` output)."""
        if not isinstance(config, dict):
            raise ConfigError(f"a task config is a mapping, got {type(config).__name__}")
        if "task_dir" in config:  # written by to_config for tasks with tools: the task file's folder
            config = dict(config)
            task_dir = config.pop("task_dir")
            base_dir = base_dir if base_dir is not None else task_dir
        ctx = ConfigContext(
            source or f"task {config.get('name', '?')!r}", base_dir=Path(base_dir) if base_dir is not None else None
        )
        task = cls._from_raw(config, ctx)
        task.validate()
        return task

    @classmethod
    def _from_raw(cls, raw: dict[str, Any], ctx: ConfigContext) -> Task:
        task = cls.__new__(cls)
        task._setup(raw, ctx)
        return task

    @property
    def base_dir(self) -> Path | None:
        """The folder relative paths of the task resolve against (the task file's), if known."""
        return self._ctx.base_dir

    def _setup(self, raw: dict[str, Any], ctx: ConfigContext) -> None:
        self._ctx = ctx
        cfg = validate_config(expand_shorthands(raw, ctx), ctx)
        self.config: TaskConfig = cfg
        self.name: str = cfg.name
        self.alias: str | None = cfg.alias
        self.version: str = cfg.version
        self.description: str | None = cfg.description
        self.tags: list[str] = list(cfg.tags)
        self.groups: list[str] = list(cfg.groups)
        self.repeats: int = cfg.repeats
        self.repeat_reduction: str | None = cfg.repeat_reduction
        self.model: dict[str, Any] | None = cfg.model
        self.models: dict[str, dict[str, Any]] | None = cfg.models
        self.generation: dict[str, Any] = cfg.generation.params()
        self.tools: list[dict[str, Any] | str] | None = cfg.tools
        self.response_format: dict[str, Any] | None = cfg.response_format
        self.system: str | None = cfg.system
        self.fields = FieldMap(cfg.fields.id, cfg.fields.input, cfg.fields.target, dict(cfg.fields.metadata))
        self.dataset_spec: DatasetSpec = self._resolve_spec(cfg.dataset, ("dataset",))
        self.fewshot_spec: DatasetSpec | None = None
        if cfg.fewshot is not None and cfg.fewshot.source is not None:
            self.fewshot_spec = self._resolve_spec(cfg.fewshot.source, ("fewshot", "source"))
        self.output_type: str = cfg.output_type
        check_loglikelihood_config(cfg, ctx)
        self.prompt = self._build_prompt(cfg)
        self.reasoning = self._build_reasoning(cfg)
        self._pipelines = self._build_filters(cfg)
        answer = self.reasoning.answer if self.reasoning is not None else None
        self._unfiltered = NO_FILTER if answer is None else FilterPipeline(NO_FILTER.name, answer=answer)
        entries = cfg.evaluators or list(DEFAULT_METRICS.get(cfg.output_type, ()))  # lm-eval's defaults
        self.metrics: list[MetricSpec] = build_metrics(entries, ctx, self.filters)
        self.tests_metric: str | None = self._tests_metric(cfg)
        self._queries = self._build_queries(cfg)
        check_tools(cfg, ctx)
        self.agent: AgentSpec | None = None  # unless the task has runnable tools, an agent:, user: or environment:
        if cfg.tools or cfg.agent is not None or cfg.user is not None or cfg.environment is not None:
            from assay.agents.taskspec import build_agent  # a plain task imports no agent or tool module

            self.agent = build_agent(cfg, ctx)
        self._dataset: Dataset | None = None
        self._samples: Sequence[Sample] | None = None
        self._sampler: FewshotSampler | None = None
        self._pool_dataset: Dataset | None = None
        self._hash: str | None = None
        self._validated = False
        self._last_render: tuple[Sample, list[Message]] | None = None

    def _tests_metric(self, cfg: TaskConfig) -> str | None:
        """The metric whose ``passed`` judges each sample as a test (``headline: tests``), else None."""
        if cfg.headline is None or cfg.headline == "metrics":
            return None
        names = [m.name for m in self.metrics]
        if cfg.headline == "tests":
            if len(names) != 1:
                raise self._ctx.error(
                    ("headline",),
                    f"the task has {len(names)} metrics ({', '.join(names)}); name the one that judges each test: "
                    f"headline: {{tests: {names[0] if names else 'METRIC'}}}",
                )
            return names[0]
        assert not isinstance(cfg.headline, str)
        if cfg.headline.tests not in names:
            raise self._ctx.error(
                ("headline", "tests"), f"no metric {cfg.headline.tests!r} in this task; its metrics: {', '.join(names)}"
            )
        return cfg.headline.tests

    def _resolve_spec(self, spec: DatasetSpec, path: KeyPath) -> DatasetSpec:
        resolved = spec.resolve(self._ctx.base_dir)
        try:
            fmt = resolved.resolved_format()
        except ConfigError as err:
            raise self._ctx.error((*path, "path"), str(err)) from None
        if resolved.path is not None:
            p = Path(resolved.path)
            exists = p.is_dir() if fmt == "hf" else p.is_file()
            if not exists:
                what = "folder" if fmt == "hf" else "file"
                raise self._ctx.error((*path, "path"), f"dataset {what} not found: {resolved.path}")
        return resolved

    def _template(self, source: str, path: KeyPath) -> Template:
        dialect = self.config.template_dialect
        if dialect is None:
            return compile_template(source, self._ctx.where(path))
        return compile_template(source, self._ctx.where(path), dialect.name, dialect.env)

    def _build_prompt(self, cfg: TaskConfig) -> Prompt:
        if cfg.output_type == "loglikelihood_rolling":  # no prompt: the target is scored alone
            return Prompt(self._template("", ("fields", "target")), row_check=self._check_row)
        template = self._template(cfg.template, ("template",)) if cfg.template is not None else None
        system = self._template(cfg.system, ("system",)) if cfg.system is not None else None
        messages = None
        if cfg.messages is not None:
            messages = tuple(
                (m.role, self._template(m.content, ("messages", i, "content"))) for i, m in enumerate(cfg.messages)
            )
        answer = self._gold_text if cfg.output_type == "multiple_choice" else None
        fixed = isinstance(cfg.choices, list | dict)  # the same choices for every row: nothing to check per row
        check = self._check_row if cfg.output_type != "generate_until" and not fixed else None
        return Prompt(template, system, messages, cfg.fewshot, answer=answer, row_check=check)

    def _check_row(self, sample: Sample) -> None:
        """A row's choices or scored text can be read (wherever its prompt is checked before a run)."""
        if self._queries is not None:
            self._queries.query(sample, "")

    def _build_queries(self, cfg: TaskConfig) -> QueryBuilder | None:
        if cfg.output_type == "generate_until":
            return None
        source = ChoiceSource.build(cfg.choices, self._ctx) if cfg.output_type == "multiple_choice" else None
        mutual = any(m.evaluator.name == "acc_mutual_info" for m in self.metrics)
        return QueryBuilder(cfg.output_type, source, cfg.target_delimiter, mutual)

    def _gold_text(self, shot: Sample) -> str:
        """A multiple-choice few-shot example's answer: its gold choice's text (lm-eval's layout)."""
        assert self._queries is not None and self._queries.source is not None
        text = gold_text(shot, self._queries.source.choices(shot))
        return text if text is not None else shot_target(shot)

    @staticmethod
    def _build_reasoning(cfg: TaskConfig) -> ReasoningSplitter | None:
        """What takes the reasoning out of a generated reply (None when it is scored whole)."""
        rc = cfg.reasoning
        if cfg.output_type != "generate_until" or not rc.strip:
            return None
        return ReasoningSplitter(DEFAULT_DELIMITERS if rc.delimiters is None else rc.delimiters)

    def _build_filters(self, cfg: TaskConfig) -> list[FilterPipeline]:
        answer = self.reasoning.answer if self.reasoning is not None else None
        pipelines: list[FilterPipeline] = []
        first: dict[str, int] = {}
        for i, fc in enumerate(cfg.filters):
            j = first.setdefault(fc.name, i)
            if j != i:
                raise self._ctx.error(
                    ("filters", i, "name"), f"filter pipeline {fc.name!r} is already defined by filters[{j}]"
                )
            if fc.name == "none" and fc.steps:
                raise self._ctx.error(
                    ("filters", i, "name"), "'none' names the unfiltered responses; choose another name"
                )
            steps = []
            for k, step in enumerate(fc.steps):
                path: KeyPath = ("filters", i, "steps", k)
                try:
                    steps.append(build_step(step))
                except ConfigError as err:
                    message = str(err)
                    option = next((key for key in step if f"option {key!r}" in message), None)
                    at = (*path, option) if option else (*path, "type") if "filter step type" in message else path
                    raise self._ctx.error(at, message) from None
            pipelines.append(FilterPipeline(fc.name, tuple(steps), answer=answer))
        return pipelines

    # ---- data -------------------------------------------------------------------------------------

    def _read(self, spec: DatasetSpec, path: KeyPath, visit: RowCheck | None = None) -> Dataset:
        if spec.resolved_format() == "inline":
            return read_dataset(spec, inline_source=self._ctx.source, inline_lines=self._ctx.row_lines((*path, "rows")))
        return read_dataset(spec, visit=visit)

    def _all_samples(self) -> Sequence[Sample]:
        if self._samples is None:
            # rows read on demand are checked (ids, fields, whether their prompt may fail) as the file is read
            screen = self.prompt.row_cannot_fail if self.config.fewshot is None and self.prompt.screens else None
            checked = RowCheck(self.fields, screen)
            self._dataset = self._read(self.dataset_spec, ("dataset",), checked)
            self._samples = self.fields.samples(self._dataset, checked)
        return self._samples

    @property
    def dataset(self) -> Dataset:
        """The dataset as read (read on first use)."""
        self._all_samples()
        assert self._dataset is not None
        return self._dataset

    @property
    def n_docs(self) -> int:
        """Dataset size before any limit."""
        return len(self._all_samples())

    def _fewshot(self) -> FewshotSampler | None:
        cfg = self.config.fewshot
        if cfg is None or cfg.shots == 0:
            return None
        if self._sampler is None:
            if cfg.fixed is not None:
                pool_data = Dataset(list(cfg.fixed), self._ctx.source, self._ctx.row_lines(("fewshot", "fixed")))
                pool, same = self.fields.samples(pool_data), False
            elif self.fewshot_spec is not None:
                pool_data = self._read(self.fewshot_spec, ("fewshot", "source"))
                pool, same = self.fields.samples(pool_data), False
            else:
                pool_data, pool, same = self.dataset, self._all_samples(), True
            sampler = FewshotSampler(cfg, pool, same=same)
            if sampler.n > sampler.available():
                where = "the dataset (a sample is never its own example)" if same else pool_data.source
                raise self._ctx.error(
                    ("fewshot", "n"), f"{sampler.n} examples asked for but {where} offers only {sampler.available()}"
                )
            self._pool_dataset, self._sampler = pool_data, sampler
        return self._sampler

    def validate(self) -> None:
        """Read the dataset(s) and render the first sample, so that data and template errors surface now."""
        if self._validated:
            return
        samples = self._all_samples()
        if not samples:
            raise self._ctx.error(("dataset",), f"the dataset has no rows ({self.dataset.source})")
        self._fewshot()
        first = samples[0]
        for i, metric in enumerate(self.metrics):
            path: KeyPath = ("evaluators", i, "expected")
            if metric.expected == "target" and self.fields.target is None and not has_path(first.doc, "target"):
                raise self._ctx.error(
                    ("evaluators", i),
                    f"{metric.name} compares with the target, but the rows have no 'target' field; set fields.target "
                    "to the answer field, or expected: none / doc.<field> on this evaluator",
                )
            if metric.expected not in ("target", "none"):
                try:
                    expected_value(first, metric.expected)
                except DataError:
                    source, _, field = metric.expected.partition(".")
                    raise self._ctx.error(
                        path, f"the first row ({self.dataset.where(0)}) has no {source} field {field!r}"
                    ) from None
        try:
            if self.output_type != "loglikelihood_rolling":  # a rolling task scores its target alone: no prompt
                self._render(first)
        except RenderError as err:
            raise self._render_error(err, first, ConfigError) from None
        if self._queries is not None:
            try:
                self._queries.query(first, "")
            except (DataError, RenderError) as err:
                key = "choices" if self.output_type == "multiple_choice" else "fields"
                detail = err.error if isinstance(err, RenderError) else err
                raise self._ctx.error((key,), f"the first row ({self.dataset.where(0)}): {detail}") from None
        self._validated = True

    def samples(self, limit: int | None = None, shuffle_seed: int | None = None) -> Sequence[Sample]:
        """The samples to evaluate: all, or the first ``limit`` (after a seeded shuffle when ``shuffle_seed``).

        A list; for a large JSONL dataset a view of samples made on demand, so that memory stays flat."""
        self.validate()
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        everything = self._all_samples()
        if isinstance(everything, LazySamples):
            order: Sequence[int] = range(len(everything))
            if shuffle_seed is not None:  # the permutation shuffling the list would make: it depends on the length
                shuffled = list(order)
                random.Random(shuffle_seed).shuffle(shuffled)
                order = array("q", shuffled)
            return SampleView(everything, order[:limit] if limit is not None else order)
        samples = list(everything)
        if shuffle_seed is not None:
            random.Random(shuffle_seed).shuffle(samples)
        if limit is not None:
            samples = samples[:limit]
        return samples

    # ---- requests ---------------------------------------------------------------------------------

    def fewshot_for(self, sample: Sample) -> list[Sample]:
        """The few-shot examples shown before ``sample`` (the same for every repeat)."""
        sampler = self._fewshot()
        return sampler.select(sample) if sampler is not None else []

    def _render(self, sample: Sample) -> list[Message]:
        last = self._last_render  # repeats of one sample are built one after another: render once
        if last is not None and last[0] is sample:
            return last[1]
        messages = self.prompt.render(sample, self.fewshot_for(sample))
        self._last_render = (sample, messages)
        return messages

    def _render_error(self, err: RenderError, sample: Sample, kind: type[Exception]) -> Exception:
        if err.example is not None and self._pool_dataset is not None:
            row = f"few-shot example at {self._pool_dataset.where(err.example.doc_id)}"
        elif self._dataset is not None and 0 <= sample.doc_id < len(self._dataset):
            row = self._dataset.where(sample.doc_id)
        else:
            row = f"sample {sample.id!r}"
        if err.template is None:
            if err.example is None and kind is ConfigError:  # no template and an input that cannot be a prompt
                return kind(f"{self._ctx.source}: {err.error} ({row}); set 'template' or 'messages', or fields.input")
            return DataError(f"{row}: {err.error}")
        detail = (
            describe_render_error(err.error, err.template, err.context)
            if isinstance(err.error, Exception)
            else str(err.error)
        )
        if kind is ConfigError:
            return kind(f"{err.template.label}: {detail} (rendering {row})")
        return kind(f"{row}: rendering {err.template.label}: {detail}")

    def build_request(self, sample: Sample, repeat: int = 0) -> Request:
        """The request for one sample and repeat: rendered messages, generation params, tools, response format.

        With ``repeats > 1`` and a fixed ``generation.seed``, repeat ``r`` is sent with ``seed + r`` so repeats
        are distinct draws (a provider honouring the seed would otherwise return the same answer each time).
        """
        if not 0 <= repeat < self.repeats:
            raise ValueError(f"repeat must be in [0, {self.repeats}), got {repeat}")
        if self._queries is not None:
            return self._scoring_request(sample)
        try:
            messages = self._render(sample)
        except RenderError as err:
            raise self._render_error(err, sample, DataError) from None
        return Request(
            sample_id=sample.id,
            messages=messages,
            params=self.params_for(repeat),
            tools=[t if isinstance(t, dict) else {"tool": t} for t in self.tools] if self.tools else self.tools,
            response_format=self.response_format,
            repeat=repeat,
            doc=sample.doc,
            metadata=sample.metadata,
        )

    def _scoring_request(self, sample: Sample) -> Request:
        """The request of a task that scores text: the rendered prompt is the context (none when rolling)."""
        assert self._queries is not None
        messages: list[Message] = []
        if self.output_type != "loglikelihood_rolling":
            try:
                messages = self._render(sample)
            except RenderError as err:
                raise self._render_error(err, sample, DataError) from None
        context = str(messages[0].get("content") or "") if messages else ""
        try:
            query = self._queries.query(sample, context)
        except RenderError as err:
            raise self._render_error(err, sample, DataError) from None
        except DataError as err:
            where = self._dataset.where(sample.doc_id) if self._dataset is not None else f"sample {sample.id!r}"
            raise DataError(f"{where}: {err}") from None
        return Request(
            sample_id=sample.id, messages=messages, doc=sample.doc, metadata=sample.metadata, loglikelihood=query
        )

    def params_for(self, repeat: int = 0) -> dict[str, Any]:
        """Generation parameters of repeat ``repeat`` (the seed offset by the repeat index when repeating)."""
        params = dict(self.generation)
        if self.repeats > 1 and isinstance(params.get("seed"), int):
            params["seed"] += repeat
        return params

    @staticmethod
    def prompt_text(request: Request) -> str:
        """The prompt as one text: a lone user message's content, else ``role: content`` lines."""
        msgs = request.messages
        if len(msgs) == 1 and msgs[0].get("role") == "user" and isinstance(msgs[0].get("content"), str):
            return str(msgs[0]["content"])
        return "\n".join(f"{m.get('role')}: {_content_text(m.get('content'))}" for m in msgs)

    # ---- filters and metrics ----------------------------------------------------------------------

    @property
    def filters(self) -> list[str]:
        """Names of the filter pipelines (``["none"]`` when none are configured)."""
        return [p.name for p in self._pipelines] or [NO_FILTER.name]

    @property
    def pipelines(self) -> list[FilterPipeline]:
        """The filter pipelines (the ``none`` pipeline, the replies as they came, when none are configured); each
        sees the replies with their reasoning taken out (:attr:`reasoning`)."""
        return list(self._pipelines) or [self._unfiltered]

    @property
    def configured_pipelines(self) -> list[FilterPipeline]:
        """The filter pipelines as configured (empty when none are: the task then uses the ``none`` pipeline)."""
        return list(self._pipelines)

    def score_responses(
        self, sample: Sample, responses: list[Response | None], failure: str
    ) -> dict[str, FilterRecord]:
        """Every filter's record of one sample, for an ``external`` task (the runner's own scoring
        applies :attr:`pipelines` and :attr:`metrics` to every other task)."""
        raise NotImplementedError(f"task {self.name!r} is scored by its pipelines and metrics")

    def reasoning_of(self, responses: Sequence[Response | None]) -> list[str | None]:
        """The reasoning taken out of each response before it is scored (what its record keeps: an empty list when
        there was none, or the task takes none out)."""
        if self.reasoning is None or self.external:
            return []
        return self.reasoning.reasoning(responses)

    def apply_filters(self, responses: Sequence[Response | None]) -> dict[str, list[Any]]:
        """Each pipeline's filtered values for one sample's responses (one per repeat, None where it failed)."""
        return {p.name: p.apply(responses) for p in self.pipelines}

    def metric(self, name: str) -> MetricSpec:
        """The metric named ``name``."""
        for m in self.metrics:
            if m.name == name:
                return m
        raise KeyError(f"task {self.name!r} has no metric {name!r}; metrics: {', '.join(m.name for m in self.metrics)}")

    def expected_for(self, sample: Sample, metric: MetricSpec | str) -> Any:
        """What ``metric`` compares ``sample``'s output with (target, nothing, or a doc/metadata field)."""
        spec = self.metric(metric) if isinstance(metric, str) else metric
        where = ""
        if self._dataset is not None and 0 <= sample.doc_id < len(self._dataset):
            where = self._dataset.where(sample.doc_id)
        return expected_value(sample, spec.expected, where)

    # ---- identity -----------------------------------------------------------------------------------

    @property
    def n_shot(self) -> int:
        """Few-shot examples per prompt."""
        return self.config.fewshot.shots if self.config.fewshot is not None else 0

    @property
    def hash(self) -> str:
        """sha256 (hex) of everything that changes the requests or the scoring; not names, tags or descriptions."""
        if self._hash is None:
            self.validate()
            self._hash = sha256_hex(identity.hash_payload(self))
        return self._hash

    @property
    def request_hash(self) -> str:
        """sha256 (hex) of what shapes the requests alone (data, prompt, few-shot, generation, tools, repeats):
        equal for two tasks that differ only in filters or evaluators, so one's logged answers fit the other."""
        self.validate()
        return sha256_hex(identity.request_payload(self))

    def fewshot_pool_hash(self) -> str | None:
        """The content hash of the few-shot pool read from its own source, else None (fixed rows or the dataset)."""
        if self.fewshot_spec is None or self._fewshot() is None:
            return None
        assert self._pool_dataset is not None
        return self._pool_dataset.content_hash

    def to_config(self) -> dict[str, Any]:
        """The task as a JSON-safe config that :meth:`from_config` rebuilds (dataset paths made absolute)."""
        return identity.task_config(self)

    def info(self, n_selected: int) -> TaskInfo:
        """What the results code records about this task."""
        return identity.task_info(self, n_selected)

    def config_error(self, path: KeyPath, message: str) -> ConfigError:
        """A ConfigError naming this task's file, the line and the key at ``path`` (e.g. ``("model",)``)."""
        return self._ctx.error(path, message)

    def __repr__(self) -> str:
        metrics = ", ".join(m.name for m in self.metrics)
        return f"Task({self.name!r}, repeats={self.repeats}, metrics=[{metrics}], filters={self.filters})"


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    from assay.hashing import canonical_json

    return canonical_json(content)
