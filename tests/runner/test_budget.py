"""``assay run --budget-usd``: refused when estimated above the budget, stopped once the measured spend reaches it
(resumable with more, every sample once), stopped at once when a provider reports no usage (never counted free)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from assay.cli import main
from assay.store.rundir import SAMPLES
from assay.testing.server import OpenAITestServer

N = 50
# $100 per million tokens in and out: a request of the test server (about 2 words in, 1 out) costs about $0.0003
PRICES = {"m": {"input": 100.0, "output": 100.0}}


def _setup(tmp_path: Path, max_tokens: int = 8) -> tuple[Path, Path]:
    rows = [{"id": f"s{i}", "question": f"q{i} please", "answer": "yes"} for i in range(N)]
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    task = tmp_path / "task.yaml"
    config = {
        "name": "qa",
        "dataset": {"path": str(data)},
        "fields": {"id": "id", "input": "question", "target": "answer"},
        "template": "{{ question }}",
        "generation": {"max_tokens": max_tokens},
        "evaluators": ["exact_match"],
    }
    task.write_text(yaml.safe_dump(config), encoding="utf-8")
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(PRICES), encoding="utf-8")
    return task, prices


def _invoke(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(main, args)
    return result.exit_code, " ".join(result.output.split())


def _manifest(folder: Path) -> dict[str, Any]:
    return json.loads((next(folder.iterdir()) / "run.json").read_text())


def test_a_run_estimated_above_the_budget_is_refused_before_anything_is_written(tmp_path: Path):
    task, prices = _setup(tmp_path, max_tokens=1_000)  # 50 answers of up to 1,000 tokens: about $5
    with OpenAITestServer("yes") as server:
        code, out = _invoke(["run", str(task), "--model", "openai:m", "--base-url", server.base_url, "--prices",
                             str(prices), "--budget-usd", "1", "--output", str(tmp_path / "runs")])  # fmt: skip
    assert code == 2 and "the run is estimated at $5.0" in out and "raise the budget" in out
    assert not (tmp_path / "runs").exists()


def test_the_run_stops_when_its_spend_reaches_the_budget_and_resumes_with_more(tmp_path: Path):
    task, prices = _setup(tmp_path, max_tokens=2)  # estimated at about $0.0005 a request, $0.025 in all
    runs = tmp_path / "runs"
    long_prompts = {"text": "yes", "usage": {"prompt_tokens": 100, "completion_tokens": 50}}  # $0.015 a request
    with OpenAITestServer(lambda request: long_prompts) as server:
        model = ["--model", "openai:m", "--base-url", server.base_url, "--prices", str(prices)]
        code, out = _invoke(["run", str(task), *model, "--budget-usd", "0.05", "-c", "1", "--output", str(runs)])
        assert code == 3, out
        manifest = _manifest(runs)
        spent = manifest["config"]["budget"]
        assert manifest["status"] == "failed" and "--budget-usd 0.05 reached" in out
        assert spent["spent_usd"] == pytest.approx(0.06) and spent["requests"] == 4  # stopped at the 4th answer
        folder = next(runs.iterdir())
        code, out = _invoke(["run", "--resume", str(folder), "--budget-usd", "0.05"])
        assert code == 2 and "reached" in out  # spent already: nothing more may run
        code, out = _invoke(["run", "--resume", str(folder), "--budget-usd", "1"])
        assert code == 0, out
    ids = [json.loads(line)["sample_id"] for line in (folder / SAMPLES).open()]
    assert sorted(ids) == sorted(f"s{i}" for i in range(N))  # every sample exactly once
    budget = _manifest(runs)["config"]["budget"]
    assert budget["limit_usd"] == 1 and budget["spent_usd"] == pytest.approx(N * 0.015)


def test_usage_a_provider_did_not_report_stops_the_run(tmp_path: Path):
    task, prices = _setup(tmp_path)
    unreported = {"text": "yes", "usage": {"prompt_tokens": 0, "completion_tokens": 0}}
    with OpenAITestServer(lambda request: unreported) as server:
        model = ["--model", "openai:m", "--base-url", server.base_url, "--prices", str(prices)]
        code, out = _invoke(["run", str(task), *model, "--budget-usd", "1", "-c", "1", "--output", str(tmp_path / "r")])
    assert code == 3 and "did not report the usage" in out and "cannot be measured" in out
    assert _manifest(tmp_path / "r")["config"]["budget"]["unreported"] == 1


def test_a_budget_needs_a_price_for_every_model_it_calls(tmp_path: Path):
    task, _ = _setup(tmp_path)
    with OpenAITestServer("yes") as server:
        code, out = _invoke(["run", str(task), "--model", "openai:m", "--base-url", server.base_url,
                             "--budget-usd", "1", "--output", str(tmp_path / "runs")])  # fmt: skip
    assert code == 2 and "no price for m" in out


@pytest.mark.parametrize("value", ["0", "-1"])
def test_a_budget_is_a_positive_sum(tmp_path: Path, value: str):
    task, _ = _setup(tmp_path)
    code, out = _invoke(["run", str(task), "--model", "openai:m", "--budget-usd", value])
    assert code == 2 and "--budget-usd" in out


def test_judge_calls_are_spent_at_the_judges_price_and_an_unreported_one_stops_the_run():
    from assay.runner.budget import Budget
    from assay.runner.outcomes import BudgetUnmeasured

    prices = {"m": {"input": 1.0, "output": 1.0}, "judge-1": {"input": 10.0, "output": 10.0}}
    budget = Budget(1.0, prices, "m", ["judge-1"])
    call = {"model": "judge-1", "usage": {"input_tokens": 1000, "output_tokens": 100}, "cached": False}
    verdict = {"score": 1.0, "passed": True, "details": {"judges": [call, {**call, "cached": True}]}}
    record = {"sample_id": "s", "responses": [{"usage": {"input_tokens": 10, "output_tokens": 5}}],
              "filters": {"none": {"verdicts": {"llm_judge": [verdict]}}}}  # fmt: skip
    budget.observe(record)
    assert budget.spent == pytest.approx((15 * 1.0 + 1100 * 10.0) / 1e6)  # the cached judge call cost nothing
    silent = {"score": 1.0, "passed": True, "details": {"judge": {"model": "judge-1", "usage": {}}}}
    with pytest.raises(BudgetUnmeasured, match="judge call reported no usage"):
        budget.observe({**record, "filters": {"none": {"verdicts": {"llm_judge": [silent]}}}})
