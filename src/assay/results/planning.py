"""How many samples (and repeats) a question needs, and what they cost, read from a pilot run.

Per metric, the pilot's per-sample spread gives the samples needed to detect a difference ``D`` between two runs at
a two-sided level ``alpha`` with the stated power (normal approximation,
``n = ((z[1-alpha/2] + z[power]) * sd_diff / D)^2``) and the expected half-width of the metric's interval at a given
``n`` (``z[1-alpha/2] * sd / sqrt(n)``). ``sd_diff`` is the spread of paired differences:

- with a baseline run, measured on the samples both runs scored (same sample id, same input), so the pairing's
  correlation is the pilot's;
- without one, ``sqrt(2) * sd``: two runs on the same samples with no correlation between them, which overstates
  ``n`` when the runs' samples are positively correlated, as they usually are.

With repeats (``repeats:``) and a mean reduction, a pass/fail metric's spread splits into the spread between samples
and within a sample's repeats (from each sample's pass share), so the plan can trade samples for repeats; a metric
without that split is planned at the pilot's repeats only. A pilot with no spread (every sample passed) is given the
spread of a pass rate ``(x + 0.5) / (n + 1)`` rather than none, and says so.

Cost and time come from the pilot's requests (the model's and the judges'), cache hits included, since a new run's
samples are not cached: tokens per sample at the given prices, and the latency per request at the run's
concurrency. A request whose provider reported no usage (zero tokens in and out) is not counted as free: the cost is
estimated from the requests that did report usage and marked incomplete, or is unknown when none did.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt

from assay.errors import ConfigError
from assay.models.base import display_name
from assay.results.compare import pair_samples
from assay.results.loader import Run
from assay.results.operational import judge_calls, validate_prices

FloatArray = npt.NDArray[np.float64]
METHOD = "normal approximation: n = ((z[1-alpha/2] + z[power]) * sd_diff / D)^2"


@dataclass
class MetricPlan:
    """One (task, filter, metric): the pilot's spread and the samples a difference ``diff`` needs."""

    task: str
    filter: str
    metric: str
    n_pilot: int  # samples the pilot scored
    n_docs: int  # samples the task's dataset has
    mean: float
    sd: float  # per sample, of the value reduced over the pilot's repeats
    binary: bool
    repeats: int  # the pilot's repeats
    design: str  # "paired" (a baseline's pairs measured) | "independent" (no baseline: correlation 0 assumed)
    sd_diff: float  # per sample, of the difference between two runs
    correlation: float | None = None  # of the paired samples' values (with a baseline)
    n_paired: int | None = None
    sd_between: float | None = None  # spread between samples, once repeats are averaged away
    sd_within: float | None = None  # spread of one repeat around its sample's mean
    samples_needed: dict[int, int] = field(default_factory=dict)  # repeats -> samples to detect ``diff``
    half_width: dict[int, float] = field(default_factory=dict)  # n -> expected half-width of the mean's interval
    half_width_diff: dict[int, float] = field(default_factory=dict)  # n -> expected half-width of the difference's
    notes: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        """``task/metric,filter``."""
        return f"{self.task}/{self.metric},{self.filter}"


@dataclass
class CostPlan:
    """What one sample of a task costs, from the pilot's requests (per repeat: a repeat is a request again)."""

    task: str
    samples: int
    requests_per_sample: float  # at the pilot's repeats, model and judge requests together
    input_tokens_per_sample: float | None
    output_tokens_per_sample: float | None
    usd_per_sample: float | None  # None: no price for a model, or no request reported its usage
    seconds_per_request: float | None  # mean latency of requests that reached a model
    requests_unreported: int  # requests whose provider reported no usage (not counted as free)
    requests_total: int
    unpriced_models: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Every request reported its usage and every model has a price."""
        return self.requests_unreported == 0 and not self.unpriced_models and self.usd_per_sample is not None


@dataclass
class Plan:
    """A plan read from a pilot run (and a baseline): samples per metric, cost and time per task."""

    run: str
    baseline: str | None
    diff: float
    alpha: float
    power: float
    concurrency: int
    method: str
    metrics: list[MetricPlan]
    costs: dict[str, CostPlan]
    warnings: list[str] = field(default_factory=list)

    def cost(self, task: str, samples: int, repeats: int) -> tuple[float | None, float | None]:
        """(US dollars, seconds of wall time at the plan's concurrency) of ``samples`` × ``repeats`` of ``task``."""
        c = self.costs.get(task)
        if c is None or not c.samples:
            return None, None
        pilot_repeats = max(next((m.repeats for m in self.metrics if m.task == task), 1), 1)
        scale = samples * repeats / pilot_repeats
        usd = None if c.usd_per_sample is None else c.usd_per_sample * scale
        secs = None
        if c.seconds_per_request is not None:
            secs = c.seconds_per_request * c.requests_per_sample * scale / max(self.concurrency, 1)
        return usd, secs

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON-safe data (what ``assay plan --format json`` prints)."""
        out = asdict(self)
        for m, data in zip(self.metrics, out["metrics"], strict=True):
            data["key"] = m.key
            data["cost"] = {
                str(k): dict(zip(("usd", "seconds"), self.cost(m.task, n, k), strict=True))
                for k, n in m.samples_needed.items()
            }
        for name, c in self.costs.items():
            out["costs"][name]["complete"] = c.complete
        return out


def _z(p: float) -> float:
    return NormalDist().inv_cdf(p)


def samples_for(sd_diff: float, diff: float, alpha: float, power: float) -> int:
    """Samples a two-sided test at ``alpha`` needs to detect a mean difference ``diff`` with ``power``."""
    if sd_diff <= 0.0:
        return 1
    return max(2, math.ceil(((_z(1 - alpha / 2) + _z(power)) * sd_diff / diff) ** 2))


def half_width(sd: float, n: int, alpha: float) -> float:
    """Expected half-width of a ``1 - alpha`` normal interval of a mean of ``n`` samples with spread ``sd``."""
    return _z(1 - alpha / 2) * sd / math.sqrt(max(n, 1))


def _within(passed_frac: FloatArray, attempts: npt.NDArray[np.int64]) -> float | None:
    """Variance of one repeat around its sample's pass share (unbiased per sample), averaged over samples."""
    k = attempts.astype(np.float64)
    ok = k > 1
    if not ok.any():
        return None
    p = passed_frac[ok]
    return float(np.mean(k[ok] / (k[ok] - 1) * p * (1 - p)))


def _spread(values: FloatArray, binary: bool, notes: list[str]) -> float:
    sd = float(np.std(values, ddof=1)) if values.size > 1 else 0.0
    if sd == 0.0 and binary and values.size:
        p = (float(values.sum()) + 0.5) / (values.size + 1)
        notes.append(f"no spread in the pilot: planned with a pass rate of {p:.3f}, (passes + 0.5) / (n + 1)")
        sd = math.sqrt(p * (1 - p))
    return sd


def plan_metric(
    run: Run,
    task: str,
    filter_name: str,
    metric: str,
    *,
    diff: float,
    alpha: float,
    power: float,
    repeats: Sequence[int],
    sizes: Sequence[int],
    baseline: Run | None = None,
) -> MetricPlan | None:
    """The plan of one metric, or None when the pilot scored fewer than two samples of it."""
    info = next(t for t in run.manifest.tasks if t.name == task)
    sv = run.sample_values(task, filter_name, metric)
    scored = sv.scored
    values = sv.values[scored]
    if values.size < 2:
        return None
    notes: list[str] = []
    # pass/fail: each repeat scored 0 or 1, so the reduced value is the sample's pass share
    binary = bool(np.isin(values, (0.0, 1.0)).all()) or bool(np.allclose(values, sv.passed_frac[scored]))
    sd = _spread(values, binary, notes)
    k = max(info.repeats, 1)
    reduction = str(info.config.get("repeat_reduction", run.settings.get("repeat_reduction", "mean")))
    var_within = None
    if k > 1 and binary and reduction == "mean":
        var_within = _within(sv.passed_frac[scored], sv.n_attempts[scored])
    elif k > 1:
        why = f"repeats reduced by {reduction}" if reduction != "mean" else "a graded metric's repeats"
        notes.append(f"{why}: not split into spread between and within samples; planned at the pilot's repeats only")
    var_between = None if var_within is None else max(sd**2 - var_within / k, 0.0)
    mp = MetricPlan(
        task=task,
        filter=filter_name,
        metric=metric,
        n_pilot=int(values.size),
        n_docs=info.n_docs,
        mean=float(values.mean()),
        sd=sd,
        binary=binary,
        repeats=k,
        design="independent",
        sd_diff=math.sqrt(2.0) * sd,
        sd_between=None if var_between is None else math.sqrt(var_between),
        sd_within=None if var_within is None else math.sqrt(var_within),
        notes=notes,
    )
    base_within = 0.0
    if baseline is not None and task in baseline.columns:
        _, ia, ib = pair_samples(task, baseline.columns[task], run.columns[task])
        bsv = baseline.sample_values(task, filter_name, metric)
        a, b = bsv.values[ia], sv.values[ib]
        keep = ~np.isnan(a) & ~np.isnan(b)
        a, b = a[keep], b[keep]
        if a.size >= 2:
            mp.design, mp.n_paired = "paired", int(a.size)
            d = b - a
            mp.sd_diff = float(np.std(d, ddof=1))
            if mp.sd_diff == 0.0:
                notes.append("the paired differences have no spread in the pilot: planned without the pairing")
                mp.sd_diff = math.sqrt(2.0) * sd
            if float(np.std(a)) > 0 and float(np.std(b)) > 0:
                mp.correlation = float(np.corrcoef(a, b)[0, 1])
            if var_within is not None:
                bw = _within(bsv.passed_frac[ia][keep], bsv.n_attempts[ia][keep])
                base_within = bw if bw is not None else 0.0
        else:
            notes.append("fewer than 2 samples pair with the baseline: planned as two independent runs")
    for r in repeats:
        if var_within is None:
            if r != k:
                continue
            spread = mp.sd_diff
        else:
            # the difference's spread with r repeats a side: its spread between samples stays, each side's repeat
            # noise shrinks as 1/r (from the pilot's own split, the baseline's when paired)
            noise_k = (var_within + (base_within if mp.design == "paired" else var_within)) / k
            between = max(mp.sd_diff**2 - noise_k, 0.0)
            spread = math.sqrt(between + noise_k * k / r)
        mp.samples_needed[r] = samples_for(spread, diff, alpha, power)
    for n in sizes or (mp.n_pilot,):
        mp.half_width[n] = half_width(sd, n, alpha)
        mp.half_width_diff[n] = half_width(mp.sd_diff, n, alpha)
    for r, n in mp.samples_needed.items():
        if n > info.n_docs:
            notes.append(
                f"{n:,} samples at {r} repeat(s) is more than the dataset's {info.n_docs:,}: more repeats, or a "
                "larger difference, or more data"
            )
    return mp


def _tokens(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _request_usages(record: Mapping[str, Any]) -> Iterable[tuple[str | None, int, int, float | None]]:
    """(model or None for the run's model, input tokens, output tokens, latency or None) of each request."""
    for resp in record.get("responses") or ():
        if resp is None:
            continue
        agent = (resp.get("metadata") or {}).get("agent") if resp.get("transcript") else None
        if agent:  # each model call of the trajectory is a request, as the operational figures count them
            calls = [m for m in resp.get("transcript") or () if m.get("role") == "assistant" and "usage" in m]
            for m in calls:
                usage = m.get("usage") or {}
                latency = m.get("latency_s") if isinstance(m.get("latency_s"), int | float) else None
                yield None, _tokens(usage.get("input_tokens")), _tokens(usage.get("output_tokens")), latency
            for _ in range(_tokens(agent.get("model_calls")) - len(calls)):
                yield None, 0, 0, None
            continue
        usage = resp.get("usage") or {}
        latency = None if resp.get("cached") else resp.get("latency_s")
        yield None, _tokens(usage.get("input_tokens")), _tokens(usage.get("output_tokens")), latency
    for fr in (record.get("filters") or {}).values():
        for verdicts in (fr.get("verdicts") or {}).values():
            for v in verdicts:
                if v.get("details"):
                    for call in judge_calls(v):
                        raw = call.get("usage")
                        usage = raw if isinstance(raw, Mapping) else {}
                        latency = None if call.get("cached") else call.get("latency_s")
                        yield (
                            str(call.get("model") or "judge"),
                            _tokens(usage.get("input_tokens")),
                            _tokens(usage.get("output_tokens")),
                            latency if isinstance(latency, int | float) else None,
                        )


def plan_costs(run: Run, prices: Mapping[str, Any] | None) -> dict[str, CostPlan]:
    """Per task: requests, tokens, US dollars and latency per sample, from one pass over the pilot's records."""
    table = validate_prices(prices if prices is not None else run.manifest.config.get("prices"))
    model_name = display_name(run.manifest.model)
    tallies: dict[str, dict[str, Any]] = {}
    for record in run.iter_record_dicts():
        t = tallies.setdefault(
            str(record.get("task")),
            {"samples": 0, "requests": 0, "unreported": 0, "in": 0, "out": 0, "usd": 0.0, "priced": 0, "lat": []},
        )
        t["samples"] += 1
        for model, tin, tout, latency in _request_usages(record):
            name = model or model_name
            t["requests"] += 1
            if latency is not None and math.isfinite(float(latency)):
                t["lat"].append(float(latency))
            if tin == 0 and tout == 0:
                t["unreported"] += 1
                continue
            t["in"] += tin
            t["out"] += tout
            price = table.get(name)
            if price is None:
                t.setdefault("unpriced", set()).add(name)
            else:
                t["usd"] += (tin * price["input"] + tout * price["output"]) / 1e6
                t["priced"] += 1
    out: dict[str, CostPlan] = {}
    for task, t in tallies.items():
        n, reqs = t["samples"], t["requests"]
        reported = reqs - t["unreported"]
        usd = None
        if table and reported and not t.get("unpriced"):
            usd = t["usd"] / reported * reqs / n  # the unreported requests cost as much as the reported ones
        out[task] = CostPlan(
            task=task,
            samples=n,
            requests_per_sample=reqs / n,
            input_tokens_per_sample=(t["in"] / reported * reqs / n) if reported else None,
            output_tokens_per_sample=(t["out"] / reported * reqs / n) if reported else None,
            usd_per_sample=usd,
            seconds_per_request=float(np.mean(t["lat"])) if t["lat"] else None,
            requests_unreported=t["unreported"],
            requests_total=reqs,
            unpriced_models=sorted(t.get("unpriced", ())),
        )
    return out


def plan_run(
    run: Run,
    *,
    baseline: Run | None = None,
    diff: float = 0.02,
    alpha: float = 0.05,
    power: float = 0.8,
    repeats: Sequence[int] = (),
    sizes: Sequence[int] = (),
    prices: Mapping[str, Any] | None = None,
    concurrency: int | None = None,
) -> Plan:
    """Plan from a pilot run (see the module docstring); ``repeats``/``sizes`` add repeat counts and sample counts to
    plan for (by default the pilot's repeats and 1, and the pilot's size and the samples needed)."""
    if not diff > 0:
        raise ConfigError(f"diff: expected a difference above 0 on the metric's scale, got {diff}")
    if not 0.0 < alpha < 1.0:
        raise ConfigError(f"alpha: expected a level in (0, 1), got {alpha}")
    if not 0.0 < power < 1.0:
        raise ConfigError(f"power: expected a probability in (0, 1), got {power}")
    if any(r < 1 for r in repeats) or any(n < 1 for n in sizes):
        raise ConfigError("repeats and sample counts must be at least 1")
    warnings: list[str] = []
    if baseline is not None and baseline.path.resolve() == run.path.resolve():
        warnings.append("the baseline is the pilot itself: every paired difference is zero")
    conc = concurrency or int(run.manifest.config.get("concurrency") or 1)
    metrics: list[MetricPlan] = []
    for info in run.manifest.tasks:
        if info.name not in run.columns:
            continue
        wanted = sorted({*(repeats or (1,)), max(info.repeats, 1)})
        for filter_name in info.filters:
            for m in info.metrics:
                mp = plan_metric(
                    run, info.name, filter_name, m.name, diff=diff, alpha=alpha, power=power,
                    repeats=wanted, sizes=sizes, baseline=baseline,
                )  # fmt: skip
                if mp is None:
                    warnings.append(f"{info.name}/{m.name},{filter_name}: fewer than 2 scored samples; not planned")
                    continue
                if not sizes:
                    need = mp.samples_needed.get(mp.repeats)
                    if need is not None:
                        mp.half_width[need] = half_width(mp.sd, need, alpha)
                        mp.half_width_diff[need] = half_width(mp.sd_diff, need, alpha)
                metrics.append(mp)
    costs = plan_costs(run, prices)
    for c in costs.values():
        if c.requests_unreported:
            warnings.append(
                f"{c.task}: {c.requests_unreported} of {c.requests_total} requests reported no usage; their tokens "
                "and cost are estimated from the requests that did"
                + ("" if c.requests_unreported < c.requests_total else " (none did: unknown)")
            )
        if c.unpriced_models:
            warnings.append(f"{c.task}: no price for {', '.join(c.unpriced_models)} (give --prices): cost unknown")
    return Plan(
        run=run.name,
        baseline=None if baseline is None else baseline.name,
        diff=diff,
        alpha=alpha,
        power=power,
        concurrency=conc,
        method=METHOD,
        metrics=metrics,
        costs=costs,
        warnings=warnings,
    )
