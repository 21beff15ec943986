"""A whole run with an llm_judge metric against a local server, then `assay feedback` on its folder."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import assay.api
from assay.cli import main
from assay.feedback.themes import build_report
from assay.store.sampleindex import read_records
from assay.testing.server import OpenAITestServer

CAPITALS = {"France": "Paris", "Italy": "Rome", "Spain": "Madrid", "Peru": "Lima", "Chile": "Santiago"}
STUDENT = {"France": "Paris", "Italy": "Milan", "Spain": "Madrid", "Peru": "Cusco", "Chile": "Santiago"}
_BLOCK = r'<(untrusted-[0-9a-f]{{16}}) name="{name}">\n(.*?)\n</\1>'


def reply(request: dict[str, Any]) -> str:
    text = request["messages"][-1]["content"]
    if request["model"] == "student":
        country = re.search(r"capital of (\w+)", text).group(1)
        return STUDENT[country]
    if request["model"] == "judge":
        response = re.search(_BLOCK.format(name="response"), text, re.DOTALL).group(2)
        reference = re.search(_BLOCK.format(name="reference"), text, re.DOTALL).group(2)
        ok = reference in response
        why = "It names the right city." if ok else f"It names {response}, but the capital is {reference}."
        problem = "" if ok else f"Names a large city instead of the capital{'.' if response == 'Milan' else ''}"
        fix = "" if ok else f"Answer {reference}, the capital, not {response}."
        return json.dumps({"explanation": why, "problem": problem, "fix": fix, "label": "pass" if ok else "fail"})
    if request["model"] == "coach":
        return "Answer with the capital city itself, not another large city."
    return "Two samples name a large city instead of the capital."


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "cache"))
    with OpenAITestServer(reply) as server:
        judge = {"provider": "openai", "model": "judge", "base_url": server.base_url}
        task = {
            "name": "capitals",
            "dataset": [
                {"id": c, "question": f"What is the capital of {c}?", "answer": a} for c, a in CAPITALS.items()
            ],
            "fields": {"id": "id", "input": "question", "target": "answer"},
            "template": "{{ question }}",
            "evaluators": [
                {"name": "llm_judge", "model": judge, "criteria": "The response names the capital city."},
                {"name": "exact_match"},
            ],
        }
        student = {"provider": "openai", "model": "student", "base_url": server.base_url}
        assay.api.run(task, student, output_dir=tmp_path / "runs", progress=False, cache=False)
        yield next((tmp_path / "runs").iterdir()), server


def test_judge_verdicts_and_prompts_are_in_the_sample_log(run_dir):
    path, _ = run_dir
    records = {r.sample_id: r for r in read_records(path)}
    verdict = records["Italy"].filters["none"].verdicts["llm_judge"][0]
    assert verdict["passed"] is False and verdict["feedback"] == "Answer Rome, the capital, not Milan."
    assert "It names Milan, but the capital is Rome." in verdict["reason"]  # the diagnosis stays the reason
    judge = verdict["details"]["judge"]
    assert judge["model"] == "judge" and judge["usage"]["input_tokens"] > 0
    prompt = verdict["details"]["judges"][0]["prompt"][1]["content"]
    assert "What is the capital of Italy?" in prompt  # the task reached the judge through the context
    assert records["France"].filters["none"].verdicts["llm_judge"][0]["passed"] is True


def test_themes_group_failures_by_metric_and_pattern(run_dir):
    path, _ = run_dir
    report = build_report(path)
    assert (report.n_samples, report.n_failing, report.n_errored) == (5, 2, 0)
    by_metric = {t.metric: t for t in report.themes}
    assert set(by_metric) == {"llm_judge", "exact_match"}
    judged = by_metric["llm_judge"]
    assert sorted(judged.samples) == [("capitals", "Italy"), ("capitals", "Peru")]
    assert judged.grade == "fail" and judged.evaluator == "llm_judge"
    # grouped by the judge's stated problem (its wording aside), not by the explanation quoted in each reason
    assert judged.pattern == "judge:names a large city instead of the capital" and judged.n_samples == 2
    assert judged.title == "the judge's problem: Names a large city instead of the capital."
    assert judged.criteria == "The response names the capital city."
    assert judged.suggestion in ("Answer Rome, the capital, not Milan.", "Answer Lima, the capital, not Cusco.")
    assert judged.also == [("exact_match fails: output [the output] does not equal expected [the expected answer]", 2)]


def test_feedback_command_text_json_and_models(run_dir):
    path, server = run_dir
    runner = CliRunner()
    text = runner.invoke(main, ["feedback", str(path)])
    assert text.exit_code == 0, text.output
    assert "2 of 5 samples failing" in text.output and "llm_judge [grade fail] fails:" in text.output
    as_json = runner.invoke(main, ["feedback", str(path), "--format", "json"])
    data = json.loads(as_json.output)
    assert {t["metric"] for t in data["themes"]} == {"llm_judge", "exact_match"}
    assert all(t["n_samples"] == 2 for t in data["themes"])
    before = len(server.requests)
    with_models = runner.invoke(
        main,
        [
            *("feedback", str(path), "--summarize-with", "openai:summary", "--write-with", "openai:coach"),
            *("--base-url", server.base_url, "--format", "json"),
        ],
    )
    assert with_models.exit_code == 0, with_models.output
    data = json.loads(with_models.output)
    assert data["summary"] == "Two samples name a large city instead of the capital."
    assert data["summary_model"] == "summary"
    examples = [e for t in data["themes"] for e in t["examples"]]
    assert len(examples) == 4 and all(e["model_feedback"].startswith("Answer with the capital") for e in examples)
    assert len(server.requests) - before == 5  # four corrections and one summary
    coach = next(r for r in server.requests if r["model"] == "coach")["messages"][-1]["content"]
    assert re.search(_BLOCK.format(name="output"), coach) and "What is the capital of" in coach
