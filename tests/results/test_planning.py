"""``assay plan``: the samples a difference needs give the stated power, repeats trade against samples, and cost never
counts unreported usage as free."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from assay.commands.plan import plan_command
from assay.results.loader import load_run
from assay.results.planning import plan_run, samples_for
from tests.results.runfactory import manifest, record, task, verdict, write_run

PRICES = {"org/test-model:v1": {"input": 1.0, "output": 2.0}}


def _run(path: Path, outcomes: np.ndarray, *, repeats: int = 1, tokens: tuple[int, int] = (10, 2), **man) -> Path:
    """One task, sample i's repeats scoring outcomes[i, :] (rows: samples, columns: repeats)."""
    outcomes = outcomes.reshape(len(outcomes), -1)
    recs = [
        record(
            "qa",
            i,
            {"exact_match": [verdict(float(o)) for o in row]},
            texts=tuple("answer" for _ in row),
            tokens=tokens,
            latency=0.5,
        )
        for i, row in enumerate(outcomes)
    ]
    info = task("qa", (("exact_match", True),), n=100_000, repeats=repeats, config={"repeat_reduction": "mean"})
    return write_run(path, manifest([info], **man), recs)


def _paired_binary(rng: np.random.Generator, n: int, p_a: float, p_b: float, shared: float) -> tuple[np.ndarray, ...]:
    """Two runs' outcomes on the same n samples: with probability ``shared`` a sample has one latent draw for both."""
    u_common = rng.random(n)
    u_a = np.where(rng.random(n) < shared, u_common, rng.random(n))
    u_b = np.where(rng.random(n) < shared, u_common, rng.random(n))
    return (u_a < p_a).astype(float), (u_b < p_b).astype(float)


def test_the_samples_planned_from_a_paired_pilot_detect_the_difference_at_the_stated_power(tmp_path: Path):
    rng = np.random.default_rng(7)
    a, b = _paired_binary(rng, 4_000, 0.70, 0.75, shared=0.8)  # a pilot of the pair the study will meet
    pilot = load_run(_run(tmp_path / "b", b))
    base = load_run(_run(tmp_path / "a", a))
    plan = plan_run(pilot, baseline=base, diff=0.05, alpha=0.05, power=0.8)
    (mp,) = plan.metrics
    assert mp.design == "paired" and mp.n_paired == 4_000
    assert mp.correlation is not None and 0.5 < mp.correlation < 0.8
    n = mp.samples_needed[1]
    unpaired = samples_for(math.sqrt(2) * mp.sd, 0.05, 0.05, 0.8)
    assert n < unpaired / 2  # the pairing's correlation pays
    # simulate the planned study 4,000 times: a true difference of 0.05, a paired z test at alpha 0.05
    runs = 4_000
    u = rng.random((runs, n))
    shared_a, shared_b = rng.random((runs, n)) < 0.8, rng.random((runs, n)) < 0.8
    xa = (np.where(shared_a, u, rng.random((runs, n))) < 0.70).astype(float)
    xb = (np.where(shared_b, u, rng.random((runs, n))) < 0.75).astype(float)
    d = xb - xa
    z = d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(n))
    assert abs(float(np.mean(np.abs(z) > 1.959964)) - 0.8) <= 0.03  # the stated power, within 3 points


def test_without_a_baseline_the_plan_is_two_independent_runs():
    assert samples_for(math.sqrt(2) * 0.5, 0.1, 0.05, 0.8) == math.ceil((2.8016 * math.sqrt(2) * 0.5 / 0.1) ** 2)


def test_repeats_split_the_spread_and_buy_fewer_samples(tmp_path: Path):
    rng = np.random.default_rng(3)
    n, k = 3_000, 4
    p = rng.beta(2, 2, n)  # each sample's own pass chance: spread between samples and within repeats
    outcomes = (rng.random((n, k)) < p[:, None]).astype(float)
    plan = plan_run(load_run(_run(tmp_path / "r", outcomes, repeats=k)), diff=0.03, repeats=(1, 8))
    (mp,) = plan.metrics
    assert set(mp.samples_needed) == {1, 4, 8}
    assert mp.samples_needed[1] > mp.samples_needed[4] > mp.samples_needed[8]
    # Beta(2, 2): between-sample variance 0.05, within (per repeat) E[p(1-p)] = 0.2
    assert mp.sd_within == pytest.approx(math.sqrt(0.2), rel=0.05)
    assert mp.sd_between == pytest.approx(math.sqrt(0.05), rel=0.15)


def test_cost_and_time_come_from_the_pilots_requests(tmp_path: Path):
    outcomes = np.array([1, 0] * 50, dtype=float)
    run = load_run(_run(tmp_path / "c", outcomes, config={"concurrency": 4}))
    plan = plan_run(run, prices=PRICES, repeats=(1,))
    cost = plan.costs["qa"]
    assert cost.complete and cost.requests_per_sample == 1
    assert cost.usd_per_sample == pytest.approx((10 * 1.0 + 2 * 2.0) / 1e6)
    usd, secs = plan.cost("qa", 1_000, 3)
    assert usd == pytest.approx(3_000 * 14 / 1e6)
    assert secs == pytest.approx(3_000 * 0.5 / 4)


def test_usage_a_provider_did_not_report_is_never_free(tmp_path: Path):
    outcomes = np.array([1, 0] * 20, dtype=float)
    unreported = load_run(_run(tmp_path / "u", outcomes, tokens=(0, 0)))
    plan = plan_run(unreported, prices=PRICES)
    cost = plan.costs["qa"]
    assert cost.usd_per_sample is None and not cost.complete and cost.requests_unreported == 40
    assert plan.cost("qa", 100, 1)[0] is None
    assert any("reported no usage" in w and "unknown" in w for w in plan.warnings)
    no_prices = plan_run(load_run(_run(tmp_path / "p", outcomes)), prices={"other": {"input": 1, "output": 1}})
    assert no_prices.costs["qa"].usd_per_sample is None
    assert any("no price for org/test-model:v1" in w for w in no_prices.warnings)


def test_a_pilot_where_every_sample_passed_still_plans_and_says_how(tmp_path: Path):
    plan = plan_run(load_run(_run(tmp_path / "all", np.ones(50))))
    (mp,) = plan.metrics
    assert mp.sd > 0 and mp.samples_needed[1] > 2
    assert any("no spread" in note for note in mp.notes)


def test_the_command_prints_the_plan_and_exits_0_or_2(tmp_path: Path):
    run = _run(tmp_path / "cli", np.array([1, 0, 1, 1] * 25, dtype=float))
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(PRICES), encoding="utf-8")
    out = CliRunner().invoke(plan_command, [str(run), "--format", "json", "--prices", str(prices), "--n", "500"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    (metric,) = data["metrics"]
    assert metric["key"] == "qa/exact_match,none" and metric["half_width"]["500"] > 0
    assert data["costs"]["qa"]["complete"] is True and metric["cost"]["1"]["usd"] > 0
    table = CliRunner().invoke(plan_command, [str(run)])
    assert table.exit_code == 0 and "samples needed" in table.output and "qa/exact_match,none" in table.output
    bad = CliRunner().invoke(plan_command, [str(run), "--diff", "0"])
    assert bad.exit_code == 2 and "diff" in bad.output
    missing = CliRunner().invoke(plan_command, [str(tmp_path)])
    assert missing.exit_code == 2
