"""Per-row checks (promptfoo's ``assert:`` in a row) judged by assay's evaluators: types, weights, the row's
threshold, named check sets, code checks on their own scale, a judge; real runs against the test server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from assay.testing.server import OpenAITestServer
from tests.e2e.e2e_support import only_run_dir, sample_lines
from tests.rowchecks.test_graded_server import GradingServer, cosine, letter_vector
from tests.support import run_cli_in_process

PIRATE = {"type": "icontains", "value": "arrr"}
ROWS: list[tuple[str, str, dict[str, Any]]] = [  # (id, the model's reply, what the row carries besides its question)
    ("equals", "Yarr", {"assert": [{"type": "equals", "value": "Yarr"}]}),
    (
        "icontains",
        "I want grub, matey",
        {"assert": [{"type": "icontains", "value": "GRUB"}, {"type": "not-contains", "value": "hungry"}]},
    ),
    ("json", '{"life": "at sea"}', {"assert": [{"type": "is-json"}]}),
    (
        "long",
        "a" * 350,
        {"assert": [{"type": "python", "value": "max(0, len(output) - 300)"}, {"type": "regex", "value": "^a+$"}]},
    ),
    (
        "weighted_threshold",
        "Ahoy",
        {
            "threshold": 0.7,
            "assert": [
                {"type": "contains", "value": "Ahoy", "weight": 3},
                {"type": "contains", "value": "arrr", "weight": 1},
            ],
        },
    ),
    (
        "weighted",
        "Ahoy",
        {
            "assert": [
                {"type": "contains", "value": "Ahoy", "weight": 3},
                {"type": "contains", "value": "arrr", "weight": 1},
            ]
        },
    ),
    ("ref", "Arrr, matey!", {"assert": [{"$ref": "#/check_sets/pirate"}]}),
    ("nothing", "anything", {}),
    (
        "rubric",
        "Arr, the quick brown fox be jumpin'",
        {"assert": [{"type": "llm-rubric", "value": "Is spoken like a pirate"}]},
    ),
    ("javascript", "Ahoy there", {"assert": [{"type": "javascript", "value": "output.startsWith('Ahoy')"}]}),
    ("similar", "Ahoy, world!", {"assert": [{"type": "similar", "value": "Ahoy, wide world"}]}),
    (
        "weight0",
        "yes",
        {"assert": [{"type": "equals", "value": "no", "weight": 0}, {"type": "contains", "value": "y"}]},
    ),
]
REPLIES = {rid: text for rid, text, _ in ROWS}


def reply(request: dict[str, Any]) -> str:
    if request["model"] == "judge":
        # read by assay's llm_judge (explanation, label) and by promptfoo's llm-rubric grader (reason, pass, score)
        return json.dumps(
            {"explanation": "pirate talk", "label": "pass", "reason": "pirate talk", "pass": True, "score": 1}
        )
    return REPLIES[request["messages"][-1]["content"].split()[-1]]


def write(tmp_path: Path, server: OpenAITestServer | None) -> Path:
    with open(tmp_path / "rows.jsonl", "w") as fh:
        for rid, _, extra in ROWS:
            if rid == "similar" and server is not None:  # promptfoo's embedding provider: the server's /embeddings
                provider = {"id": "openai:embedding:emb", "config": {"apiBaseUrl": server.base_url}}
                extra = {"assert": [{**extra["assert"][0], "provider": provider}]}
            fh.write(json.dumps({"id": rid, "question": f"Answer {rid}", **extra}) + "\n")
    with open(tmp_path / "preds.jsonl", "w") as fh:
        for rid, text, _ in ROWS:
            fh.write(json.dumps({"id": rid, "prediction": text}) + "\n")
    judge = {"provider": "openai", "model": "judge", "base_url": server.base_url} if server else None
    task = {
        "name": "checks",
        "dataset": {"path": "rows.jsonl"},
        "fields": {"id": "id", "input": "question"},
        "template": "{{ question }}",
        "evaluators": [{"name": "row_checks", "judge": judge, "check_sets": {"pirate": PIRATE}}],
    }
    path = tmp_path / "checks.yaml"
    path.write_text(yaml.safe_dump(task, sort_keys=False))
    return path


def check(run_dir: Path) -> None:
    records = {r["sample_id"]: r["filters"]["none"] for r in sample_lines(run_dir)}
    scores = {k: r["scores"]["row_checks"] for k, r in records.items()}
    passed = {k: r["passed"]["row_checks"] for k, r in records.items()}
    similar = records["similar"]["verdicts"]["row_checks"][0]["details"]["checks"][0]["score"]
    # the cosine of the embeddings from the check's embedding provider (the server's letter counts), over 0.75
    assert similar == pytest.approx(cosine(letter_vector("Ahoy, wide world"), letter_vector("Ahoy, world!")))
    assert 0.75 < similar < 1.0
    want = {k: 1.0 for k in REPLIES} | {"weighted_threshold": 0.75, "weighted": 0.75, "similar": similar}
    del want["nothing"]
    assert scores.pop("nothing") is None and records["nothing"]["verdicts"]["row_checks"] == []
    assert scores == pytest.approx(want)
    assert passed["weighted_threshold"] is True and passed["weighted"] is False  # 0.75 >= 0.7; without: all pass
    assert sum(bool(p) for p in passed.values()) == 10
    long = records["long"]["verdicts"]["row_checks"][0]["details"]
    assert long["checks"][0]["score"] == 50 and long["checks"][0]["passed"] is True  # on its own scale, not refused
    assert long["promptfoo_score"] == 25.5  # promptfoo's mean of the raw scores; the verdict's score is clipped to 1
    results = json.loads((run_dir / "results.json").read_text())
    entry = results["assay"]["tasks"]["checks"]["filters"]["none"]["row_checks"]
    assert (entry["n_scored"], entry["n_not_applicable"], entry["n_errored"]) == (11, 1, 0)
    assert entry["mean"] == pytest.approx(sum(want.values()) / 11)
    assert entry["pass_rate"] == pytest.approx(10 / 11)


def test_row_checks_on_the_per_sample_path(tmp_path: Path) -> None:
    with GradingServer(reply) as server:
        task = write(tmp_path, server)
        proc = run_cli_in_process(
            "run", str(task), "--model", "openai:student", "--base-url", server.base_url, "-o", "out", cwd=tmp_path
        )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    check(only_run_dir(tmp_path / "out"))


def test_row_checks_on_the_batch_path(tmp_path: Path) -> None:
    with GradingServer(reply) as server:
        task = write(tmp_path, server)
        proc = run_cli_in_process("run", str(task), "--model", "predictions:preds.jsonl", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    check(only_run_dir(tmp_path / "out"))


def test_a_check_that_cannot_run_errors_its_row_naming_it(tmp_path: Path) -> None:
    task = write(tmp_path, None)
    rows = [
        json.dumps({"id": "equals", "question": "Answer equals", "assert": [{"type": "webhook", "value": "x"}]}),
        json.dumps({"id": "ref", "question": "Answer ref", "assert": [{"$ref": "#/check_sets/nope"}]}),
        json.dumps({"id": "rubric", "question": "Answer rubric", "assert": [{"type": "llm-rubric", "value": "x"}]}),
    ]
    (tmp_path / "rows.jsonl").write_text("\n".join(rows) + "\n")
    proc = run_cli_in_process("run", str(task), "--model", "predictions:preds.jsonl", "-o", "out", cwd=tmp_path)
    assert (tmp_path / "out").is_dir(), proc.stdout + proc.stderr  # a run that never began says why
    errors = {
        r["sample_id"]: r["filters"]["none"]["verdicts"]["row_checks"][0]["error"]
        for r in sample_lines(only_run_dir(tmp_path / "out"))
    }
    assert "promptfoo's 'webhook' assertion posts each output to an HTTP endpoint" in errors["equals"]
    assert "no check set 'nope'" in errors["ref"]
    assert "llm-rubric" in errors["rubric"] and ("grader" in errors["rubric"] or "judge" in errors["rubric"])
    assert proc.returncode != 0, proc.stdout  # error verdicts are errors, never zeros
