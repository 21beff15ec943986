"""Operational figures per role and model: requests, tokens, latency percentiles, cache hits, errors, cost.

Roles are ``model`` (the model under test, from each sample's responses, under its configured name, since
servers may report other names) and ``judge`` (from
``details["judges"]``, one ``{"model", "usage": {"input_tokens", "output_tokens"}, "latency_s", "cached",
"error"?}`` per judge request of an llm_judge verdict, or the summed ``details["judge"]`` where only that
exists). Prices, when given, are US dollars per million tokens::

    {"gpt-4o-mini": {"input": 0.15, "output": 0.60}, ...}

Cost counts only requests that were not served from the cache (a cached answer cost nothing this run).
Latency percentiles are over requests that reached the model (cached answers excluded). An agent's trajectory is
as many requests as it made model calls, each counted from its transcript (its own tokens, latency and cache hit).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from assay.errors import ConfigError
from assay.models.base import display_name
from assay.record import RunManifest, SampleRecord
from assay.results.aggregate import as_record_dict

ROLES = ("model", "judge")


@dataclass
class _Tally:
    requests: int = 0
    errors: int = 0
    cached: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    billable_input_tokens: int = 0
    billable_output_tokens: int = 0
    latencies: array[float] = field(default_factory=lambda: array("d"))  # 8 bytes a request

    def add(self, *, input_tokens: int, output_tokens: int, latency: float | None, cached: bool) -> None:
        self.requests += 1
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        if cached:
            self.cached += 1
        else:
            self.billable_input_tokens += input_tokens
            self.billable_output_tokens += output_tokens
            if latency is not None and math.isfinite(latency):
                self.latencies.append(latency)

    def merge(self, other: _Tally) -> None:
        """Add another tally's counts (of later records) to this one."""
        for name in _TALLY_COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.latencies.extend(other.latencies)


_TALLY_COUNTS = (
    "requests",
    "errors",
    "cached",
    "input_tokens",
    "output_tokens",
    "billable_input_tokens",
    "billable_output_tokens",
)


def validate_prices(prices: Mapping[str, Any] | None) -> dict[str, dict[str, float]]:
    """Check a price table ``{model: {"input": usd_per_mtok, "output": usd_per_mtok}}``; errors name the key."""
    if prices is None:
        return {}
    if not isinstance(prices, Mapping):
        raise ConfigError(f"prices: expected a mapping of model name to prices, got {type(prices).__name__}")
    out: dict[str, dict[str, float]] = {}
    for model, entry in prices.items():
        if not isinstance(entry, Mapping):
            raise ConfigError(f"prices.{model}: expected {{'input': ..., 'output': ...}}, got {entry!r}")
        unknown = set(entry) - {"input", "output"}
        if unknown:
            raise ConfigError(f"prices.{model}: unknown key(s) {', '.join(sorted(unknown))} (known: input, output)")
        parsed: dict[str, float] = {}
        for key in ("input", "output"):
            value = entry.get(key, 0.0)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0 or not math.isfinite(value):
                raise ConfigError(f"prices.{model}.{key}: expected a non-negative number (USD per 1M tokens)")
            parsed[key] = float(value)
        out[str(model)] = parsed
    return out


def _percentiles(values: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p95": None, "p99": None, "mean": None, "max": None}
    arr = np.frombuffer(values, dtype=np.float64) if isinstance(values, array) else np.asarray(values, dtype=np.float64)
    p50, p95, p99 = np.percentile(arr, [50, 95, 99])
    return {"p50": float(p50), "p95": float(p95), "p99": float(p99), "mean": float(arr.mean()), "max": float(arr.max())}


def _figures(t: _Tally, price: dict[str, float] | None) -> dict[str, Any]:
    cost = None
    if price is not None:
        cost = (t.billable_input_tokens * price["input"] + t.billable_output_tokens * price["output"]) / 1e6
    return {
        "requests": t.requests,
        "errors": t.errors,
        "cache_hits": t.cached,
        "input_tokens": t.input_tokens,
        "output_tokens": t.output_tokens,
        "latency_s": _percentiles(t.latencies),
        "cost_usd": cost,
    }


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def judge_calls(verdict: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The judge requests behind a verdict: each call of ``details["judges"]``, else the ``details["judge"]`` sum."""
    details = verdict.get("details") or {}
    calls = details.get("judges")
    if isinstance(calls, list) and calls:
        return [c for c in calls if isinstance(c, Mapping)]
    judge = details.get("judge")
    return [judge] if isinstance(judge, Mapping) else []


def _add_trajectory(tally: _Tally, resp: Mapping[str, Any], agent: Mapping[str, Any]) -> None:
    """Count an agent trajectory's model calls, each a request of its own: its tokens, its latency (not the
    trajectory's, which holds the tools' time too) and whether it came from the cache, as the transcript's assistant
    messages record them (``metadata.agent.model_calls`` of them; calls a transcript does not detail count as
    requests with no tokens, cached as the whole response was)."""
    all_cached = bool(resp.get("cached", False))
    calls = [m for m in resp.get("transcript") or () if m.get("role") == "assistant" and "usage" in m]
    for m in calls:
        usage = m.get("usage") or {}
        latency = m.get("latency_s")
        tally.add(
            input_tokens=_int(usage.get("input_tokens")),
            output_tokens=_int(usage.get("output_tokens")),
            latency=float(latency) if isinstance(latency, int | float) else None,
            cached=bool(m.get("cached", all_cached)),
        )
    for _ in range(_int(agent.get("model_calls")) - len(calls)):
        tally.add(input_tokens=0, output_tokens=0, latency=None, cached=all_cached)


def _tally_judge_calls(by_model: dict[str, _Tally], verdict: Mapping[str, Any]) -> None:
    """Count each judge request under its own model, so several judges, samples or pairwise orders add up right."""
    for call in judge_calls(verdict):
        raw_usage = call.get("usage")
        usage: Mapping[str, Any] = raw_usage if isinstance(raw_usage, Mapping) else {}
        tally = by_model.setdefault(str(call.get("model") or "judge"), _Tally())
        latency = call.get("latency_s")
        tally.add(
            input_tokens=_int(usage.get("input_tokens")),
            output_tokens=_int(usage.get("output_tokens")),
            latency=float(latency) if isinstance(latency, int | float) else None,
            cached=bool(call.get("cached", False)),
        )
        if call.get("error"):
            tally.errors += 1


class OperationalTally:
    """Operational figures built one record at a time (a streamed scan feeds it), then :meth:`figures`."""

    def __init__(self, manifest: RunManifest | None = None, prices: Mapping[str, Any] | None = None) -> None:
        self.manifest = manifest
        self.table = validate_prices(
            prices if prices is not None else (manifest.config.get("prices") if manifest else None)
        )
        self.default_model = display_name(manifest.model) if manifest else "model"
        self.tallies: dict[str, dict[str, _Tally]] = {role: {} for role in ROLES}
        self.n_samples = 0
        self._model_tally: _Tally | None = None

    def add(self, rec: SampleRecord | Mapping[str, Any]) -> None:
        """Count one sample's model requests and judge calls (a record, or its dict as parsed from its line)."""
        record = as_record_dict(rec)
        self.add_requests(record)
        for fr in (record.get("filters") or {}).values():
            for verdicts in (fr.get("verdicts") or {}).values():
                for v in verdicts:
                    details = v.get("details")
                    if details:
                        self.add_judge_calls(details)

    def add_requests(self, rec: Mapping[str, Any]) -> None:
        """Count the model requests of one record dict (its judge calls come through :meth:`add_judge_calls`)."""
        self.n_samples += 1
        responses = rec.get("responses") or ()
        errors = rec.get("response_errors") or ()
        n_repeats = max(len(responses), len(errors))
        if not n_repeats:
            return
        tally = self._model_tally
        if tally is None:
            tally = self._model_tally = self.tallies["model"].setdefault(self.default_model, _Tally())
        for i in range(n_repeats):
            resp = responses[i] if i < len(responses) else None
            if resp is None:
                tally.requests += 1
                tally.errors += 1
                continue
            agent = (resp.get("metadata") or {}).get("agent") if resp.get("transcript") else None
            if agent:
                _add_trajectory(tally, resp, agent)
                if i < len(errors) and errors[i]:
                    tally.errors += 1
                continue
            usage = resp.get("usage") or {}
            input_tokens, output_tokens = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
            tally.requests += 1  # _Tally.add, inline: once per request of a run of millions
            tally.input_tokens += input_tokens
            tally.output_tokens += output_tokens
            if resp.get("cached", False):
                tally.cached += 1
            else:
                tally.billable_input_tokens += input_tokens
                tally.billable_output_tokens += output_tokens
                latency = float(resp.get("latency_s", 0.0))
                if latency - latency == 0.0:  # finite
                    tally.latencies.append(latency)
            if i < len(errors) and errors[i]:
                tally.errors += 1

    def add_judge_calls(self, details: Mapping[str, Any]) -> None:
        """Count the judge requests recorded in one verdict's (non-empty) ``details``."""
        if "judges" in details or "judge" in details:  # most verdicts have no judge behind them: nothing to count
            _tally_judge_calls(self.tallies["judge"], {"details": details})

    def merge(self, other: OperationalTally) -> None:
        """Add the counts of another tally (of records read after this one's, e.g. by another process)."""
        self.n_samples += other.n_samples
        for role, by_model in other.tallies.items():
            mine = self.tallies.setdefault(role, {})
            for name, tally in by_model.items():
                mine.setdefault(name, _Tally()).merge(tally)
        self._model_tally = self.tallies["model"].get(self.default_model)

    def figures(self) -> dict[str, Any]:
        """Per role and model: requests, errors, cache hits, tokens in/out, latency p50/p95/p99 and cost."""
        table = self.table
        roles = {
            role: {name: _figures(t, table.get(name)) for name, t in sorted(by.items())}
            for role, by in self.tallies.items()
        }
        costs = [f["cost_usd"] for by in roles.values() for f in by.values()]
        total_cost = math.fsum(c for c in costs if c is not None) if any(c is not None for c in costs) else None
        seconds = self.manifest.total_seconds if self.manifest else None
        n_samples = self.n_samples
        return {
            "roles": roles,
            "samples": n_samples,
            "total_seconds": seconds,
            "samples_per_second": (n_samples / seconds) if seconds else None,
            "prices_configured": bool(table),
            "cost_usd": total_cost,
            "unpriced_models": sorted({n for by in roles.values() for n, f in by.items() if f["cost_usd"] is None})
            if table
            else [],
        }


def operational_figures(
    records: Iterable[SampleRecord],
    manifest: RunManifest | None = None,
    prices: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Per role and model: requests, errors, cache hits, tokens in/out, latency p50/p95/p99 and cost."""
    tally = OperationalTally(manifest, prices)
    for rec in records:
        tally.add(rec)
    return tally.figures()
