"""The reflective strategy end to end against real local servers: it improves the held-out test score
significantly, spends exactly the calls it counts, keeps lineage, and never lets a test sample reach the optimiser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import assay
from assay.errors import ConfigError
from assay.optimize import aoptimize
from assay.optimize.engine import OptimizeError
from assay.testing.server import OpenAITestServer
from tests.optimize.optimize_support import NO_CACHE, demo_rows, journal, model_spec, task_config


async def test_reflective_raises_the_test_score_significantly(
    tmp_path: Path, task_server: OpenAITestServer, opt_server: OpenAITestServer
) -> None:
    task = task_config(tmp_path)
    result = await aoptimize(
        str(task), model_spec(task_server), optimizer_model=model_spec(opt_server), budget=150,
        output_dir=tmp_path / "out", run_settings=NO_CACHE,
    )  # fmt: skip
    test = result.test
    assert test["baseline"]["mean"] < 0.5
    assert test["best"]["mean"] >= 0.9
    assert result.improved and result.test["comparison"]["better"]
    assert result.test["comparison"]["test"] == "mcnemar" and result.test["comparison"]["p_value"] < 0.01
    assert result.summary.startswith("improved")
    # every call is counted: the task server saw the charged calls plus the final test, the optimiser its own
    assert task_server.requests_total == result.calls["task_model"] + result.calls["final_test"]
    assert opt_server.requests_total == result.calls["optimizer"] >= 1
    assert result.calls["used"] == result.calls["task_model"] + result.calls["optimizer"] <= 150
    folder = result.folder
    lineage = json.loads((folder / "lineage.json").read_text())
    best = next(c for c in lineage if c["cid"] == result.best)
    assert best["origin"] == "reflection" and best["parents"]
    assert best["failures"] and all(f["feedback"] for f in best["failures"])
    assert "+Answer with the answer only" in best["diff"] or "+Write numbers with digits" in best["diff"]
    # the winning task is an ordinary task file that scores what the optimisation found
    winner = yaml.safe_load((folder / "best_task.yaml").read_text())
    assert "Answer with the answer only" in winner["template"]
    assert (
        "-  {# optimize: instructions #}Answer the question.{# end optimize #}"
        in (folder / "best_task.diff").read_text()
    )
    run = await assay.arun(winner, model_spec(task_server), output_dir=tmp_path / "check", cache=False)
    assert run.row("fmt", "exact_match").mean == 1.0
    # every candidate evaluation is an ordinary run folder
    trial_rows = (folder / "trials.csv").read_text().splitlines()
    assert trial_rows[0].startswith("trial,iteration,origin,cid,parent")
    for entry in journal(folder):
        if entry["kind"] == "eval":
            assert (Path(entry["run_dir"]) / "results.json").is_file()


async def test_no_test_sample_reaches_the_optimiser(
    tmp_path: Path, task_server: OpenAITestServer, opt_server: OpenAITestServer
) -> None:
    sentinel = "ZZSENTINEL"
    rows = demo_rows()
    for i, row in enumerate(rows):
        row["split"] = "test" if i % 3 == 0 else "val" if i % 3 == 1 else "train"
        if row["split"] == "test":
            row["question"] += f" {sentinel}{i}"
            row["note"] = sentinel
    task = task_config(tmp_path, rows, splits={"field": "split"})
    result = await aoptimize(
        str(task), model_spec(task_server), optimizer_model=model_spec(opt_server), budget=150,
        output_dir=tmp_path / "out", run_settings=NO_CACHE,
    )  # fmt: skip
    assert opt_server.requests_total >= 1
    assert not any(sentinel in json.dumps(body) for body in opt_server.requests)
    # not vacuous: the test split was evaluated (by the final comparison only) and carried the sentinel
    assert any(sentinel in json.dumps(body) for body in task_server.requests)
    for entry in journal(result.folder):
        if entry["kind"] in ("propose", "candidate") or (entry["kind"] == "eval" and entry["split"] != "test"):
            assert sentinel not in json.dumps(entry)


async def test_test_split_cannot_be_charged_to_a_strategy(
    tmp_path: Path, task_server: OpenAITestServer, opt_server: OpenAITestServer
) -> None:
    from assay.optimize.engine import Engine
    from assay.optimize.journal import Journal
    from assay.optimize.spec import parse_spec
    from assay.optimize.splits import make_splits
    from assay.tasks import load_task

    task = load_task(task_config(tmp_path))
    spec = parse_spec(task)
    splits = make_splits(list(task.dataset.rows), spec.splits)
    engine = Engine(tmp_path, task, model_spec(task_server), None, spec, splits, 100, NO_CACHE, Journal(tmp_path))
    with pytest.raises(OptimizeError, match="test split"):
        await engine.evaluate(engine.baseline(), "test")
    with pytest.raises(OptimizeError, match="outside the train split"):
        await engine.evaluate(engine.baseline(), "train", splits["val"][:2])
    assert task_server.requests_total == 0


@pytest.mark.parametrize("budget", [30, 41, 57])
async def test_budget_is_exact(
    tmp_path: Path, task_server: OpenAITestServer, opt_server: OpenAITestServer, budget: int
) -> None:
    task = task_config(tmp_path)
    result = await aoptimize(
        str(task), model_spec(task_server), optimizer_model=model_spec(opt_server), budget=budget,
        output_dir=tmp_path / "out", run_settings=NO_CACHE,
    )  # fmt: skip
    charged = task_server.requests_total - result.calls["final_test"] + opt_server.requests_total
    assert charged == result.calls["used"] <= budget
    # it stopped because the next step would not fit: a proposal step is bought whole (the parent's minibatch 4,
    # the reflection 1, the child's minibatch 4 and its validation 27), and a merge is a validation run (27)
    assert budget - result.calls["used"] < 4 + 1 + 4 + 27


async def test_budget_below_the_baseline_is_a_clear_error(
    tmp_path: Path, task_server: OpenAITestServer, opt_server: OpenAITestServer
) -> None:
    task = task_config(tmp_path)
    with pytest.raises(ConfigError, match="does not cover evaluating the original task"):
        await aoptimize(
            str(task), model_spec(task_server), optimizer_model=model_spec(opt_server), budget=10,
            output_dir=tmp_path / "out", run_settings=NO_CACHE,
        )  # fmt: skip
    assert task_server.requests_total == 0 and opt_server.requests_total == 0


def test_sync_api_and_callable_package(
    tmp_path: Path, task_server: OpenAITestServer, opt_server: OpenAITestServer
) -> None:
    task = task_config(tmp_path)
    result = assay.optimize(
        str(task), model_spec(task_server), optimizer_model=model_spec(opt_server), budget=100,
        output_dir=tmp_path / "out", run_settings=NO_CACHE,
    )  # fmt: skip
    assert result.improved


async def test_merge_of_two_frontier_candidates_is_evaluated_and_kept(
    tmp_path: Path, task_server: OpenAITestServer
) -> None:
    """Two children of the original changed different components; the merge takes both and beats each."""
    import random

    from assay.optimize.candidate import Candidate
    from assay.optimize.demo import RULE_CONCISE, RULE_DIGITS
    from assay.optimize.engine import Engine
    from assay.optimize.journal import Journal
    from assay.optimize.reflective import Pool, _try_merge, pareto_front
    from assay.optimize.spec import parse_spec
    from assay.optimize.splits import make_splits
    from assay.tasks import load_task

    template = (
        "{# optimize: a #}Answer.{# end optimize #}\n{# optimize: b #}{# end optimize #}\nQuestion: {{ question }}\n"
    )
    task = load_task(task_config(tmp_path, template=template, components=["a", "b"]))
    spec = parse_spec(task)
    splits = make_splits(list(task.dataset.rows), spec.splits)
    folder = tmp_path / "opt"
    folder.mkdir()
    engine = Engine(folder, task, model_spec(task_server), None, spec, splits, 500, NO_CACHE, Journal(folder))
    base = engine.baseline()
    first, second = base.with_component("a", RULE_CONCISE), base.with_component("b", RULE_DIGITS)
    pool = Pool()
    for cand, parents in ((base, []), (first, [base]), (second, [base])):
        pool.add(cand, await engine.evaluate(cand, "val"), parents)
    front = pareto_front({c: e.scores for c, e in pool.val.items()})
    assert set(front) == {first.id}  # digits alone fix no sample (sums are still sentences): dominated
    assert await _try_merge(engine, pool, {first.id: 1, second.id: 1}, random.Random(0), set())
    merged = Candidate({"a": RULE_CONCISE, "b": RULE_DIGITS})
    assert merged.id in pool.candidates and set(pool.parents[merged.id]) == {first.id, second.id}
    assert pool.val[merged.id].mean == 1.0 > max(pool.val[first.id].mean, pool.val[second.id].mean)
    lineage = engine.journal.get("candidate", merged.id)
    assert lineage is not None and lineage["origin"] == "merge" and set(lineage["parents"]) == {first.id, second.id}
