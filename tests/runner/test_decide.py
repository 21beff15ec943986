"""``assay run --decide``: a run against a real local server stops as soon as the claim is decided, records the
decision, the samples used and saved, and exits with it (0 holds, 1 fails, 4 undecided); errors are never a pass
or a fail; a claim against a baseline pairs by sample id."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from assay.cli import main
from assay.runner.decide import parse_decide
from assay.store.sampleindex import SAMPLES
from assay.testing.server import OpenAITestServer

N = 400


def _task(tmp_path: Path, n: int = N) -> Path:
    rows = [{"id": f"s{i}", "question": f"q{i}", "answer": "yes"} for i in range(n)]
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    task = tmp_path / "task.yaml"
    task.write_text(
        yaml.safe_dump(
            {
                "name": "qa",
                "dataset": {"path": str(data)},
                "fields": {"id": "id", "input": "question", "target": "answer"},
                "template": "{{ question }}",
                "evaluators": ["exact_match"],
            }
        ),
        encoding="utf-8",
    )
    return task


def _replies(wrong_every: int = 0, error_every: int = 0) -> Any:
    """The model answers sample i right unless i % wrong_every == 0 (or fails: HTTP 400 where i % error_every)."""

    def reply(request: dict[str, Any]) -> Any:
        i = int(request["messages"][-1]["content"][1:])
        if error_every and i % error_every == 1:
            return {"status": 400, "error": "bad request"}
        if wrong_every and i % wrong_every == 0:
            return "no"
        return "yes"

    return reply


def _run(tmp_path: Path, server: OpenAITestServer, *args: str, out: str = "runs") -> tuple[int, str, dict[str, Any]]:
    model = ["--model", "openai:m", "--base-url", server.base_url]
    options = ["--output", str(tmp_path / out), "-q", "--concurrency", "4", *args]
    result = CliRunner().invoke(main, ["run", str(_task(tmp_path)), *model, *options])
    folders = list((tmp_path / out).iterdir()) if (tmp_path / out).is_dir() else []
    manifest = json.loads((folders[0] / "run.json").read_text()) if folders else {}
    return result.exit_code, result.output, manifest


def test_a_clear_pass_stops_early_and_exits_0(tmp_path: Path):
    with OpenAITestServer(_replies(wrong_every=20)) as server:  # 95 % right against a claim of 80 %
        code, output, manifest = _run(tmp_path, server, "--decide", "exact_match>=0.8")
    decision = manifest["config"]["decision"]
    assert code == 0, output
    assert decision["state"] == "holds" and decision["samples_used"] < N / 2
    assert decision["samples_saved"] > 0 and decision["sequence"][0] > 0.8
    assert "decided: exact_match>=0.8 holds after" in " ".join(output.split())
    assert manifest["status"] == "finished"
    written = (next((tmp_path / "runs").iterdir()) / SAMPLES).read_text().count("\n")
    assert decision["samples_used"] <= written == decision["samples_run"] < N  # those in flight at the decision kept
    assert decision["samples_saved"] == N - written
    ids = [json.loads(line)["sample_id"] for line in (next((tmp_path / "runs").iterdir()) / SAMPLES).open()]
    assert ids != sorted(ids, key=lambda s: int(s[1:]))  # a random order, not the file's


def test_a_clear_failure_exits_1_and_an_undecided_claim_exits_4(tmp_path: Path):
    with OpenAITestServer(_replies(wrong_every=2)) as server:  # 50 % right
        code, _, manifest = _run(tmp_path, server, "--decide", "exact_match>=0.8")
    assert code == 1 and manifest["config"]["decision"]["state"] == "fails"
    with OpenAITestServer(_replies(wrong_every=5)) as server:  # exactly 80 %: no evidence decides it
        code, output, manifest = _run(tmp_path, server, "--decide", "exact_match>=0.8", out="close")
    decision = manifest["config"]["decision"]
    assert code == 4, output
    assert decision["state"] == "undecided" and decision["samples_used"] == N and decision["samples_saved"] == 0


def test_errors_are_neither_passes_nor_failures(tmp_path: Path):
    with OpenAITestServer(_replies(error_every=10)) as server:  # every 10th request fails; the rest right
        code, output, manifest = _run(tmp_path, server, "--decide", "exact_match>=0.8", "--max-error-rate", "0.5")
    decision = manifest["config"]["decision"]
    assert code == 0, output
    assert decision["state"] == "holds" and decision["samples_errored"] > 0
    assert decision["estimate"] == 1.0  # the errored samples did not count as failures


def test_not_worse_than_a_baseline_by_more_than_d(tmp_path: Path):
    with OpenAITestServer(_replies(wrong_every=10)) as server:  # the baseline: 90 %
        _run(tmp_path, server, out="base")
    base = next((tmp_path / "base").iterdir())
    with OpenAITestServer(_replies(wrong_every=10)) as server:  # the candidate answers the same
        code, output, manifest = _run(
            tmp_path, server, "--decide", "exact_match>=baseline-0.05", "--decide-baseline", str(base), out="cand"
        )
    decision = manifest["config"]["decision"]
    assert code == 0, output
    assert decision["state"] == "holds" and decision["baseline"] and decision["estimate"] == 0.0
    with OpenAITestServer(_replies(wrong_every=2)) as server:  # the candidate: 50 %, 40 points worse
        code, _, manifest = _run(
            tmp_path, server, "--decide", "exact_match>=baseline-0.05", "--decide-baseline", str(base), out="worse"
        )
    assert code == 1 and manifest["config"]["decision"]["state"] == "fails"


def test_bad_claims_are_refused_before_anything_runs(tmp_path: Path):
    with OpenAITestServer(_replies()) as server:
        for claim, words in (
            ("exact_match>0.8", "expected METRIC>=VALUE"),
            ("exact_match>=1.5", "a number in [0, 1]"),
            ("bleu>=0.5", "no task has a metric 'bleu'"),
            ("exact_match>=baseline-0.1", "needs --decide-baseline"),
        ):
            code, output, _ = _run(tmp_path, server, "--decide", claim, out=f"bad{len(words)}")
            assert code == 2 and words in " ".join(output.split()), output
            assert not (tmp_path / f"bad{len(words)}").exists()


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("qa/exact_match,none>=0.75", ("qa", "exact_match", "none", 0.75, None)),
        ("acc >= baseline - 0.02", (None, "acc", None, None, 0.02)),
        ("acc>=baseline", (None, "acc", None, None, 0.0)),
    ],
)
def test_claims_parse(text: str, parsed: tuple[Any, ...]):
    spec = parse_decide(text)
    assert (spec.task, spec.metric, spec.filter, spec.threshold, spec.margin) == parsed


def test_assert_eval_decides_and_fails_unless_the_claim_holds(tmp_path: Path):
    from assay.testing import assert_eval
    from assay.testing.failure import EvalAssertionError

    task = _task(tmp_path)
    with OpenAITestServer(_replies(wrong_every=20)) as server:
        model = {"provider": "openai", "model": "m", "base_url": server.base_url}
        run = assert_eval(str(task), model, decide="exact_match>=0.8", output_dir=tmp_path / "ok")
        assert run.manifest.config["decision"]["state"] == "holds"
    with OpenAITestServer(_replies(wrong_every=2)) as server:
        model = {"provider": "openai", "model": "m", "base_url": server.base_url}
        with pytest.raises(EvalAssertionError, match=r"decided: exact_match>=0\.8 fails after"):
            assert_eval(str(task), model, decide="exact_match>=0.8", output_dir=tmp_path / "bad")


def test_a_resumed_run_replays_its_samples_in_the_order_written():
    from types import SimpleNamespace

    from assay.runner.decide import make_gate
    from assay.runner.settings import RunSettings

    task = SimpleNamespace(name="qa", metrics=[SimpleNamespace(name="exact_match")], filters=["none"])
    prior = [{"task": "qa", "sample_id": f"s{i}", "filters": {"none": {"scores": {"exact_match": 1.0}}}}
             for i in range(60)]  # fmt: skip
    gate = make_gate(
        [task], RunSettings(), recorded={"decide": "exact_match>=0.8"}, offline=False, selected=lambda _: 100,
        prior=prior,
    )  # fmt: skip
    assert gate is not None and gate.decided is not None and gate.decided.state == "holds"
    assert gate.decided.n < 60 and gate.seen == 60
