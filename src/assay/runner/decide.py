"""``--decide``: stop a run as soon as a claim about a metric is decided, at a stated error rate.

``METRIC>=VALUE`` claims the metric's mean is at least VALUE; ``METRIC>=baseline-D`` claims the run is not worse
than a baseline run (``--decide-baseline``) by more than D, on samples paired by sample id. Samples run in a random
order (seeded); after each finished sample, its value updates an anytime-valid confidence sequence
(:mod:`assay.results.sequential`), and the run stops the moment the sequence decides the claim either way, or at
the data's end. A sample whose metric errored is neither a pass nor a fail: it is counted apart and never updates
the sequence. The decision, the samples used and the samples saved are recorded in ``run.json``
(``config.decision``); the exit code is the decision (0 holds, 1 fails, 4 undecided at the data's end).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.errors import ConfigError
from assay.results.sequential import BettingSequence, Decision
from assay.runner.outcomes import Decided, OutOfScale

if TYPE_CHECKING:
    from assay.record import SampleRecord
    from assay.runner.settings import RunSettings
    from assay.tasks import Task

_SPEC = re.compile(
    r"^\s*(?:(?P<task>[^/]+)/)?(?P<metric>[^,>=\s]+)(?:,(?P<filter>[^>=\s]+))?\s*>=\s*"
    r"(?:(?P<baseline>baseline)\s*(?:-\s*(?P<margin>[0-9.eE+-]+))?|(?P<value>[0-9.eE+-]+))\s*$"
)
UNBOUNDED = frozenset({"perplexity", "word_perplexity", "byte_perplexity", "bits_per_byte"})


@dataclass(frozen=True)
class DecideSpec:
    """A parsed ``--decide`` claim."""

    text: str
    metric: str
    task: str | None = None
    filter: str | None = None
    threshold: float | None = None  # METRIC>=VALUE
    margin: float | None = None  # METRIC>=baseline-D (0 for METRIC>=baseline)


def parse_decide(text: str) -> DecideSpec:
    """``[TASK/]METRIC[,FILTER]>=VALUE`` or ``...>=baseline[-D]``; a bad claim is a ConfigError naming the form."""
    match = _SPEC.match(text)
    if match is None:
        raise ConfigError(
            f"--decide {text!r}: expected METRIC>=VALUE (e.g. exact_match>=0.8) or METRIC>=baseline-D "
            "(e.g. exact_match>=baseline-0.02), optionally TASK/METRIC,FILTER"
        )
    try:
        if match["baseline"]:
            margin = float(match["margin"]) if match["margin"] else 0.0
            if not 0.0 <= margin <= 1.0:
                raise ValueError
            return DecideSpec(text, match["metric"], match["task"], match["filter"], margin=margin)
        value = float(match["value"])
        if not 0.0 <= value <= 1.0:
            raise ValueError
    except ValueError:
        raise ConfigError(f"--decide {text!r}: the value must be a number in [0, 1] (the metric's 0-1 scale)") from None
    return DecideSpec(text, match["metric"], match["task"], match["filter"], threshold=value)


class Gate:
    """Watches finished samples of one metric and raises :class:`Decided` once the claim is decided."""

    def __init__(
        self,
        spec: DecideSpec,
        tasks: Sequence[Task],
        *,
        alpha: float = 0.05,
        baseline: Mapping[str, float] | None = None,
        n_selected: int = 0,
    ) -> None:
        if not 0.0 < alpha < 1.0:
            raise ConfigError(f"--decide-alpha: expected a level in (0, 1), got {alpha}")
        task = self._task(spec, tasks)
        metrics = [m.name for m in task.metrics]
        if spec.metric not in metrics:
            raise ConfigError(f"--decide {spec.text!r}: task {task.name!r} has no metric {spec.metric!r} ({metrics})")
        if spec.metric in UNBOUNDED:
            raise ConfigError(f"--decide {spec.text!r}: {spec.metric} is not on a 0-1 scale")
        filters = list(task.filters) or ["none"]
        if spec.filter is not None and spec.filter not in filters:
            raise ConfigError(f"--decide {spec.text!r}: task {task.name!r} has no filter {spec.filter!r} ({filters})")
        if spec.margin is not None and baseline is None:
            raise ConfigError(f"--decide {spec.text!r}: a claim against the baseline needs --decide-baseline RUN")
        self.spec = spec
        self.task = task.name
        self.filter = spec.filter or filters[0]
        self.alpha = alpha
        self.baseline = baseline
        threshold = spec.threshold if spec.threshold is not None else (1.0 - (spec.margin or 0.0)) / 2.0
        self.sequence = BettingSequence(threshold, alpha)
        self.n_selected = n_selected
        self.errors = 0
        self.unpaired = 0
        self.seen = 0
        self.decided: Decision | None = None

    @staticmethod
    def _task(spec: DecideSpec, tasks: Sequence[Task]) -> Task:
        if spec.task is not None:
            for task in tasks:
                if task.name == spec.task:
                    return task
            raise ConfigError(f"--decide {spec.text!r}: no task {spec.task!r} in this run ({[t.name for t in tasks]})")
        having = [t for t in tasks if any(m.name == spec.metric for m in t.metrics)]
        if len(having) > 1:
            raise ConfigError(f"--decide {spec.text!r}: several tasks have {spec.metric!r}; name one as TASK/METRIC")
        if not having:
            names = sorted({m.name for t in tasks for m in t.metrics})
            raise ConfigError(f"--decide {spec.text!r}: no task has a metric {spec.metric!r} ({names})")
        return having[0]

    def observe(self, task: str, sample_id: str, scores: Mapping[str, Mapping[str, Any]]) -> None:
        """One finished sample (``scores``: filter -> metric -> its value over the repeats, None when errored);
        raises :class:`Decided` when this sample decides the claim."""
        if task != self.task:
            return
        self.seen += 1  # every finished sample, also those in flight when the claim was decided
        if self.decided is not None:
            return
        value = (scores.get(self.filter) or {}).get(self.spec.metric)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            self.errors += 1  # an error is neither a pass nor a fail
            return
        x = float(value)
        if not 0.0 <= x <= 1.0:
            raise OutOfScale(
                f"--decide {self.spec.text!r}: sample {sample_id!r} scored {x:g}, outside the 0-1 scale the "
                "sequence needs; resume without --decide"
            )
        if self.baseline is not None:
            base = self.baseline.get(sample_id)
            if base is None:
                self.unpaired += 1
                return
            x = (x - base + 1.0) / 2.0  # the difference B - A, in [-1, 1], put on [0, 1]
        self.sequence.update(x)
        decision = self.sequence.decision()
        if decision.state != "undecided":
            self.decided = decision
            raise Decided(self.sentence(decision))

    def observe_record(self, record: SampleRecord) -> None:
        """:meth:`observe` of a finished sample's record."""
        self.observe(record.task, record.sample_id, {name: fr.scores for name, fr in record.filters.items()})

    def decision(self) -> Decision:
        """The decision now (undecided until the sequence decides)."""
        return self.decided or self.sequence.decision()

    def _bounds(self, d: Decision) -> tuple[float | None, float, float]:
        if self.baseline is None:
            return d.mean, d.lower, d.upper
        return (None if d.mean is None else 2 * d.mean - 1), 2 * d.lower - 1, 2 * d.upper - 1

    def sentence(self, d: Decision) -> str:
        """The decision as the run's message."""
        mean, lower, upper = self._bounds(d)
        what = "difference from the baseline" if self.baseline is not None else "mean"
        where = f"{self.task}/{self.spec.metric},{self.filter}"
        verdict = {"holds": "holds", "fails": "fails", "undecided": "is undecided"}[d.state]
        saved = max(self.n_selected - self.seen, 0) if self.n_selected else None
        return (
            f"decided: {self.spec.text} {verdict} after {d.n} sample(s) ({where}: {what} "
            f"{'n/a' if mean is None else f'{mean:.4f}'}, {100 * (1 - self.alpha):g}% confidence sequence "
            f"[{lower:.4f}, {upper:.4f}])" + (f"; {saved} sample(s) saved" if saved else "")
        )

    def summary(self) -> dict[str, Any]:
        """What ``run.json`` records of the gate."""
        d = self.decision()
        mean, lower, upper = self._bounds(d)
        return {
            "claim": self.spec.text,
            "task": self.task,
            "filter": self.filter,
            "metric": self.spec.metric,
            "alpha": self.alpha,
            "state": d.state,
            "samples_used": d.n,
            "samples_errored": self.errors,
            "samples_unpaired": self.unpaired,
            "samples_selected": self.n_selected,
            "samples_run": self.seen,
            "samples_saved": max(self.n_selected - self.seen, 0),
            "estimate": mean,
            "sequence": [lower, upper],
            "method": "betting confidence sequence (Waudby-Smith & Ramdas), predictable plug-in, samples shuffled",
            "baseline": self.baseline is not None,
            "sentence": self.sentence(d),
        }


def baseline_values(path: Path, gate_task: str, filter_name: str, metric: str) -> dict[str, float]:
    """Sample id -> the baseline run's value of the metric (its errored samples left out)."""
    from assay.errors import AssayError
    from assay.results.loader import load_run

    try:
        run = load_run(path)
        columns = run.columns.get(gate_task)
        if columns is None:
            raise ConfigError(f"--decide-baseline {path}: the run has no task {gate_task!r}")
        values = run.sample_values(gate_task, filter_name, metric).values
    except KeyError:
        raise ConfigError(f"--decide-baseline {path}: the run has no {gate_task}/{metric},{filter_name}") from None
    except AssayError as err:
        raise ConfigError(f"--decide-baseline {path}: {err}") from None
    ids = columns.sample_ids
    if ids is None:
        raise ConfigError(f"--decide-baseline {path}: its samples have no ids to pair by")
    return {ids[i]: float(v) for i, v in enumerate(values) if not math.isnan(v)}


def make_gate(
    tasks: Sequence[Task],
    settings: RunSettings,
    *,
    recorded: Mapping[str, Any],
    offline: bool,
    selected: Callable[[str], int] = lambda task: 0,
    prior: Iterable[Mapping[str, Any]] = (),
) -> Gate | None:
    """The run's gate, or None without ``--decide`` (a resumed run keeps the claim it ``recorded``); ``selected``
    counts a task's selected samples; ``prior``: a resumed run's records in the order written, replayed first."""
    claim = settings.decide or recorded.get("decide")
    if not claim:
        return None
    if offline:
        raise ConfigError(
            "--decide stops a model's run as soon as its claim is decided; existing predictions are all scored "
            "anyway: drop --decide and use assay report --fail-under"
        )
    if settings.executor != "local":
        raise ConfigError("--decide runs on the local executor (its samples are decided one by one, in order)")
    spec = parse_decide(str(claim))
    alpha = settings.decide_alpha if settings.decide else float(recorded.get("decide_alpha") or settings.decide_alpha)
    base_path = settings.decide_baseline or recorded.get("decide_baseline")
    if spec.margin is not None and base_path is None:
        raise ConfigError(f"--decide {spec.text!r}: a claim against the baseline needs --decide-baseline RUN")
    task = Gate._task(spec, tasks)
    filter_name = spec.filter or (list(task.filters) or ["none"])[0]
    baseline = None
    if spec.margin is not None and base_path is not None:
        baseline = baseline_values(Path(base_path), task.name, filter_name, spec.metric)
    gate = Gate(spec, tasks, alpha=alpha, baseline=baseline, n_selected=selected(task.name))
    for record in prior:
        filters = record.get("filters") or {}
        try:
            gate.observe(
                str(record.get("task")),
                str(record.get("sample_id")),
                {name: fr.get("scores") or {} for name, fr in filters.items()},
            )
        except Decided:
            continue  # decided by the samples already run: the rest are still counted as run
    return gate
