"""The position-bias rate of pairwise judges, per verdict and for a whole run (results.json ``assay.judging``)."""

from __future__ import annotations

import json
from typing import Any

import assay.api
from assay.results.judging import position_bias
from assay.verdict import Verdict
from tests.evaluators.judge.judge_support import blocks


def pairwise_verdict(orders: list[list[str]], model: str = "j", position: bool = True) -> dict[str, Any]:
    first = sum(o == ["win", "loss"] for o in orders)
    second = sum(o == ["loss", "win"] for o in orders)
    counts = {"judgements": len(orders), "inconsistent": first + second, "prefers_first": first}
    counts["prefers_second"] = second
    details: dict[str, Any] = {"mode": "pairwise", "orders": orders, "judge": {"model": model}}
    if position:
        details["position"] = {**counts, "by_judge": {model: counts}}
    return Verdict.fail("lost", details=details).to_dict()


def test_rate_counts_flipped_judgements_over_all_judged_in_both_orders():
    verdicts = [
        pairwise_verdict([["win", "loss"]]),
        pairwise_verdict([["win", "win"]]),
        pairwise_verdict([["loss", "win"]], model="k"),
        pairwise_verdict([["tie", "loss"]], model="k", position=False),  # an older record: read from its orders
        pairwise_verdict([["win", "loss"]], model="k", position=False),
        Verdict.fail("graded 'fail'", details={"mode": "grade", "grade": "fail"}).to_dict(),  # not pairwise
        Verdict.pass_().to_dict(),
    ]
    figures = position_bias(iter(verdicts)).to_dict()
    assert figures["verdicts"] == 5 and figures["judgements"] == 5
    assert (figures["inconsistent"], figures["prefers_first"], figures["prefers_second"]) == (3, 2, 1)
    assert figures["rate"] == 3 / 5
    assert figures["by_judge"]["j"]["rate"] == 1 / 2 and figures["by_judge"]["k"]["rate"] == 2 / 3


def test_no_pairwise_verdict_has_no_rate():
    figures = position_bias([Verdict.pass_().to_dict()]).to_dict()
    assert figures["verdicts"] == 0 and figures["rate"] is None


def reply(request: dict[str, Any]) -> Any:
    if request["model"] == "student":
        return request["messages"][-1]["content"].split()[-1]
    b = blocks(request)
    if "q0" in (b["response A"], b["response B"]):  # q0: a judge that always prefers whatever is shown first
        return json.dumps({"explanation": "first is better", "fix": "", "winner": "A"})
    winner = "A" if b["response A"] != "baseline" else "B"  # otherwise the output always wins
    return json.dumps({"explanation": "better", "fix": "", "winner": winner})


def test_a_run_reports_the_position_bias_rate(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "cache"))
    from assay.testing.server import OpenAITestServer

    with OpenAITestServer(reply) as server:
        judge = {"provider": "openai", "model": "judge", "base_url": server.base_url}
        task = {
            "name": "echo",
            "dataset": [{"id": f"q{i}", "question": f"Say q{i}", "old": "baseline"} for i in range(4)],
            "fields": {"id": "id", "input": "question"},
            "template": "{{ question }}",
            "evaluators": [
                {"name": "llm_judge", "model": judge, "criteria": "c", "mode": "pairwise", "baseline": "doc.old"}
                | {"expected": "none", "reference": None}
            ],
        }
        student = {"provider": "openai", "model": "student", "base_url": server.base_url}
        # a position-inconsistent judgement is an error verdict, above the default 10 % here: no limit for this test
        assay.api.run(task, student, output_dir=tmp_path / "runs", progress=False, cache=False, max_error_rate=None)
    run_dir = next((tmp_path / "runs").iterdir())
    results = json.loads((run_dir / "results.json").read_text())
    (figures,) = results["assay"]["judging"]["position_bias"].values()
    assert (figures["verdicts"], figures["judgements"], figures["inconsistent"]) == (4, 4, 1)
    assert figures["rate"] == 0.25 and figures["prefers_first"] == 1
    assert figures["by_judge"] == {"judge": {**{k: figures[k] for k in figures if k not in ("verdicts", "by_judge")}}}
    assert results["assay"]["tasks"]["echo"]["filters"]["none"]["llm_judge"]["n_errored"] == 1
