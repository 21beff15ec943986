"""The summary warns when samples share a context the intervals treat as independent, and names the option."""

from __future__ import annotations

from pathlib import Path

from assay.results import write_results
from tests.results.runfactory import manifest, record, task, verdict, write_run

PASSAGE = "The river flows north through three countries before it reaches the sea; " * 4


def _run(path: Path, docs: list[dict], prompts: list[str] | None = None) -> Path:
    recs = [
        record(
            "qa",
            i,
            {"exact_match": [verdict(float(i % 3 == 0))]},
            doc=doc,
            prompt=None if prompts is None else prompts[i],
        )
        for i, doc in enumerate(docs)
    ]
    return write_run(path, manifest([task("qa", n=len(docs))]), recs)


def _warnings(run_dir: Path, **options) -> list[str]:
    return write_results(run_dir, bootstrap_iters=0, **options)["assay"]["warnings"]


def test_questions_sharing_a_passage_warn_and_name_the_cluster_key(tmp_path: Path) -> None:
    docs = [{"passage_id": f"p{i // 4}", "question": f"q{i}"} for i in range(40)]
    (warning,) = _warnings(_run(tmp_path / "run", docs))
    assert "task 'qa'" in warning and "'passage_id'" in warning and "10 distinct values" in warning
    assert "--cluster-key passage_id" in warning and "assume independent samples" in warning


def test_a_long_shared_text_is_a_passage_whatever_its_name(tmp_path: Path) -> None:
    docs = [{"text": f"{PASSAGE} ({i // 5})", "question": f"q{i}"} for i in range(20)]
    (warning,) = _warnings(_run(tmp_path / "run", docs))
    assert "--cluster-key text" in warning


def test_the_same_input_asked_twice_warns(tmp_path: Path) -> None:
    docs = [{"question": f"q{i}"} for i in range(20)]
    prompts = [f"Question: q{i % 10}\nAnswer:" for i in range(20)]
    (warning,) = _warnings(_run(tmp_path / "run", docs, prompts))
    assert "the same prompt" in warning


def test_no_warning_with_a_cluster_key_or_for_category_fields(tmp_path: Path) -> None:
    docs = [{"passage_id": f"p{i // 4}", "kind": ["math", "lookup"][i % 2]} for i in range(40)]
    assert _warnings(_run(tmp_path / "a", docs), cluster_key="passage_id") == []
    plain = [{"kind": ["math", "lookup"][i % 2], "question": f"q{i}", "id": f"s{i}"} for i in range(40)]
    assert _warnings(_run(tmp_path / "b", plain)) == []
