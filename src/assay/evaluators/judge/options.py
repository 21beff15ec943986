"""The options of ``llm_judge``, checked when the evaluator is built (a bad one names its key)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from assay.evaluators.base import Options
from assay.evaluators.judge.client import ModelSpec, check_spec, has_secret
from assay.evaluators.judge.parse import Scale


class RequireCalibration(Options):
    """``require_calibration``: the judge's figures count as calibrated only with a matching record."""

    min_kappa: float = Field(default=0.6, ge=-1.0, le=1.0, description="the κ a calibration record must reach")
    records: str | None = Field(
        default=None, description="a project-level records file (assay judge calibrate --save) besides the run's"
    )


class JudgeCallOptions(Options):
    """Options every judge evaluator shares: which judge model, how it is called, retried and cached."""

    model: ModelSpec | list[ModelSpec] = Field(
        description="the judge model spec (e.g. 'openai:gpt-4o' or {provider: openai, model: ..., base_url: ...}), "
        "or a list of them; never a secret (name an environment variable: api_key_env)"
    )
    temperature: float = Field(default=0.0, ge=0.0, le=2.0, description="the judge's sampling temperature")
    max_tokens: int | None = Field(default=None, ge=1, description="the most tokens a judge reply may hold")
    structured_output: bool = Field(
        default=True,
        description="send a strict JSON-schema response_format (JSON mode, then plain text, where a server refuses)",
    )
    cache: bool | None = Field(
        default=None,
        description="answer a judgement already made from the SQLite response cache: null follows the run's cache "
        "switch (off unless --cache), true or false decides for this judge",
    )
    cache_path: str | None = Field(default=None, description="the cache file (default: the run's)")
    max_attempts: int = Field(default=4, ge=1, le=20, description="attempts per judge call (retries on 429/5xx)")
    initial_backoff_s: float = Field(default=0.5, ge=0.0, description="the first retry's wait in seconds")
    timeout_s: float = Field(default=60.0, gt=0.0, description="seconds one judge call may take")
    concurrency: int = Field(default=8, ge=1, le=1024, description="outputs judged at once in evaluate_batch")
    require_calibration: RequireCalibration | None = Field(
        default=None,
        description="mark this judge's figures uncalibrated unless a calibration record of this very judge (same "
        "model, prompt hash, scale, options) reaches min_kappa: {min_kappa: 0.6, records: FILE}",
    )

    @field_validator("model")
    @classmethod
    def _valid_model(cls, value: Any) -> Any:
        specs = value if isinstance(value, list) else [value]
        if not specs:
            raise ValueError("name at least one judge model")
        for spec in specs:
            if not has_secret(spec):  # reported by setup(), whose message does not echo the value
                check_spec(spec, "model")
        return value


class JudgeOptions(JudgeCallOptions):
    """Options of llm_judge.

    ``model``: a judge spec or a list of them (several judges, combined by ``combine``: mean or majority);
    ``criteria`` / ``rubric``: what the judge checks; ``scale`` and ``pass_threshold`` (on the normalised score);
    ``reference``: ``target``, ``doc.FIELD`` or null; ``include_input``: show the task's input;
    ``mode``: ``grade`` or ``pairwise`` (against ``baseline``: ``output_b`` of expected, ``target`` or ``doc.FIELD``);
    ``samples`` (with ``temperature`` > 0): judge n times and average; ``evaluation_steps``: true to have the judge
    write G-Eval steps once per judge model and criteria, or the steps themselves; ``structured_output``: send a
    JSON-schema ``response_format``; ``cache``: answer a judgement already made from the SQLite response cache
    (null, the default: as the run's cache switch says, which is off unless ``--cache`` or ``cache=True``; ``true``
    turns it on for this judge, ``false`` off); ``cache_path``: the cache file (default: the run's); ``max_attempts``,
    ``initial_backoff_s``, ``timeout_s``: retries per call; ``concurrency``: judgements at once in ``evaluate_batch``;
    ``min_judges``: how many judges must give a usable judgement (default: all of them), below it the verdict is an
    error; ``score_from``: ``logprobs`` for G-Eval's probability-weighted score
    (:mod:`assay.evaluators.judge.logprobs`).
    """

    criteria: str = Field(min_length=1, description="what the judge checks the output against")
    rubric: str | None = Field(default=None, description="how to grade: what each grade means")
    scale: str | dict[str, float] = Field(
        default="binary", description="'binary', '1-5', '1-10', '0-1', or labels with their scores {label: score}"
    )
    pass_threshold: float = Field(
        default=0.5, ge=0.0, le=1.0, description="the normalised score (in [0, 1]) a verdict needs to pass"
    )
    reference: str | None = Field(
        default="target", description="the reference answer shown to the judge: 'target', 'doc.FIELD' or null"
    )
    include_input: bool = Field(default=True, description="show the judge the task's input")
    transcript: bool = Field(
        default=False,
        description="show the judge an agent's whole transcript, each message labelled and delimited (tool results "
        "are untrusted data like the output), not only its final output",
    )
    mode: Literal["grade", "pairwise"] = Field(
        default="grade", description="'grade' on the scale, or 'pairwise' against a baseline output"
    )
    baseline: str = Field(
        default="output_b",
        description="pairwise: the baseline output, 'output_b' (a key of expected), 'target' or 'doc.FIELD'",
    )
    combine: Literal["mean", "majority"] = Field(default="mean", description="how several judges' scores combine")
    samples: int = Field(default=1, ge=1, le=100, description="judge n times (temperature > 0) and average")
    evaluation_steps: bool | list[str] = Field(
        default=False, description="G-Eval steps: true to have the judge write them once, or the steps themselves"
    )
    min_judges: int | None = Field(
        default=None, ge=1, description="judges that must give a usable judgement (default: all), else an error"
    )
    score_from: Literal["reply", "logprobs"] = Field(
        default="reply",
        description="'reply': the grade the judge wrote; 'logprobs': G-Eval's probability-weighted score, the sum "
        "of each grade times its probability at the grade's token (asks the server for logprobs; integer scales)",
    )
    top_logprobs: int = Field(
        default=20, ge=2, le=20, description="with score_from: logprobs, how many alternatives per token to ask for"
    )

    @field_validator("scale")
    @classmethod
    def _valid_scale(cls, value: Any) -> Any:
        Scale.parse(value)
        return value

    @field_validator("reference")
    @classmethod
    def _valid_reference(cls, value: str | None) -> str | None:
        if value is None or value == "target" or (value.startswith("doc.") and len(value) > 4):
            return value
        raise ValueError("must be 'target', 'doc.<field>' or null")

    @field_validator("baseline")
    @classmethod
    def _valid_baseline(cls, value: str) -> str:
        if value in ("target", "output_b") or (value.startswith("doc.") and len(value) > 4):
            return value
        raise ValueError("must be 'output_b' (a key of expected), 'target' or 'doc.<field>'")

    @field_validator("evaluation_steps")
    @classmethod
    def _valid_steps(cls, value: bool | list[str]) -> bool | list[str]:
        if isinstance(value, list) and (not value or not all(isinstance(s, str) and s.strip() for s in value)):
            raise ValueError("give true (generate them) or a non-empty list of steps")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> JudgeOptions:
        if self.samples > 1 and self.temperature == 0:
            raise ValueError("'samples' > 1 repeats the same judgement unless 'temperature' > 0")
        n = len(self.model) if isinstance(self.model, list) else 1
        if self.min_judges is not None and self.min_judges > n:
            raise ValueError(f"'min_judges' is {self.min_judges}, but only {n} judge model(s) are named")
        if self.score_from == "logprobs" and (self.mode != "grade" or not Scale.parse(self.scale).integer):
            raise ValueError("'score_from: logprobs' weighs the grades of an integer scale (1-5, 1-10) in grade mode")
        return self
