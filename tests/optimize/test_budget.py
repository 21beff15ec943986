"""The budget of model calls is exact, against real local servers that fail requests: every attempt is a call (a
retry too), a step is begun only when it can be finished, a proposal that did no better is tested again when it
is proposed again, and a perfect partial score is never pruned."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from assay.optimize import aoptimize
from assay.optimize.demo import reflect_text, respond
from assay.optimize.search import wilson_upper
from assay.testing.server import FaultPlan, OpenAITestServer, last_user_text
from tests.optimize.optimize_support import NO_CACHE, demo_rows, journal, model_spec, task_config

FAIL_ONCE = FaultPlan(fail_first=1, fail_first_with=500)  # each distinct request body fails once, then succeeds


async def test_retried_calls_are_counted(tmp_path: Path) -> None:
    """Each request failed once and was retried: 2 attempts each. The count used to take a run's requests (and the
    optimiser's requests), not its attempts: half of what was sent."""
    task = task_config(tmp_path)
    task_srv = OpenAITestServer(lambda b: respond(last_user_text(b)), faults=FAIL_ONCE)
    opt_srv = OpenAITestServer(lambda b: reflect_text(last_user_text(b)), faults=FAIL_ONCE)
    with task_srv, opt_srv:
        result = await aoptimize(
            str(task), model_spec(task_srv), optimizer_model=model_spec(opt_srv), budget=400,
            output_dir=tmp_path / "out", run_settings=NO_CACHE,
        )  # fmt: skip
    calls = result.calls
    assert task_srv.status_counts[500] >= 27 and opt_srv.status_counts[500] >= 1  # retried: failed, then answered
    assert task_srv.requests_total == calls["task_model"] + calls["final_test"]
    assert opt_srv.requests_total == calls["optimizer"] >= 2
    assert calls["used"] == calls["task_model"] + calls["optimizer"] <= 400
    proposals = [e for e in journal(result.folder) if e["kind"] == "propose"]
    assert all(p["attempts"] == 2 for p in proposals)


@pytest.mark.parametrize("budget", [40, 60, 90])
async def test_the_budget_is_never_passed_when_retries_take_it(tmp_path: Path, budget: int) -> None:
    """With every request needing two attempts, a step's calls are not known in advance: the attempt that would pass
    the budget is refused, so exactly what was counted was sent, and never more than the budget."""
    task = task_config(tmp_path)
    task_srv = OpenAITestServer(lambda b: respond(last_user_text(b)), faults=FAIL_ONCE)
    opt_srv = OpenAITestServer(lambda b: reflect_text(last_user_text(b)), faults=FAIL_ONCE)
    with task_srv, opt_srv:
        if budget < 54:  # the original's validation (27 requests) takes 54 attempts: it cannot be finished
            from assay.optimize.engine import OptimizeError

            with pytest.raises(OptimizeError, match="does not cover evaluating the original task"):
                await aoptimize(
                    str(task), model_spec(task_srv), optimizer_model=model_spec(opt_srv), budget=budget,
                    output_dir=tmp_path / "out", run_settings=NO_CACHE,
                )  # fmt: skip
            assert task_srv.requests_total == budget and opt_srv.requests_total == 0
            return
        result = await aoptimize(
            str(task), model_spec(task_srv), optimizer_model=model_spec(opt_srv), budget=budget,
            output_dir=tmp_path / "out", run_settings=NO_CACHE,
        )  # fmt: skip
    calls = result.calls
    sent = task_srv.requests_total - calls["final_test"] + opt_srv.requests_total
    assert sent == calls["used"] <= budget


async def test_no_proposal_is_bought_without_the_budget_to_validate_it(
    tmp_path: Path, task_server: OpenAITestServer, opt_server: OpenAITestServer
) -> None:
    """57 calls: the original's validation (27) leaves 30, less than a proposal step (minibatch 4, reflection 1, the
    child's minibatch 4 and its validation 27). The optimiser was asked anyway, and both minibatches were run, for
    a child that could never be validated: 9 calls for nothing."""
    task = task_config(tmp_path)
    result = await aoptimize(
        str(task), model_spec(task_server), optimizer_model=model_spec(opt_server), budget=57,
        output_dir=tmp_path / "out", run_settings=NO_CACHE,
    )  # fmt: skip
    assert opt_server.requests_total == 0
    assert result.calls["used"] == result.calls["task_model"] == 27


async def test_no_search_trial_is_begun_without_the_budget_for_its_validation(tmp_path: Path) -> None:
    """A trial scored on part of validation cannot become the best: with 27 + 20 calls, the first trial's first two
    parts (18 calls) were run and thrown away."""
    good = "{# optimize: instructions #}Answer with the answer only, nothing else.{# end optimize #}\n"
    task = task_config(
        tmp_path, template=good + "Question: {{ question }}\n", strategy="search", sampler="random", prune=False,
        space={"temperature": {"type": "float", "low": 0.0, "high": 1.0}},
    )  # fmt: skip
    with OpenAITestServer(lambda b: respond(last_user_text(b))) as srv:
        result = await aoptimize(str(task), model_spec(srv), budget=47, output_dir=tmp_path / "out",
                                 run_settings=NO_CACHE)  # fmt: skip
        assert srv.requests_total - result.calls["final_test"] == result.calls["used"] == 27


def test_a_perfect_partial_score_has_an_upper_bound_of_exactly_one() -> None:
    """The Wilson formula rounds to 0.9999999999999999 at a perfect score: below a perfect best, so pruned."""
    assert all(wilson_upper(1.0, n) == 1.0 for n in range(1, 500))
    assert all(wilson_upper(k / n, n) >= k / n for n in range(1, 60) for k in range(n + 1))


async def test_a_perfect_trial_is_not_pruned_when_the_original_is_perfect(tmp_path: Path) -> None:
    """Validation of 30 rows is scored in parts of 10: the bound of 10 perfect scores fell just under a perfect best."""
    good = "{# optimize: instructions #}Answer with the answer only, nothing else. Use digits.{# end optimize #}\n"
    rows = [{**row, "split": ("train", "val", "test")[i // 30]} for i, row in enumerate(demo_rows())]
    space = {"temperature": {"type": "choice", "choices": [0.1, 0.2]}}
    task = task_config(tmp_path, rows, template=good + "Question: {{ question }}\n", strategy="search",
                       sampler="grid", space=space, splits={"field": "split"})  # fmt: skip
    with OpenAITestServer(lambda b: respond(last_user_text(b))) as srv:
        result = await aoptimize(str(task), model_spec(srv), budget=1000, output_dir=tmp_path / "out",
                                 run_settings=NO_CACHE)  # fmt: skip
    trials = [e for e in journal(result.folder) if e["kind"] == "trial" and e.get("params")]
    assert len(trials) == 2 and all(t["mean"] == 1.0 for t in trials)
    assert not any(t["pruned"] for t in trials) and all(t["n"] == 30 for t in trials)


REPEATED = "Think about it."  # a text that changes nothing the model does
HELPS = "Answer with the answer only, nothing else. Write numbers with digits (like 42), never in words."


async def test_a_proposal_that_did_no_better_is_tested_again_and_shown_as_tried(
    tmp_path: Path, task_server: OpenAITestServer
) -> None:
    """The optimiser proposes the same text twice. The repeat was thrown away untested, forever (its call paid for
    nothing); now it is tested on the new minibatch, and the next prompt lists it as already tried."""
    asked: list[str] = []

    def optimiser(body: dict[str, Any]) -> str:
        prompt = last_user_text(body)
        asked.append(prompt)
        return "```\n" + (REPEATED if len(asked) <= 2 else HELPS) + "\n```"

    task = task_config(tmp_path, merge_every=0)
    with OpenAITestServer(optimiser) as opt_srv:
        result = await aoptimize(
            str(task), model_spec(task_server), optimizer_model=model_spec(opt_srv), budget=300,
            output_dir=tmp_path / "out", run_settings=NO_CACHE,
        )  # fmt: skip
    entries = journal(result.folder)
    texts = {e["key"]: e["candidate"]["components"].get("instructions") for e in entries if e["kind"] == "candidate"}
    tested = [t for t in entries if t["kind"] == "trial" and t["split"] == "train" and t["origin"] == "reflection"]
    assert [texts[t["cid"]] for t in tested][:3] == [REPEATED, REPEATED, HELPS]
    assert not tested[0]["accepted"] and not tested[1]["accepted"] and tested[2]["accepted"]
    assert "already tried" not in asked[0]
    assert f"<<<BEGIN tried 1>>>\n{REPEATED}\n<<<END tried 1>>>" in asked[1] and "tried 1" in asked[2]
    assert result.improved


async def test_reflection_sees_every_evaluators_feedback(tmp_path: Path, task_server: OpenAITestServer) -> None:
    """The task has two evaluators; only the optimised metric's (first) verdict reached the optimiser."""
    task = task_config(tmp_path)
    config = yaml.safe_load(task.read_text())
    config["evaluators"].append({"name": "contains", "substrings": ["ZQX"]})
    task.write_text(yaml.safe_dump(config, sort_keys=False))
    seen: list[str] = []

    def optimiser(body: dict[str, Any]) -> str:
        seen.append(last_user_text(body))
        return reflect_text(last_user_text(body))

    with OpenAITestServer(optimiser) as opt_srv:
        await aoptimize(
            str(task), model_spec(task_server), optimizer_model=model_spec(opt_srv), budget=100,
            output_dir=tmp_path / "out", run_settings=NO_CACHE,
        )  # fmt: skip
    assert seen
    feedback = seen[0].split("<<<BEGIN feedback>>>\n", 1)[1].split("\n<<<END feedback>>>", 1)[0]
    assert feedback.startswith("exact_match: ")  # the optimised metric first
    assert "\ncontains: Include 'ZQX' in the answer." in feedback
