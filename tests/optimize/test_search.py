"""The search strategy (Optuna) against a real local server whose answers depend on the generation parameters and
the model: TPE with pruning of bad trials after partial validation, a grid, and a multi-objective Pareto front."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from assay.optimize import aoptimize
from assay.optimize.demo import respond
from assay.testing.server import OpenAITestServer, last_user_text
from tests.optimize.optimize_support import NO_CACHE, journal, task_config

GOOD = (
    "{# optimize: instructions #}Answer with the answer only, nothing else. Use digits.{# end optimize #}\n"
    "Question: {{ question }}\n"
)


def reply(body: dict[str, Any]) -> Any:
    """Right answers below temperature 0.5; model "big" follows the instructions at a price in tokens."""
    if (body.get("temperature") or 0) >= 0.5:
        return "banana"
    prompt = last_user_text(body)
    if body["model"] == "small":  # ignores the instructions
        return {"text": respond(prompt.split("\n", 1)[-1]), "usage": {"prompt_tokens": 10, "completion_tokens": 2}}
    return {"text": respond(prompt), "usage": {"prompt_tokens": 10, "completion_tokens": 40}}


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer(reply) as srv:
        yield srv


def spec(server: OpenAITestServer, name: str = "big") -> dict[str, Any]:
    return {"provider": "openai", "model": name, "base_url": server.base_url}


def hot_task(tmp_path: Path, **optimize: Any) -> Path:
    path = task_config(tmp_path, template=GOOD, strategy="search", **optimize)
    text = path.read_text() + "generation: {temperature: 0.9}\n"
    path.write_text(text)
    return path


async def test_tpe_finds_a_cool_temperature_and_prunes_hot_trials(tmp_path: Path, server: OpenAITestServer) -> None:
    task = hot_task(tmp_path, space={"temperature": {"type": "float", "low": 0.0, "high": 1.0}}, trials=10)
    result = await aoptimize(str(task), spec(server), budget=1000, output_dir=tmp_path / "out", run_settings=NO_CACHE)
    assert result.test["baseline"]["mean"] == 0.0 and result.test["best"]["mean"] == 1.0 and result.improved
    trials = [e for e in journal(result.folder) if e["kind"] == "trial" and e["origin"] == "search:tpe"]
    assert len(trials) == 10
    pruned = [t for t in trials if t["pruned"]]
    assert pruned, "hot trials score 0 on the first part of validation and must be pruned"
    assert all(t["params"]["temperature"] >= 0.5 for t in pruned)
    assert all(t["n"] < 27 for t in pruned)  # a pruned trial was scored on part of validation only
    best = next(t for t in trials if t["cid"] == result.best)
    assert best["params"]["temperature"] < 0.5 and best["mean"] == 1.0
    assert server.requests_total == result.calls["task_model"] + result.calls["final_test"]
    assert result.calls["task_model"] < 27 * 11  # pruning saved calls


async def test_grid_tries_every_point(tmp_path: Path, server: OpenAITestServer) -> None:
    task = hot_task(tmp_path, space={"temperature": {"type": "float", "low": 0.0, "high": 1.0, "step": 0.5}},
                    sampler="grid", prune=False)  # fmt: skip
    result = await aoptimize(str(task), spec(server), budget=1000, output_dir=tmp_path / "out", run_settings=NO_CACHE)
    trials = [e for e in journal(result.folder) if e["kind"] == "trial" and e["origin"] == "search:grid"]
    assert sorted(t["params"]["temperature"] for t in trials) == [0.0, 0.5, 1.0]
    assert result.improved


async def test_multi_objective_pareto_front(tmp_path: Path, server: OpenAITestServer) -> None:
    space = {
        "model": {"type": "choice", "choices": [spec(server, "big"), spec(server, "small")]},
        "temperature": {"type": "float", "low": 0.0, "high": 1.0},
    }
    task = hot_task(tmp_path, space=space, objectives=["score", "tokens"], sampler="random", trials=14)
    result = await aoptimize(str(task), spec(server), budget=2000, output_dir=tmp_path / "out", run_settings=NO_CACHE)
    trials = [e for e in journal(result.folder) if e["kind"] == "trial" and e["objectives"]]
    points = {t["trial"]: (t["objectives"]["score"], t["objectives"]["tokens"]) for t in trials}
    front_expected = {
        n for n, (s, k) in points.items()
        if not any(s2 >= s and k2 <= k and (s2, k2) != (s, k) for s2, k2 in points.values())
    }  # fmt: skip
    by_trial = {t["iteration"] - 1: t["trial"] for t in trials}
    front = {by_trial[p["trial"]] for p in result.pareto}
    assert front == front_expected
    models = {next(t for t in trials if t["trial"] == n)["params"].get("model", {}).get("model") for n in front}
    assert models == {"big", "small"}  # the trade-off: right and verbose, or cheap and often wrong
    summary = json.loads((result.folder / "summary.json").read_text())
    assert summary["pareto"] == result.pareto
    assert not any(t.get("pruned") for t in trials)  # Optuna cannot prune multi-objective studies; none are


async def test_cost_objective_needs_prices(tmp_path: Path, server: OpenAITestServer) -> None:
    from assay.errors import ConfigError

    task = hot_task(
        tmp_path, space={"temperature": {"type": "float", "low": 0, "high": 1}}, objectives=["score", "cost"]
    )
    with pytest.raises(ConfigError, match="prices"):
        await aoptimize(str(task), spec(server), budget=100, output_dir=tmp_path / "out", run_settings=NO_CACHE)
    assert server.requests_total == 0


async def test_cost_and_latency_objectives_come_from_the_runs(tmp_path: Path, server: OpenAITestServer) -> None:
    space = {"model": {"type": "choice", "choices": [spec(server, "big"), spec(server, "small")]}}
    objectives = ["score", "cost", "latency_p95"]
    task = task_config(tmp_path, template=GOOD, strategy="search", space=space, objectives=objectives, sampler="grid")
    prices = {"big": {"input": 1.0, "output": 2.0}, "small": {"input": 1.0, "output": 2.0}}
    settings = {**NO_CACHE, "prices": prices}
    result = await aoptimize(str(task), spec(server), budget=1000, output_dir=tmp_path / "out", run_settings=settings)
    trials = [e for e in journal(result.folder) if e["kind"] == "trial" and e["origin"] == "search:grid"]
    by_model = {t["params"]["model"]["model"]: t["objectives"] for t in trials}
    # 27 validation requests of 10 prompt tokens and 40 (big) or 2 (small) completion tokens, at $1 / $2 per 1M
    assert by_model["big"]["cost"] == pytest.approx((27 * 10 * 1.0 + 27 * 40 * 2.0) / 1e6)
    assert by_model["small"]["cost"] == pytest.approx((27 * 10 * 1.0 + 27 * 2 * 2.0) / 1e6)
    assert all(0 < o["latency_p95"] < 5 for o in by_model.values())
    assert {p["cid"] for p in result.pareto} >= {t["cid"] for t in trials if t["params"]["model"]["model"] == "small"}
    summary = json.loads((result.folder / "summary.json").read_text())
    assert summary["cost_by_role"]["task_model"]["cost_usd"] > 0


async def test_budget_in_dollars_stops_before_the_step_that_follows_the_limit(
    tmp_path: Path, server: OpenAITestServer
) -> None:
    space = {"temperature": {"type": "float", "low": 0.0, "high": 0.4}}
    task = task_config(tmp_path, template=GOOD, strategy="search", space=space, sampler="random", prune=False)
    settings = {**NO_CACHE, "prices": {"big": {"input": 1.0, "output": 2.0}}}
    per_val = (27 * 10 * 1.0 + 27 * 40 * 2.0) / 1e6  # one full validation of a trial (in three parts)
    result = await aoptimize(
        str(task), spec(server), budget=10_000, budget_usd=3.5 * per_val, output_dir=tmp_path / "out",
        run_settings=settings,
    )  # fmt: skip
    spent = result.calls["spent_usd"]
    assert 3.5 * per_val <= spent < 3.5 * per_val + per_val / 2  # stopped at the first part past the limit
    assert spent == pytest.approx(result.cost_usd["task_model"])
    assert server.requests_total == result.calls["task_model"] + result.calls["final_test"]


def erring_reply(body: dict[str, Any]) -> Any:
    """At temperature 1 the model fails (HTTP 400) on every question it would get wrong; right answers otherwise."""
    prompt = last_user_text(body)
    text = respond(prompt)
    if (body.get("temperature") or 0) >= 0.5 and "greater than" not in prompt:
        return {"status": 400, "error": "the model refuses"}
    return text


async def test_a_candidate_cannot_win_by_erroring_on_the_samples_it_would_fail(tmp_path: Path) -> None:
    """Errored samples are counted apart in a run, but choosing the best candidate must count them as failures:
    otherwise a setting that errors wherever it would fail scores 1.0 on validation and becomes best_task.yaml."""
    space = {"temperature": {"type": "choice", "choices": [0.0, 1.0]}}
    task = task_config(tmp_path, template=GOOD, strategy="search", space=space, sampler="grid", prune=False)
    with OpenAITestServer(erring_reply) as srv:
        result = await aoptimize(str(task), spec(srv), budget=1000, output_dir=tmp_path / "out", run_settings=NO_CACHE)
    trials = {t["params"]["temperature"]: t for t in journal(result.folder) if t["kind"] == "trial" and t.get("params")}
    assert trials[1.0]["objectives"]["score"] < 0.5  # its errors count as failures when candidates are ranked
    assert trials[0.0]["objectives"]["score"] == 1.0
    assert result.best != trials[1.0]["cid"]
    winner = yaml.safe_load((result.folder / "best_task.yaml").read_text())
    assert (winner.get("generation") or {}).get("temperature") != 1.0
    assert trials[1.0]["errored"] == 17 and trials[1.0]["n"] == 27  # the errors are shown apart in the trials table


async def test_a_literal_key_never_reaches_the_optimisers_own_files(tmp_path: Path, server: OpenAITestServer) -> None:
    """A model choice holding a credential is refused before anything is written (it would be journaled with every
    trial); a literal key in the task's model: section stays out of optimization.json and best_task.yaml."""
    from assay.errors import ConfigError

    secret = "sk-SECRET-123"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    keyed = {**spec(server, "small"), "api_key": secret}
    task = hot_task(tmp_path / "a", space={"model": {"type": "choice", "choices": [spec(server), keyed]}})
    with pytest.raises(ConfigError, match=r"optimize\.space\.model\.choices\[1\]: holds a credential \('api_key'\)"):
        await aoptimize(str(task), spec(server), budget=1000, output_dir=tmp_path / "a" / "out", run_settings=NO_CACHE)
    assert server.requests_total == 0 and not (tmp_path / "a" / "out").exists()
    task = hot_task(tmp_path / "b", space={"temperature": {"type": "choice", "choices": [0.0, 0.9]}}, sampler="grid")
    config = yaml.safe_load(task.read_text())
    task.write_text(yaml.safe_dump({**config, "model": {**spec(server), "api_key": secret}}))
    result = await aoptimize(str(task), None, budget=1000, output_dir=tmp_path / "b" / "out", run_settings=NO_CACHE)
    assert result.improved  # the task's model (with its key) answered
    own = [p for p in result.folder.iterdir() if p.is_file()]
    assert {p.name for p in own} >= {"optimization.json", "best_task.yaml", "journal.jsonl", "summary.json"}
    assert not [p.name for p in own if secret in p.read_text()]
    assert yaml.safe_load((result.folder / "best_task.yaml").read_text())["model"]["model"] == "big"


@pytest.mark.timeout(60)
async def test_a_small_space_without_a_trial_limit_ends_and_counts_only_calls_made(
    tmp_path: Path, server: OpenAITestServer
) -> None:
    """Over two model choices and no `trials:`, TPE proposes the same two points again and again. Each repeat was
    answered from the journal but charged, and the budget check ran only before real calls: the count passed the
    budget (41,000 of 1,000) and the search never ended. A repeat is free now, and repeats end the search."""
    space = {"model": {"type": "choice", "choices": [spec(server), spec(server, "small")]}}
    task = hot_task(tmp_path, space=space)
    result = await aoptimize(str(task), spec(server), budget=1000, output_dir=tmp_path / "out", run_settings=NO_CACHE)
    assert result.calls["used"] == result.calls["task_model"] == 3 * 27 <= 1000  # the original and two choices
    assert server.requests_total == result.calls["used"] + result.calls["final_test"]
    trials = [e for e in journal(result.folder) if e["kind"] == "trial"]
    assert len(trials) == 3 and len({t["cid"] for t in trials}) == 3
