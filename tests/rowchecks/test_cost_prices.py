"""promptfoo's ``cost`` check prices a response with the run's ``--prices`` table: the same price table the run's
operational figures use, so a config's cost check needs no price of its own."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from assay.testing.server import OpenAITestServer
from tests.e2e.e2e_support import sample_lines
from tests.support import assay_in_process

CONFIG = """
prompts: ["Say {{word}}"]
providers: [openai:gpt-4o-mini]
tests:
  - vars: {word: cheap}
    assert: [{type: cost, threshold: 0.001}]
  - vars: {word: dear}
    assert: [{type: cost, threshold: 0.00001}]
"""


def _run(
    tmp_path: Path, server: OpenAITestServer, *extra: str, config: str = CONFIG
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "promptfooconfig.yaml").write_text(config)
    env = {"OPENAI_BASE_URL": server.base_url, "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
    return assay_in_process("run", "promptfooconfig.yaml", "-o", "runs", "-q", *extra, cwd=tmp_path, env=env)


def test_cost_checks_use_the_runs_prices(tmp_path: Path) -> None:
    # the server counts words as tokens: "Say cheap" is 2 input tokens, the reply's 10 words 10 output tokens
    reply = {"text": "one two three four five six seven eight nine ten"}
    (tmp_path / "prices.json").write_text(json.dumps({"gpt-4o-mini": {"input": 100.0, "output": 100.0}}))
    with OpenAITestServer(lambda request: reply, models=("gpt-4o-mini",)) as server:
        proc = _run(tmp_path, server, "--prices", "prices.json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run_dir,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    verdicts = {r["sample_id"]: r["filters"]["none"]["verdicts"]["row_checks"][0] for r in sample_lines(run_dir)}
    # cost = (2 + 10) tokens * 100 USD / 1M = 0.0012 USD, over both thresholds (0.001 and 0.00001)
    assert verdicts["test-1"]["passed"] is False and "Cost 0.0012 is greater than threshold 0.001" in str(
        verdicts["test-1"]["reason"]
    )
    assert verdicts["test-2"]["passed"] is False


def test_cost_passes_under_its_threshold_and_errors_without_a_price(tmp_path: Path) -> None:
    reply = {"text": "ok"}
    (tmp_path / "prices.json").write_text(json.dumps({"gpt-4o-mini": {"input": 1.0, "output": 1.0}}))
    with OpenAITestServer(lambda request: reply, models=("gpt-4o-mini",)) as server:
        priced = _run(tmp_path, server, "--prices", "prices.json")
        (run_dir,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
        verdicts = {r["sample_id"]: r["filters"]["none"]["verdicts"]["row_checks"][0] for r in sample_lines(run_dir)}
        assert priced.returncode == 0, priced.stdout + priced.stderr
        assert verdicts["test-1"]["passed"] is True  # 3 tokens at 1 USD/1M: 3e-6 <= 0.001
        assert verdicts["test-2"]["passed"] is True  # 3e-6 <= 1e-5
    with OpenAITestServer(lambda request: reply, models=("my-own-model",)) as server:
        (tmp_path / "x").mkdir()
        unpriced = _run(tmp_path / "x", server, config=CONFIG.replace("gpt-4o-mini", "my-own-model"))
    assert unpriced.returncode != 0  # every sample errored: no price for the model
    (run_dir,) = [p for p in (tmp_path / "x" / "runs").iterdir() if p.is_dir()]
    errors = [r["filters"]["none"]["verdicts"]["row_checks"][0].get("error") for r in sample_lines(run_dir)]
    assert all("no price for model 'my-own-model' in the run's --prices" in str(e) for e in errors)
    assert all("Cost assertion does not support providers that do not return cost" in str(e) for e in errors)


def test_without_prices_an_openai_model_is_priced_from_promptfoos_own_table(tmp_path: Path) -> None:
    """promptfoo's OpenAI provider prices a call from its model table when nothing else prices it (gpt-4o-mini:
    $0.15 / $0.6 per 1M prompt / completion tokens in promptfoo 0.123.1); the run's --prices still wins."""
    from assay.tasks.checks.openai_prices import PRICES, SOURCE, promptfoo_price

    assert "0.123.1" in SOURCE
    assert PRICES["gpt-4"] == {"input": 30, "output": 60} and PRICES["gpt-3.5-turbo"] == {"input": 0.5, "output": 1.5}
    assert promptfoo_price("gpt-5.6", 272_001) == {"input": 8, "output": 30}  # its long-context rates
    assert promptfoo_price("my-own-model", 1) is None
    reply = {"text": "ok", "usage": {"prompt_tokens": 2, "completion_tokens": 2000}}  # $0.0012003
    with OpenAITestServer(lambda request: reply, models=("gpt-4o-mini",)) as server:
        table = _run(tmp_path, server)
        (tmp_path / "cheap.json").write_text(json.dumps({"gpt-4o-mini": {"input": 0.0, "output": 0.0}}))
        (tmp_path / "y").mkdir()
        (tmp_path / "y" / "cheap.json").write_text((tmp_path / "cheap.json").read_text())
        overridden = _run(tmp_path / "y", server, "--prices", "cheap.json")
    assert table.returncode == 0, table.stdout + table.stderr
    (run_dir,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    verdicts = {r["sample_id"]: r["filters"]["none"]["verdicts"]["row_checks"][0] for r in sample_lines(run_dir)}
    assert verdicts["test-1"]["passed"] is False and "Cost 0.0012 is greater than threshold 0.001" in str(
        verdicts["test-1"]["reason"]
    )
    (run_dir,) = [p for p in (tmp_path / "y" / "runs").iterdir() if p.is_dir()]
    verdicts = {r["sample_id"]: r["filters"]["none"]["verdicts"]["row_checks"][0] for r in sample_lines(run_dir)}
    assert overridden.returncode == 0 and all(v["passed"] for v in verdicts.values())  # --prices: free
