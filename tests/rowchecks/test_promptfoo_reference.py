"""row_checks gives real promptfoo's verdicts: every case of promptfoo_reference/verdicts.json is one test that
promptfoo 0.123.1 ran (config-a/b/c.yaml beside it, against an echo server: the output is the rendered prompt),
with promptfoo's test pass and score, named scores, and each assertion's pass, score and reason as it wrote them in
its out.json. Checked against promptfoo 0.123.1: rouge-n, bleu, gleu, levenshtein (Unicode), equals on objects,
is-json/contains-json (schemas, YAML-ish JSON in text), is-xml/contains-xml, is-html/contains-html, is-sql and
contains-sql, tool-call-f1, python/javascript results, transforms (test-level, postprocess, per assertion, JS and
Python files), vars in values and metrics, assert-set, weights, thresholds."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from assay.models.base import Response
from assay.tasks.checks.textmetrics import bleu_score, gleu_score, rouge_n_score
from assay.tasks.rowchecks import RowChecks

HERE = Path(__file__).with_name("promptfoo_reference")
CASES: list[dict[str, Any]] = json.loads((HERE / "verdicts.json").read_text(encoding="utf-8"))["cases"]


def _has_sql_parser() -> bool:
    node = shutil.which("node")
    if node is None:
        return False
    probe = subprocess.run([node, "-e", "require('node-sql-parser')"], capture_output=True, cwd=HERE)
    return probe.returncode == 0


SQL = _has_sql_parser()


def _same_reason(mine: str | None, theirs: str | None) -> bool:
    """Reasons are promptfoo's words, except what comes from a different parser or runtime: expat's message for
    malformed XML (saxes words it its own way) and the JavaScript stack trace promptfoo appends."""
    mine, theirs = mine or "", theirs or ""
    if theirs.startswith("XML parsing failed:"):
        return mine.startswith("XML parsing failed:")
    if theirs.startswith("Custom function threw error:"):
        return mine.split("\n")[0] == theirs.split("\n")[0]
    return mine == theirs


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_row_checks_give_promptfoos_verdict(case: dict[str, Any]) -> None:
    kinds = {str(a.get("type")) for a in case["assert"]}
    if kinds & {"is-sql", "not-is-sql", "contains-sql"} and not SQL:
        pytest.skip("is-sql needs the npm package node-sql-parser (npm install node-sql-parser)")
    evaluator = RowChecks(
        options_field="__options", vars_exclude_prefix="__", threshold_field="__threshold", base_dir=str(HERE)
    )
    doc = {**case["vars"], "__options": case["options"]}
    if "threshold" in case:
        doc["__threshold"] = case["threshold"]
    response = Response(text=case["output"], finish_reason="stop", model="echo-model")
    verdict = evaluator.evaluate(response, case["assert"], context={"doc": doc, "prompt": case["output"]})
    want = case["promptfoo"]
    assert not verdict.is_error, verdict.error
    assert verdict.passed is want["pass"]
    assert verdict.details["promptfoo_score"] == want["score"]  # exactly: promptfoo's arithmetic
    assert verdict.score == pytest.approx(min(1.0, max(0.0, want["score"])), abs=1e-12)
    assert verdict.details["named_scores"] == pytest.approx(want["namedScores"], abs=1e-12)
    flat = []  # promptfoo flattens an assert-set's results after the set's own
    for check in verdict.details["checks"]:
        flat += [check, *check.get("checks", [])]
    assert len(flat) == len(want["components"])
    for mine, theirs in zip(flat, want["components"], strict=True):
        assert (mine["pass"], mine["score"]) == (theirs["pass"], theirs["score"]), mine
        assert _same_reason(mine["reason"], theirs["reason"]), (mine["reason"], theirs["reason"])
    failing = [c for c in want["components"] if not c["pass"]]
    if want["pass"]:
        assert verdict.reason is None
    elif len(failing) <= 1 or "threshold" in case:  # promptfoo's reason is the last failure to finish, in any order
        assert _same_reason(verdict.details["reason"], want["reason"])


def test_text_metrics_give_promptfoos_numbers() -> None:
    """The numbers promptfoo 0.123.1 gave (config-a.yaml, tests 1 and 2), spelled out."""
    out = "The quick brown fox jumps over the lazy dog"
    ref = "The quick brown fox jumped over a lazy dog"
    assert rouge_n_score(out.lower(), ref.lower()) == 0.7777777777777778
    assert bleu_score(out, [ref]) == 0.36889397323344053
    assert gleu_score(out, [ref]) == 0.4666666666666667
    assert bleu_score(out, ["a lazy dog sleeps", "the quick brown fox jumps over a dog"]) == 0.6104735835807844
    assert 1 - rouge_n_score(out.lower(), "the cat sat on the mat") == 0.7333333333333333  # not-rouge-n
    out = 'the cat sat on the mat. It wasn\'t happy, said "Bob" (again)!'
    ref = "The cat sat on a mat; it was not happy, Bob said again."
    assert rouge_n_score(out.lower(), ref.lower()) == 0.6285714285714286
    assert bleu_score(out, [ref]) == 0.22434531552409884
    assert gleu_score(out, [ref.replace(";", ".")]) == 0.32608695652173914
