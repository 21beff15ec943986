"""The evaluator contract: options validated at build time, ``evaluate`` per pair, ``evaluate_batch`` columnar."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, overload

from pydantic import BaseModel, ConfigDict, ValidationError

from assay.errors import ConfigError, EvaluationInputError
from assay.reductions import Aggregate, Reduction, reduce_scores
from assay.secrets import looks_secret
from assay.verdict import Verdict, clip_unit_scores

if TYPE_CHECKING:
    from assay.reductions import BoolArray, FloatArray


class Options(BaseModel):
    """Base for an evaluator's options: unknown keys are rejected, values are validated."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)


def _describe_validation_error(evaluator: str, options_cls: type[Options], err: ValidationError) -> str:
    problems = []
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"]) or "(options)"
        if e["type"] == "extra_forbidden":
            known = ", ".join(sorted(options_cls.model_fields)) or "none"
            problems.append(f"unknown option {key!r} (known options: {known})")
        else:
            msg = e["msg"].removeprefix("Value error, ")
            shown = "" if looks_secret(key) else f" (got {e.get('input')!r})"  # never echo a secret
            problems.append(f"option {key!r}: {msg}{shown}")
    return f"{evaluator}: " + "; ".join(problems)


class Evaluator(ABC):
    """Judges one output against what was expected and says why, with options fixed when built.

    Subclasses set ``name`` and ``Options`` and implement :meth:`check`. ``evaluate`` wraps ``check``
    so that an exception becomes an error verdict for that sample rather than stopping a run.
    """

    name: ClassVar[str] = "evaluator"
    Options: ClassVar[type[Options]] = Options

    def __init__(self, **options: Any) -> None:
        try:
            self.options = self.Options(**options)
        except ValidationError as err:
            raise ConfigError(_describe_validation_error(self.name, self.Options, err)) from None
        self.setup()

    def setup(self) -> None:
        """Prepare from the validated options (compile patterns, …); raise ConfigError naming the option."""

    @abstractmethod
    def check(self, actual: Any, expected: Any) -> Verdict:
        """Judge one output. May raise; :meth:`evaluate` turns exceptions into error verdicts."""

    def evaluate(self, actual: Any, expected: Any = None, *, context: Mapping[str, Any] | None = None) -> Verdict:
        """Judge one output; never raises for a bad output, returning an error verdict instead.

        ``context`` carries what the runner knows about the sample (``input``, ``prompt``, ``doc``,
        ``metadata``, ``target``); most evaluators ignore it, model-graded ones show it to the judge.
        """
        try:
            return self.check(actual, expected)
        except EvaluationInputError as exc:
            return Verdict.errored(str(exc))
        except Exception as exc:
            return Verdict.errored(f"{self.name} raised {type(exc).__name__}: {exc}")

    async def aevaluate(
        self, actual: Any, expected: Any = None, *, context: Mapping[str, Any] | None = None
    ) -> Verdict:
        """Async form; evaluators that call models (llm_judge) override it."""
        return self.evaluate(actual, expected, context=context)

    def fork_safe(self) -> bool:
        """Whether forked worker processes may score with this evaluator (offline runs use every core): False for
        evaluators that hold connections, threads or an accelerator (judges, embeddings, sandboxes)."""
        return type(self).aevaluate is Evaluator.aevaluate

    async def aclose(self) -> None:
        """Release what the evaluator holds (a judge's connections); the runner calls it when a run ends."""

    def evaluate_batch(self, actuals: Sequence[Any], expecteds: Sequence[Any] | None = None) -> BatchResult:
        """Judge many pairs. The default loops over :meth:`evaluate`; fast evaluators override it."""
        exp = _expecteds(actuals, expecteds)
        verdicts = [self.evaluate(a, e) for a, e in zip(actuals, exp, strict=True)]
        return BatchResult.from_verdicts(self.name, verdicts)

    def to_config(self) -> dict[str, Any]:
        """A JSON-safe dict from which :func:`assay.evaluators.registry.from_config` rebuilds an equal evaluator."""
        return {"name": self.name, **self.options.model_dump(mode="json", exclude_defaults=True)}

    def _config_or_none(self) -> dict[str, Any] | None:
        """The config, or None when an option cannot be serialised (a lambda, a class defined in a function)."""
        try:
            return self.to_config()
        except (ConfigError, ValueError, TypeError):
            return None

    def __repr__(self) -> str:
        config = self._config_or_none()
        if config is None:
            return f"{type(self).__name__}(<options without a config form>)"
        opts = ", ".join(f"{k}={v!r}" for k, v in config.items() if k != "name")
        return f"{type(self).__name__}({opts})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return False
        assert isinstance(other, Evaluator)
        mine, theirs = self._config_or_none(), other._config_or_none()
        return self is other if mine is None or theirs is None else mine == theirs

    def __hash__(self) -> int:
        config = self._config_or_none()
        return id(self) if config is None else hash((type(self).__name__, repr(config)))


def _expecteds(actuals: Sequence[Any], expecteds: Sequence[Any] | None) -> Sequence[Any]:
    if expecteds is None:
        return [None] * len(actuals)
    if len(expecteds) != len(actuals):
        raise ValueError(f"evaluate_batch: {len(actuals)} actuals but {len(expecteds)} expecteds")
    return expecteds


class BatchResult(Sequence[Verdict]):
    """Columnar verdicts: ``scores`` (NaN for errors) and ``passed`` arrays; full Verdicts built on access.

    Scores within :data:`assay.verdict.SCORE_TOLERANCE` outside [0, 1] are clipped (in place) as a Verdict clips
    them, so a batch and its per-pair verdicts agree.

    A million verdicts cost two arrays, not a million objects. Indexing rebuilds the one Verdict
    (reason, feedback, details) from the evaluator, or returns a stored one where the batch kept them.
    """

    def __init__(
        self,
        evaluator: str,
        scores: FloatArray,
        passed: BoolArray,
        build: Callable[[int], Verdict] | None = None,
        verdicts: Sequence[Verdict] | None = None,
        fast_dict: Callable[[int], dict[str, Any]] | None = None,
        fast: BoolArray | None = None,
    ) -> None:
        if scores.shape != passed.shape:
            raise ValueError("scores and passed must have the same shape")
        if build is None and verdicts is None:
            raise ValueError("BatchResult needs either a build function or the verdicts")
        clip_unit_scores(scores)  # float rounding just outside [0, 1] is clipped, as a Verdict clips it
        self.evaluator = evaluator
        self.scores = scores
        self.passed = passed
        self._build = build
        self._verdicts = verdicts
        self._fast_dict = fast_dict
        self._fast = fast

    @classmethod
    def from_verdicts(cls, evaluator: str, verdicts: Sequence[Verdict]) -> BatchResult:
        import numpy as np

        scores = np.fromiter((v.score for v in verdicts), dtype=np.float64, count=len(verdicts))
        passed = np.fromiter((v.passed for v in verdicts), dtype=np.bool_, count=len(verdicts))
        return cls(evaluator, scores, passed, verdicts=list(verdicts))

    @classmethod
    def lazy(
        cls,
        evaluator: Evaluator,
        scores: FloatArray,
        passed: BoolArray,
        actuals: Sequence[Any],
        expecteds: Sequence[Any],
        *,
        fast_dict: Callable[[int], dict[str, Any]] | None = None,
        fast: BoolArray | None = None,
    ) -> BatchResult:
        """A batch whose verdict ``i`` is rebuilt on access by evaluating pair ``i`` again (``fast_dict`` and
        ``fast``: see :meth:`to_dicts`)."""
        return cls(
            evaluator.name,
            scores,
            passed,
            build=lambda i: evaluator.evaluate(actuals[i], expecteds[i]),
            fast_dict=fast_dict,
            fast=fast,
        )

    def to_dicts(self) -> list[dict[str, Any]]:
        """Every verdict's JSON form (:meth:`Verdict.to_dict`), in bulk.

        Where the evaluator gave ``fast_dict``, a pair judged by its vectorised path (``fast``, all pairs when
        None) gets its dict from that (built from the batch's columns, without judging the pair again); only the
        others are rebuilt as Verdicts.
        """
        if self._fast_dict is None or self._verdicts is not None:
            return [v.to_dict() for v in self]
        fast_dict, build = self._fast_dict, self.__getitem__
        if self._fast is None:
            return [fast_dict(i) for i in range(len(self))]
        return [fast_dict(i) if ok else build(i).to_dict() for i, ok in enumerate(self._fast.tolist())]

    @property
    def errored(self) -> BoolArray:
        """Mask of samples the evaluator could not judge."""
        import numpy as np

        return np.isnan(self.scores)

    def __len__(self) -> int:
        return int(self.scores.size)

    @overload
    def __getitem__(self, index: int) -> Verdict: ...
    @overload
    def __getitem__(self, index: slice) -> list[Verdict]: ...
    def __getitem__(self, index: int | slice) -> Verdict | list[Verdict]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        if self._verdicts is not None:
            return self._verdicts[index]
        assert self._build is not None
        return self._build(index)

    def reduce(self, reduction: str | Reduction = "mean", metric: str | None = None) -> Aggregate:
        """Aggregate the batch, excluding (and counting) error verdicts."""
        return reduce_scores(metric or self.evaluator, self.scores, self.passed, reduction)

    def __repr__(self) -> str:
        return f"BatchResult({self.evaluator!r}, n={len(self)}, errored={int(self.errored.sum())})"


def as_text(actual: Any, evaluator: str) -> str:
    """The text of an output: a string, a response-like object's ``.text``, or '' for None."""
    if isinstance(actual, str):
        return actual
    if actual is None:
        return ""
    text = getattr(actual, "text", None)
    if isinstance(text, str) or (text is None and hasattr(actual, "text")):
        return text or ""
    if isinstance(actual, dict) and isinstance(actual.get("text"), str):
        return str(actual["text"])
    raise EvaluationInputError(f"{evaluator} expects text output, got {type(actual).__name__}")


def expected_list(expected: Any) -> list[Any]:
    """Acceptable answers as a list (a single expected value becomes a one-item list)."""
    if isinstance(expected, list | tuple):
        return list(expected)
    return [expected]


def expected_texts(expected: Any) -> list[str]:
    """Acceptable answers as strings (numbers become their text, None becomes '')."""
    return ["" if e is None else e if isinstance(e, str) else str(e) for e in expected_list(expected)]
