"""An lm-eval output folder (``lm_eval --output_path OUT --log_samples``, written here by lm-eval itself as its CLI
writes it) read by ``assay report``, ``assay compare`` and ``assay.load_run``: lm-eval's figures reported, its
documents paired with an assay run's of the same task (by doc id and doc hash) and the changed ones listed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from assay.errors import DataError
from assay.testing.server import OpenAITestServer
from tests.e2e.e2e_support import assay_cmd
from tests.importers.lmeval.conftest import FIXTURES
from tests.importers.lmeval.parity import assay_run, inside, lm_eval_generate, write_jsonl

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded: the data are local files
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
pytest.importorskip("lm_eval", reason="lm-eval is not installed")
pytest.importorskip("tenacity", reason="lm-eval's API models need lm-eval[api] (tenacity)")

A_VALUES = range(1, 31)  # 30 documents: "Tom has a apples and buys a % 7 + 1 more"
ROWS = [
    {"question": f"Tom has {a} apples and buys {a % 7 + 1} more. How many apples does he have?",
     "answer": f"He has {a} + {a % 7 + 1} = {a + a % 7 + 1} apples.\n#### {a + a % 7 + 1}"}
    for a in A_VALUES
]  # fmt: skip


def _numbers(request: dict[str, Any]) -> tuple[int, int]:
    question = request["messages"][-1]["content"].rsplit("Question: ", 1)[1]
    a, b = (int(x) for x in re.findall(r"\d+", question)[:2])
    return a, b


def reply_lmeval(request: dict[str, Any]) -> str:
    """lm-eval's model: a % 3 == 0 wrong under both filters; a % 3 == 1 right without '####' (flexible-extract
    only); a % 3 == 2 right under both."""
    a, b = _numbers(request)
    if a % 3 == 0:
        return f"So {a} + {b} = {a + b + 1}.\n#### {a + b + 1} (1 try)"
    if a % 3 == 1:
        return f"He ends with {a + b} apples."
    return f"{a} + {b} = {a + b}\n#### {a + b}"


def reply_assay(request: dict[str, Any]) -> str:
    """assay's model: right under both filters when a % 5 == 0, wrong under both otherwise."""
    a, b = _numbers(request)
    answer = a + b if a % 5 == 0 else a + b - 1
    return f"{a} + {b} = {answer}\n#### {answer}"


@dataclass
class Folders:
    work: Path
    out: Path  # lm-eval's --output_path
    results_file: Path
    samples_file: Path
    assay_run: Path


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Folders]:
    """lm-eval's output folder (simple_evaluate, then EvaluationTracker's two saves, as ``lm_eval`` runs them) and an
    assay run of the same task against a server scripted otherwise, on a copy of the gsm8k fixture (30 documents)."""
    from lm_eval.loggers import EvaluationTracker

    tmp = tmp_path_factory.mktemp("lmeval_output")
    work = tmp / "gsm8k"
    shutil.copytree(FIXTURES / "gsm8k", work)
    write_jsonl(work / "test.jsonl", ROWS)
    out = tmp / "out"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", "EMPTY")
        with OpenAITestServer(reply_lmeval) as server, inside(work):
            tracker = EvaluationTracker(output_path=str(out))
            results = lm_eval_generate(server.base_url, ["gsm8k"], work, chat=True, evaluation_tracker=tracker)
            samples = results.pop("samples")
            tracker.save_results_aggregated(results=results, samples=samples)
            for task_name in results["configs"]:
                tracker.save_results_samples(task_name=task_name, samples=samples[task_name])
        with OpenAITestServer(reply_assay) as server, inside(work):
            model = {"provider": "openai", "model": "test-model", "base_url": server.base_url}
            run_dir = assay_run([work / "gsm8k.yaml"], model, tmp)
    (results_file,) = (out / "test-model").glob("results_*.json")
    (samples_file,) = (out / "test-model").glob("samples_gsm8k_*.jsonl")
    yield Folders(tmp, out, results_file, samples_file, run_dir)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASSAY_CACHE_DIR": str(cwd / "cache"), "COLUMNS": "200"}
    return subprocess.run(assay_cmd(*args), cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_report_shows_lm_evals_figures(folders: Folders) -> None:
    lm = json.loads(folders.results_file.read_text(encoding="utf-8"))["results"]["gsm8k"]
    proc = _cli("report", str(folders.out), "--format", "json", cwd=folders.work)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run,) = json.loads(proc.stdout)["runs"]
    rows = {(r["task"], r["filter"], r["metric"]): r for r in run["rows"]}
    assert set(rows) == {("gsm8k", "strict-match", "exact_match"), ("gsm8k", "flexible-extract", "exact_match")}
    for (_, filter_name, metric), row in rows.items():
        assert row["value"] == pytest.approx(lm[f"{metric},{filter_name}"], abs=1e-12)
        assert row["stderr"] == pytest.approx(lm[f"{metric}_stderr,{filter_name}"], abs=1e-12)
        assert (row["version"], row["n_shot"], row["n_scored"], row["n_errored"]) == (3.0, 5, 30, 0)
    # by hand: strict-match is right where a % 3 == 2, flexible-extract where a % 3 != 0
    assert lm["exact_match,strict-match"] == pytest.approx(sum(a % 3 == 2 for a in A_VALUES) / 30)
    assert lm["exact_match,flexible-extract"] == pytest.approx(sum(a % 3 != 0 for a in A_VALUES) / 30)
    assert not Path(run["run"]).exists()  # the converted folder went with the process


def test_load_run_reads_every_form_of_the_output_with_lm_evals_keys(folders: Folders) -> None:
    from assay import load_run
    from assay.results.schema import doc_hash

    lm = json.loads(folders.results_file.read_text(encoding="utf-8"))
    for given in (folders.out, folders.results_file.parent, folders.results_file, folders.samples_file):
        run = load_run(given)
        assert run.results["results"]["gsm8k"] == lm["results"]["gsm8k"]
        assert run.manifest.model["model"] == "test-model" and run.task_names == ["gsm8k"]
    info = run.manifest.tasks[0]
    assert info.filters == ["strict-match", "flexible-extract"] and [m.name for m in info.metrics] == ["exact_match"]
    assert (info.n_shot, info.n_docs, info.n_selected, info.version) == (5, 30, 30, "3.0")
    logged = {(s["doc_id"], s["filter"]): s for s in _lines(folders.samples_file)}
    records = run.records
    assert [r.doc_id for r in records] == list(range(30))
    for rec in records:
        assert rec.sample_id == str(rec.doc_id)
        for filter_name, fr in rec.filters.items():
            line = logged[(rec.doc_id, filter_name)]
            assert doc_hash(rec.doc) == line["doc_hash"]  # what compare pairs by
            assert rec.prompt == line["arguments"]["gen_args_0"]["arg_0"][0] and rec.target == line["target"]
            assert fr.filtered == line["filtered_resps"]
            (verdict,) = fr.verdicts["exact_match"]
            assert verdict["score"] == line["exact_match"] and verdict["details"] == {"value": line["exact_match"]}
            assert verdict["own_scale"] is True
        assert [r.text for r in rec.responses] == logged[(rec.doc_id, "strict-match")]["resps"][0]


def test_compare_pairs_every_document_and_lists_the_changed_ones(folders: Folders) -> None:
    proc = _cli("compare", str(folders.out), str(folders.assay_run), "--format", "json", cwd=folders.work)
    # by hand: lm-eval right under strict-match where a % 3 == 2, under flexible-extract where a % 3 != 0;
    # assay right under both where a % 5 == 0. Document i asks about a = i + 1.
    right_a = {"strict-match": {a for a in A_VALUES if a % 3 == 2}, "flexible-extract": {a for a in A_VALUES if a % 3}}
    right_b = {a for a in A_VALUES if a % 5 == 0}
    regressed = {f: sorted(a - 1 for a in right - right_b) for f, right in right_a.items()}
    improved = {f: sorted(a - 1 for a in right_b - right) for f, right in right_a.items()}
    assert (len(regressed["strict-match"]), len(improved["strict-match"])) == (8, 4)  # McNemar p = 0.39
    assert (len(regressed["flexible-extract"]), len(improved["flexible-extract"])) == (16, 2)  # p = 0.0013
    # exit 1: a metric significantly worse (README: compare's exit codes), the one flexible-extract
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "significantly worse: gsm8k/exact_match,flexible-extract" in proc.stderr
    comparison = json.loads(proc.stdout)
    pairing = comparison["pairing"]["gsm8k"]
    assert (pairing["paired"], pairing["only_in_a"], pairing["only_in_b"], pairing["changed_input"]) == (30, 0, 0, 0)
    metrics = {m["filter"]: m for m in comparison["metrics"]}
    assert set(metrics) == {"strict-match", "flexible-extract"}
    for filter_name, m in metrics.items():
        assert m["n_shared"] == 30
        assert sorted(m["regressed"]) == regressed[filter_name]
        assert sorted(m["improved"]) == improved[filter_name]
        assert sorted(m["regressed_ids"]) == sorted(str(d) for d in regressed[filter_name])
    assert metrics["flexible-extract"]["worse"] and not metrics["strict-match"]["significant"]
    assert metrics["strict-match"]["mean_a"] == pytest.approx(10 / 30)
    assert metrics["strict-match"]["mean_b"] == pytest.approx(6 / 30)


def test_a_folder_that_is_neither_says_what_was_expected(folders: Folders, tmp_path: Path) -> None:
    (tmp_path / "neither").mkdir()
    (tmp_path / "neither" / "notes.json").write_text("{}")
    for args in (("report", str(tmp_path / "neither")), ("compare", str(folders.out), str(tmp_path / "neither"))):
        proc = _cli(*args, cwd=tmp_path)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        message = " ".join(proc.stderr.split())
        assert "is not a run folder (no run.json in it) nor an lm-eval output folder" in message
        assert "results_<date>.json" in message and "--log_samples" in message


def test_what_is_missing_from_an_lm_eval_output_is_named(folders: Folders, tmp_path: Path) -> None:
    from assay import load_run

    copy = tmp_path / "out"
    shutil.copytree(folders.out, copy)
    shutil.copytree(copy / "test-model", copy / "other-model")
    with pytest.raises(DataError, match=r"lm-eval results of several models \(other-model, test-model\)"):
        load_run(copy)
    shutil.rmtree(copy / "other-model")
    (copy / "test-model" / folders.samples_file.name).unlink()
    with pytest.raises(DataError, match=r"no samples file samples_gsm8k_.*\.jsonl .*--log_samples"):
        load_run(copy)
    older = copy / "test-model" / "results_2001-01-01T00-00-00.000001.json"
    (copy / "test-model" / folders.results_file.name).rename(older)
    (copy / "test-model" / "results_2099-01-01T00-00-00.json").write_text('{"results": {}}')
    with pytest.raises(DataError, match=r"results_2099-01-01T00-00-00\.json: not an lm-eval results file"):
        load_run(copy)  # the newest by its date_id, whatever the older ones hold


def test_a_pair_value_scores_its_own_figure_and_is_kept(folders: Folders, tmp_path: Path) -> None:
    """A perplexity's per-document pair, as lm-eval logs it: kept in the verdict's details and scored by lm-eval's
    aggregation of that document alone (exp(12.5 / 4) for a word perplexity), as an assay run of the task scores it."""
    import math

    from assay import load_run

    copy = tmp_path / "out"
    shutil.copytree(folders.out, copy)
    samples = copy / "test-model" / folders.samples_file.name
    lines = _lines(samples)
    for line in lines:
        line["metrics"].append("word_perplexity")
        line["word_perplexity"] = [-12.5, 4]
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    run = load_run(copy)
    assert [m.name for m in run.manifest.tasks[0].metrics] == ["exact_match", "word_perplexity"]
    for rec in run.records:
        for fr in rec.filters.values():
            (verdict,) = fr.verdicts["word_perplexity"]
            assert verdict["score"] == pytest.approx(math.exp(12.5 / 4)) and verdict["error"] is None
            assert verdict["details"]["value"] == [-12.5, 4]
