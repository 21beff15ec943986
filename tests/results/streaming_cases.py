"""Run folders that exercise every branch of the results computation, built the same way every time.

``tests/results/data/streaming/<case>/`` holds what the list-based ``write_results`` of the first version wrote for
each case (``results.json`` and ``samples_<task>.jsonl``); the streamed writer must reproduce them exactly.
Regenerate the references with ``python -m tests.results.streaming_cases OUT_DIR`` against that version.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

from tests.results import runfactory as rf

CASES: dict[str, dict[str, Any]] = {
    "mixed": {"bootstrap_iters": 200, "cluster_key": "topic"},
    "repeats": {"bootstrap_iters": 100, "error_policy": "as_zero", "repeat_reduction": "majority"},
    "repeats_mean": {"bootstrap_iters": 100},
    "all_errored": {"bootstrap_iters": 50, "group_weighting": "equal"},
}


def _mixed(path: Path) -> None:
    rng = random.Random(1)
    tasks = [
        rf.task(
            "alpha",
            (("exact_match", True), ("loss", False)),
            filters=("none", "strict"),
            groups=("g",),
            n=70,
            n_selected=64,
        ),
        rf.task("beta", (("exact_match", True),), groups=("g",), n=40),
    ]
    recs = []
    for i in range(60):
        fails = rng.random() < 0.3
        texts: list[str | None] = [None] if i % 17 == 5 else ["Ответ: 42 ✓" if not fails else "ошибка " * (i % 7)]
        per = {}
        for f in ("none", "strict"):
            if texts[0] is None:
                per[f] = {
                    "exact_match": [rf.verdict(None, error="no response to evaluate: HTTP 500")],
                    "loss": [rf.verdict(None, error="no response to evaluate: HTTP 500")],
                }
                continue
            em = (
                rf.verdict(None, error="regex broke")
                if i % 13 == 3 and f == "strict"
                else rf.verdict(0.0 if fails else 1.0)
            )
            per[f] = {"exact_match": [em], "loss": [rf.verdict(rng.random(), True)]}
            if i >= 20 and f == "none":  # a metric run.json does not declare, found only in later records
                per[f]["extra"] = [rf.verdict(float(i % 2))]
        recs.append(
            rf.record(
                "alpha",
                i,
                filters=per,
                texts=texts,
                metadata={"topic": f"t{i % 6}"},
                doc={"question": f"вопрос {i} — «{'длинный ' * (i % 5)}»", "n": i},
            )
        )
    for i in range(40):
        v = rf.verdict(None, error="judge unreachable") if i % 9 == 0 else rf.verdict(float(rng.random() < 0.6))
        recs.append(rf.record("beta", i, {"exact_match": [v]}, metadata={"topic": f"t{i % 3}"}))
    rng.shuffle(recs)
    dup = recs[3].model_copy(update={"eval_seconds": 0.5})
    recs.append(dup)  # written twice (a resume): the last line wins
    rf.write_run(path, rf.manifest(tasks), recs, extra_lines=['{"task": "alpha", "doc_id": 99, "samp'])
    with open(path / "samples.jsonl", "rb+") as fh:  # the torn tail of a crash: no final newline
        fh.seek(-1, 2)
        fh.truncate()


def _repeats(path: Path) -> None:
    rng = random.Random(2)
    t = rf.task("rep", (("pass", True), ("score", True)), repeats=3, n=50)
    recs = []
    for i in range(50):
        texts: list[str | None] = [None if (i % 11 == 4 and r == 1) else f"α{i}-{r}" for r in range(3)]
        if i == 7:
            texts = [None, None, None]
        vs_pass, vs_score = [], []
        for r, text in enumerate(texts):
            if text is None:
                vs_pass.append(rf.verdict(None, error="no response to evaluate: HTTP 500"))
                vs_score.append(rf.verdict(None, error="no response to evaluate: HTTP 500"))
            elif i % 10 == 9 and r == 2:
                vs_pass.append(rf.verdict(None, error="judge timed out"))
                vs_score.append(rf.verdict(rng.random(), True))
            else:
                vs_pass.append(rf.verdict(float(rng.random() < 0.5)))
                vs_score.append(rf.verdict(round(rng.random(), 3), True))
        recs.append(rf.record("rep", i, {"pass": vs_pass, "score": vs_score}, texts=texts))
    recs.reverse()
    rf.write_run(path, rf.manifest([t]), recs)


def _all_errored(path: Path) -> None:
    tasks = [
        rf.task("judged", (("exact_match", True), ("llm_judge", True)), groups=("grp",), n=30),
        rf.task("other", (("exact_match", True),), groups=("grp",), n=10),
    ]
    recs = []
    for i in range(30):
        em = rf.verdict(float(i % 3 != 0))
        judge = rf.verdict(None, error="llm_judge: judge unreachable (connection refused)")
        recs.append(rf.record("judged", i, {"exact_match": [em], "llm_judge": [judge]}))
    for i in range(10):
        recs.append(rf.record("other", i, {"exact_match": [rf.verdict(1.0)]}))
    rf.write_run(path, rf.manifest(tasks), recs)


BUILDERS = {"mixed": _mixed, "repeats": _repeats, "repeats_mean": _repeats, "all_errored": _all_errored}


def build(case: str, path: Path) -> Path:
    """Write the run folder of ``case`` (run.json + samples.jsonl) at ``path``."""
    BUILDERS[case](path)
    return path


def main(out: str) -> None:
    from assay.results import write_results

    for case, options in CASES.items():
        run = build(case, Path(out) / case)
        doc = write_results(run, **options)
        doc["assay"].pop("results_seconds", None)
        (run / "results.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        (run / "samples.jsonl").unlink()
        (run / "run.json").unlink()


if __name__ == "__main__":
    main(sys.argv[1])
