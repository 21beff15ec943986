"""Varied run folders whose written results must stay byte-identical to what the writer wrote before it was
sped up (issue 12): repeats, several filters, error verdicts, model errors, judges, corpus metrics, unknown and
undeclared names, a rewritten sample, a torn last line, non-ASCII text and docs that are not flat.

``tests/results/data/bytes/<case>/`` holds that writer's ``results.json`` (without ``results_seconds``) and
``samples_<task>.jsonl``. Regenerate with ``python -m tests.results.varied_runs OUT_DIR`` (only when the output
is meant to change).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

from assay.record import MetricInfo, SampleRecord
from tests.results import runfactory as rf
from tests.results import streaming_cases

CASES: dict[str, dict[str, Any]] = {
    "varied": {"bootstrap_iters": 200},
    "varied_as_zero": {"bootstrap_iters": 100, "error_policy": "as_zero", "repeat_reduction": "max"},
    "varied_clustered": {"bootstrap_iters": 100, "cluster_key": "passage", "group_weighting": "equal"},
    "corpus": {"bootstrap_iters": 100},
    "in_order": {"bootstrap_iters": 100, "repeat_reduction": "min"},
    **{f"streaming_{name}": options for name, options in streaming_cases.CASES.items()},
}


def _pairwise(rng: random.Random, i: int) -> dict[str, Any]:
    first = rng.random() < 0.3
    calls = [
        {
            "model": "judge-α" if k == 0 else "judge-b",
            "usage": {"input_tokens": 100 + i, "output_tokens": 7},
            "latency_s": 0.25 + k / 10,
            "cached": i % 5 == 0,
            **({"error": "timeout"} if i % 23 == 1 and k == 1 else {}),
        }
        for k in range(2)
    ]
    position = {"judgements": 1, "inconsistent": int(first), "prefers_first": int(first), "prefers_second": 0}
    details = {"mode": "pairwise", "position": {**position, "by_judge": {"judge-α": position}}, "judges": calls}
    if i % 7 == 2:  # a verdict written before details["position"] existed
        details = {"mode": "pairwise", "orders": [["win", "loss"]], "judge": calls[0]}
    return rf.verdict(round(rng.random(), 3), details=details)


def _doc(i: int) -> dict[str, Any]:
    doc: dict[str, Any] = {"question": f"вопрос №{i} «{'слово ' * (i % 4)}» 数据 🙂", "n": i, "w": i / 7}
    if i % 5 == 0:
        doc["choices"] = ["α", {"k": [1, 2.5, None]}, True]  # not flat: the general hash path
    if i % 6 == 1:
        doc["passage"] = "Long shared passage. " * (12 + i % 3)  # shared by several samples (independence)
    if i % 11 == 4:
        doc = {}
    return doc


def _target(i: int) -> Any:
    return [f"ответ {i}", i] if i % 9 == 0 else (None if i % 13 == 0 else (i if i % 4 == 0 else f"ответ {i}"))


def _varied(path: Path) -> None:
    rng = random.Random(12)
    tasks = [
        rf.task(
            "alpha/ü",
            (("exact_match", True), ("loss", False)),
            filters=("none", "strict", "first"),
            repeats=3,
            groups=("g",),
            n=80,
            n_selected=75,
        ),
        rf.task("beta", (("exact_match", True), ("pairwise", True)), groups=("g", "h"), n=40),
        rf.task("empty", (("exact_match", True),), n=5),
    ]
    recs: list[SampleRecord] = []
    for i in range(70):
        texts: list[str | None] = [
            None if (i % 8 == 3 and r != 0) or i % 29 == 5 else f"Ответ {i}-{r} ✓ {'x' * (i % 3)}" for r in range(3)
        ]
        per: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for f in ("none", "strict", "first"):
            if f == "first" and i % 10 == 7:
                continue  # no record for this filter
            em, loss = [], []
            for r, text in enumerate(texts if f != "first" else texts[:1]):
                if text is None:
                    em.append(rf.verdict(None, error="no response to evaluate: HTTP 500"))
                    loss.append(rf.verdict(None, error="no response to evaluate: HTTP 500"))
                elif f == "strict" and i % 6 == r:
                    em.append(rf.verdict(None, error=f"regex broke on «{i % 3}»"))
                    loss.append(rf.verdict(rng.random(), True))
                else:
                    em.append(rf.verdict(float(rng.random() < 0.55), reason="не совпало"))
                    loss.append(rf.verdict(round(rng.random(), 5), True))
            per[f] = {"exact_match": em, "loss": loss}
            if f == "none" and i >= 30:
                per[f]["extra"] = [rf.verdict(float(i % 2))]  # undeclared, first seen late: a second scan
        rec = rf.record(
            "alpha/ü",
            i,
            filters=per,
            texts=texts,
            metadata={"topic": f"t{i % 5}", "passage": f"p{i % 9}"},
            doc=_doc(i),
            target=_target(i),
            prompt=f"Вопрос {i}:\n{_doc(i).get('question', '')}\nОтвет:",
            latency=0.01 * (i % 13),
            cached=i % 4 == 1,
        )
        filtered_kinds: list[Any] = [{"a": i, "b": "ü"}, [1, "x"], None, 3.25, i]
        if "first" in rec.filters:
            rec.filters["first"].filtered = [filtered_kinds[i % 5]]  # one value per sample after a reduction
        recs.append(rec)
    for i in range(40):
        verdicts = {"exact_match": [rf.verdict(float(rng.random() < 0.6))], "pairwise": [_pairwise(rng, i)]}
        if i % 9 == 0:
            verdicts["exact_match"] = [rf.verdict(None, error="judge unreachable")]
        recs.append(
            rf.record(
                "beta",
                i,
                verdicts,
                metadata={"passage": f"p{i % 4}"},
                doc={"q": f"q{i}", "context": f"c{i % 5}"},
                tokens=(30 + i, 4),
                model="served-name",
            )
        )
    recs.append(rf.record("ghost", 1, {"exact_match": [rf.verdict(1.0)]}))  # a task run.json does not have
    rng.shuffle(recs)
    recs.append(recs[5].model_copy(update={"eval_seconds": 0.75}))  # written twice: the last line wins
    recs.append(recs[9].model_copy(update={"gen_kwargs": {"max_tokens": 16, "temperature": 0.0}}))  # same, reordered
    prices = {"org/test-model:v1": {"input": 1.5, "output": 2}, "judge-b": {"input": 0.25}}
    man = rf.manifest(tasks, config={"limit": None, "seed": 7, "prices": prices})
    rf.write_run(path, man, recs, extra_lines=['{"task": "beta", "doc_id": 77, "sample_id": "be'])
    with open(path / "samples.jsonl", "rb+") as fh:  # a torn tail: no final newline
        fh.seek(-1, 2)
        fh.truncate()


def _bleu_verdict(rng: random.Random, i: int) -> dict[str, Any]:
    sys_len = 5 + i % 7
    ref_len = 6 + i % 5
    correct = [max(0, sys_len - k - rng.randrange(3)) for k in range(4)]
    total = [max(0, sys_len - k) for k in range(4)]
    stats = [float(x) for x in [sys_len, ref_len, *correct, *total]]
    return rf.verdict(round(rng.random(), 4), True, details={"stats": stats, "nrefs": 1})


def _corpus(path: Path) -> None:
    rng = random.Random(5)
    t = rf.task("translate", (("bleu", True), ("exact_match", True)), n=30)
    t.metrics[0] = MetricInfo(name="bleu", evaluator={"name": "bleu"}, aggregation="corpus")
    recs = []
    for i in range(30):
        bleu = [rf.verdict(None, error="bleu: empty output")] if i % 10 == 3 else [_bleu_verdict(rng, i)]
        recs.append(
            rf.record("translate", i, {"bleu": bleu, "exact_match": [rf.verdict(float(i % 3 == 0))]}, texts=["Über"])
        )
    recs[4] = recs[4].model_copy(update={"gen_kwargs": {"temperature": 0, "max_tokens": 16}})  # 0 is not 0.0
    rf.write_run(path, rf.manifest([t]), recs)


def _in_order(path: Path) -> None:
    """Two filters, records written in doc_id order (the sample logs need no reordering), repeats and errors."""
    rng = random.Random(3)
    t = rf.task("ordered", (("exact_match", True), ("f1", True)), filters=("none", "last"), repeats=2, n=25)
    recs = []
    for i in range(25):
        texts: list[str | None] = [f"ответ\t{i}\n«{r}»" if i % 7 != 2 or r == 0 else None for r in range(2)]
        per = {}
        for f in ("none", "last"):
            per[f] = {
                m: [
                    rf.verdict(None, error="no response to evaluate: HTTP 500")
                    if text is None
                    else rf.verdict(round(rng.random(), 3), True)
                    for text in texts
                ]
                for m in ("exact_match", "f1")
            }
        rec = rf.record("ordered", i, filters=per, texts=texts, doc={"q": f"вопрос {i}", "k": i % 3 == 0, "z": None})
        rec.filters["last"].filtered = [texts[-1]]
        recs.append(rec)
    rf.write_run(path, rf.manifest([t]), recs)


def build(case: str, path: Path) -> Path:
    """Write the run folder of ``case`` (run.json + samples.jsonl) at ``path``."""
    if case.startswith("streaming_"):
        return streaming_cases.build(case.removeprefix("streaming_"), path)
    {"corpus": _corpus, "in_order": _in_order}.get(case, _varied)(path)
    return path


def main(out: str) -> None:
    from assay.results import write_results

    for case, options in CASES.items():
        run = build(case, Path(out) / case)
        doc = write_results(run, **options)
        doc["assay"].pop("results_seconds")
        text = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
        (run / "results.json").write_text(text, encoding="utf-8")
        (run / "samples.jsonl").unlink()
        (run / "run.json").unlink()


if __name__ == "__main__":
    main(sys.argv[1])
