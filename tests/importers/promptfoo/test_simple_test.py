"""promptfoo's examples/simple-test config, unchanged, run by `assay run` against the OpenAI test server: YAML 1.2
vars, a prompt file with two prompts, equals / icontains / is-json / javascript / python / similar / llm-rubric
checks and a $ref template; the figures computed by hand."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from assay.testing.server import OpenAITestServer
from tests.e2e.e2e_support import sample_lines
from tests.rowchecks.test_graded_server import GradingServer, cosine, letter_vector
from tests.support import assay_in_process

FIXTURE = Path(__file__).parent / "simple_test"
HELLO = "Ahoy, world!" + " " * 300  # over 300 characters: the python check's max(0, len(output) - 300) is 12
REPLIES = {
    "Yes": "Yarr",  # YAML 1.2: `body: Yes` is the text "Yes" (YAML 1.1 would send "True")
    "I'm hungry": "Arr, I be needin' some grub!",
    "Output the story of your life in JSON": '{"life": "sailed the seven seas"}',
    "Hello world": HELLO,
    "The quick brown fox jumps over the lazy dog": "Arrr, the quick brown fox be leapin' o'er the lazy sea dog",
}


def _grading(request: dict[str, Any]) -> bool:
    """A request of promptfoo's llm-rubric grader."""
    return any("grading output according to a user-specified rubric" in str(m["content"]) for m in request["messages"])


def reply(request: dict[str, Any]) -> str:
    text = request["messages"][-1]["content"]
    if _grading(request):
        return json.dumps({"reason": "spoken like a pirate", "pass": True, "score": 1})  # promptfoo's llm-rubric grader
    return REPLIES[text.split(": ", 1)[1]]


def run(tmp_path: Path, server: OpenAITestServer) -> tuple[Any, Path]:
    work = tmp_path / "simple-test"
    shutil.copytree(FIXTURE, work)
    env = {"OPENAI_BASE_URL": server.base_url, "ASSAY_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "200"}
    return assay_in_process("run", "promptfooconfig.yaml", "-o", "runs", cwd=work, env=env), work / "runs"


def test_simple_test_runs_unchanged_with_every_figure_right(tmp_path: Path) -> None:
    with GradingServer(reply, models=("gpt-4.1-mini",)) as server:
        proc, runs = run(tmp_path, server)
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run_dir,) = [p for p in runs.iterdir() if p.is_dir()]
    prompts = [r["messages"][-1]["content"] for r in requests if not _grading(r)]
    assert "Rephrase this from English to Pirate: Yes" in prompts
    assert "Pretend you're a pirate and speak these words: Yes" in prompts and len(prompts) == 10
    assert all(r["model"] == "gpt-4.1-mini" for r in requests if not _grading(r))
    assert {r["model"] for r in requests if _grading(r)} == {"gpt-5.6-sol"}  # promptfoo's default grader

    # similar embeds with promptfoo's default embedding provider (text-embedding-3-large at OPENAI_BASE_URL): the
    # server's letter counts, the same letters in both texts
    assert {r["model"] for r in server.embedding_requests} == {"text-embedding-3-large"}
    similar = cosine(letter_vector(HELLO), letter_vector("Ahoy, world"))
    assert similar >= 0.75  # promptfoo's default threshold for similar
    # promptfoo's rule: a python check's number is its score as returned (12), so test 4's weighted mean is
    # (1 + 12 + similar) / 3 (kept as details.promptfoo_score) and its verdict's score is that clipped to 1
    promptfoo_score = (1.0 + 12.0 + similar) / 3
    rows = [1.0, 1.0, 1.0, 1.0, 1.0]
    results = json.loads((run_dir / "results.json").read_text())
    tasks = results["assay"]["tasks"]
    assert sorted(tasks) == ["simple-test.prompt-1", "simple-test.prompt-2"]
    for name in tasks:
        entry = tasks[name]["filters"]["none"]["row_checks"]
        assert entry["mean"] == pytest.approx(sum(rows) / 5)
        assert (entry["n_scored"], entry["n_errored"], entry.get("n_not_applicable", 0), entry["pass_rate"]) == (
            5,
            0,
            0,
            1.0,
        )
    records = [r for r in sample_lines(run_dir) if r["task"] == "simple-test.prompt-1"]
    by_id = {r["sample_id"]: r["filters"]["none"]["verdicts"]["row_checks"][0] for r in records}
    hello = by_id["test-4"]["details"]["checks"]
    assert [c["type"] for c in hello] == ["javascript", "python", "similar"]
    assert hello[1]["score"] == 12 and hello[1]["passed"]  # on its own scale, not refused
    assert by_id["test-4"]["details"]["promptfoo_score"] == pytest.approx(promptfoo_score)
    assert [c["type"] for c in by_id["test-5"]["details"]["checks"]] == ["llm-rubric", "icontains"]  # $ref spliced
    assert records[0]["metadata"]["description"] == "Check for exact match"
