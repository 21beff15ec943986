"""bleu / chrf / ter / rouge equal sacrebleu and rouge-score called directly, sentence by sentence and per corpus."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sacrebleu
from rouge_score import rouge_scorer

import assay
from assay import evaluators
from assay.errors import ConfigError
from assay.evaluators.generation import Bleu
from assay.results import corpus
from assay.tasks import Task

PAIRS = [
    ("The cat sat on the mat.", "The cat sat on the mat."),
    ("A dog runs fast in the park", "The dog runs quickly through the park."),
    ("hello world", "hello there, world"),
    ("It is raining today, so we stay inside.", "Today it rains; we stay in."),
    ("Completely unrelated output", "The meeting moved to Thursday at noon."),
    ("the the the the", "the cat is on the mat"),
    ("Der Hund läuft schnell.", "Der Hund rennt schnell."),
    ("", "an empty output scores nothing"),
]
HYPS = [h for h, _ in PAIRS]
REFS = [r for _, r in PAIRS]


def test_sentence_scores_equal_sacrebleu() -> None:
    bleu, chrf, ter = evaluators.get("bleu"), evaluators.get("chrf"), evaluators.get("ter")
    for hyp, ref in PAIRS:
        assert bleu.evaluate(hyp, ref).score == pytest.approx(
            sacrebleu.sentence_bleu(hyp, [ref]).score / 100, abs=1e-12
        )
        assert chrf.evaluate(hyp, ref).score == pytest.approx(
            sacrebleu.sentence_chrf(hyp, [ref]).score / 100, abs=1e-12
        )
        v = ter.evaluate(hyp, ref)
        assert v.details["ter"] == pytest.approx(sacrebleu.sentence_ter(hyp, [ref]).score / 100, abs=1e-12)
        assert v.score == min(1.0, v.details["ter"])


def test_options_reach_sacrebleu() -> None:
    hyp, refs = "Hello World , how are you", ["hello world, how are you?", "Hi world, how are you"]
    v = evaluators.get("bleu", lowercase=True, tokenize="char", smooth_method="floor").evaluate(hyp, refs)
    direct = sacrebleu.sentence_bleu(hyp, refs, lowercase=True, tokenize="char", smooth_method="floor")
    assert v.score == pytest.approx(direct.score / 100, abs=1e-12)
    assert v.details["tokenize"] == "char" and v.details["nrefs"] == 2
    v = evaluators.get("chrf", word_order=2).evaluate(hyp, refs)  # chrF++
    assert v.score == pytest.approx(sacrebleu.sentence_chrf(hyp, refs, word_order=2).score / 100, abs=1e-12)
    with pytest.raises(ConfigError, match="bleu"):
        evaluators.get("bleu", tokenize="no-such-tokenizer")


def test_failing_verdicts_say_why_and_what_is_missing() -> None:
    v = evaluators.get("bleu", threshold=0.5).evaluate("A dog runs fast", "The dog runs quickly through the park.")
    assert not v.passed and v.reason is not None and "sentence BLEU" in v.reason and "< threshold 0.5" in v.reason
    assert v.feedback is not None and "'quickly'" in v.feedback and "'park'" in v.feedback
    assert evaluators.get("bleu").evaluate("The cat sat on the mat.", "The cat sat on the mat.").passed
    v = evaluators.get("ter", max_ter=0.2).evaluate("Completely unrelated output", "The meeting moved to Thursday.")
    assert not v.passed and v.reason is not None and "edits" in v.reason
    assert evaluators.get("bleu").evaluate("x", None).is_error  # no reference: cannot judge, never a zero


@pytest.mark.parametrize("rouge_type", ["rouge1", "rouge2", "rougeL", "rougeLsum"])
@pytest.mark.parametrize("stem", [False, True])
def test_rouge_equals_rouge_score(rouge_type: str, stem: bool) -> None:
    scorer = rouge_scorer.RougeScorer([rouge_type], use_stemmer=stem)
    shorthand = evaluators.get(rouge_type, use_stemmer=stem)
    general = evaluators.get("rouge", rouge_type=rouge_type, use_stemmer=stem)
    for hyp, ref in [*PAIRS, ("running cats\nsat down", "the cat runs\nand sits")]:
        expected = scorer.score(ref, hyp)[rouge_type].fmeasure
        assert shorthand.evaluate(hyp, ref).score == pytest.approx(expected, abs=1e-12)
        assert general.evaluate(hyp, ref).score == pytest.approx(expected, abs=1e-12)
    refs = ["the cat runs", "a cat sat on a mat"]
    recall = evaluators.get("rouge", rouge_type=rouge_type, measure="recall").evaluate("the cat sat", refs)
    assert recall.details["recall"] == pytest.approx(
        rouge_scorer.RougeScorer([rouge_type]).score_multi(refs, "the cat sat")[rouge_type].recall
    )


def _run(tmp_path: Path, evaluator_entries: list[Any], refs: list[Any], **settings: Any) -> assay.Run:
    rows = [{"id": f"s{i}", "src": h, "ref": r} for i, (h, r) in enumerate(zip(HYPS, refs, strict=True))]
    task = Task.from_config(
        {
            "name": "gen",
            "dataset": {"rows": rows},
            "fields": {"id": "id", "input": "src", "target": "ref"},
            "template": "{{ src }}",
            "evaluators": evaluator_entries,
        }
    )

    def echo(prompt: str) -> str:
        return prompt

    return assay.run(task, echo, output_dir=tmp_path / "runs", cache=False, progress=False, **settings)


def test_corpus_figures_equal_sacrebleu_corpus_scores(tmp_path: Path) -> None:
    run = _run(
        tmp_path,
        ["bleu", "chrf", "ter", "rouge1", {"name": "bleu", "metric": "bleu_mean", "aggregation": "mean"}],
        REFS,
    )
    res = run.results["results"]["gen"]
    assert res["bleu,none"] == pytest.approx(sacrebleu.corpus_bleu(HYPS, [REFS]).score / 100, abs=1e-12)
    assert res["chrf,none"] == pytest.approx(sacrebleu.corpus_chrf(HYPS, [REFS]).score / 100, abs=1e-12)
    assert res["ter,none"] == pytest.approx(sacrebleu.corpus_ter(HYPS, [REFS]).score / 100, abs=1e-12)
    sentence = [sacrebleu.sentence_bleu(h, [r]).score / 100 for h, r in PAIRS]
    assert res["bleu_mean,none"] == pytest.approx(float(np.mean(sentence)), abs=1e-12)
    assert not math.isclose(res["bleu,none"], res["bleu_mean,none"])  # the corpus figure is not the mean
    scorer = rouge_scorer.RougeScorer(["rouge1"])
    assert res["rouge1,none"] == pytest.approx(np.mean([scorer.score(r, h)["rouge1"].fmeasure for h, r in PAIRS]))
    entry = run.results["assay"]["tasks"]["gen"]["filters"]["none"]["bleu"]
    assert entry["aggregation"] == "corpus" and entry["bootstrap_method"] == "corpus_resample"
    assert entry["ci"] == entry["ci_bootstrap"] and entry["ci_method"] == "corpus_bootstrap"
    assert (
        entry["corpus"]["signature"] == "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:" + sacrebleu.__version__
    )
    assert entry["sentence_mean"] == pytest.approx(float(np.mean(sentence)))
    lo, hi = entry["ci_bootstrap"]
    assert lo <= entry["mean"] <= hi and hi > lo
    assert run.results["assay"]["tasks"]["gen"]["filters"]["none"]["ter"]["higher_is_better"] is False
    assert run.results["assay"]["tasks"]["gen"]["filters"]["none"]["chrf"]["corpus"]["signature"].startswith(
        "nrefs:1|case:mixed|eff:yes|nc:6|nw:0"
    )


def test_corpus_with_several_references_per_sample(tmp_path: Path) -> None:
    refs2 = [f"{r} indeed" for r in REFS]
    run = _run(tmp_path, ["bleu", "ter"], [[a, b] for a, b in zip(REFS, refs2, strict=True)])
    res = run.results["results"]["gen"]
    assert res["bleu,none"] == pytest.approx(sacrebleu.corpus_bleu(HYPS, [REFS, refs2]).score / 100, abs=1e-12)
    assert res["ter,none"] == pytest.approx(sacrebleu.corpus_ter(HYPS, [REFS, refs2]).score / 100, abs=1e-12)
    assert run.results["assay"]["tasks"]["gen"]["filters"]["none"]["bleu"]["corpus"]["signature"].startswith("nrefs:2|")


def test_bootstrap_resamples_samples_and_recomputes_the_corpus_figure() -> None:
    bleu = evaluators.get("bleu")
    assert isinstance(bleu, Bleu)
    acc = corpus.CorpusStats()
    for h, r in PAIRS:
        acc.add([bleu.evaluate(h, r).to_dict()])
    dist = corpus.bootstrap_corpus(bleu, acc.matrix(), 50, np.random.default_rng(7))
    # the same resamples by hand: draw sample indices, score the resampled corpus with sacrebleu
    rng = np.random.default_rng(7)
    n = len(PAIRS)
    idx = rng.integers(0, n, size=(50, n))
    for j in range(50):
        hyps, refs = [HYPS[i] for i in idx[j]], [REFS[i] for i in idx[j]]
        assert dist[j] == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score / 100, abs=1e-12)


def test_corpus_aggregation_is_checked_against_the_evaluator() -> None:
    with pytest.raises(ConfigError, match=r"evaluators\[0\]\.aggregation.*no corpus aggregation"):
        Task.from_config(
            {
                "name": "t",
                "dataset": {"rows": [{"q": "a", "a": "b"}]},
                "fields": {"input": "q", "target": "a"},
                "template": "{{ q }}",
                "evaluators": [{"name": "exact_match", "aggregation": "corpus"}],
            }
        )
    with pytest.raises(ConfigError, match="aggregation must be one of mean, corpus"):
        Task.from_config(
            {
                "name": "t",
                "dataset": {"rows": [{"q": "a", "a": "b"}]},
                "fields": {"input": "q", "target": "a"},
                "template": "{{ q }}",
                "evaluators": [{"name": "bleu", "aggregation": "median"}],
            }
        )


def test_a_corpus_figure_that_cannot_be_computed_is_absent_with_its_reason(tmp_path: Path) -> None:
    acc = corpus.CorpusStats()
    acc.add([{"score": 0.5, "passed": True, "details": {"stats": [1.0, 2.0]}}])
    figures = corpus.corpus_figures(
        {"name": "exact_match"}, acc, bootstrap_iters=10, rng=np.random.default_rng(0), confidence=0.95
    )
    assert figures["value"] is None and "no corpus aggregation" in figures["error"]
    entry: dict[str, Any] = {"mean": 0.5, "stderr": 0.1}
    corpus.apply_corpus(entry, figures)
    assert entry["mean"] is None and entry["sentence_mean"] == 0.5 and "error" in entry["corpus"]


def test_aggregation_survives_the_task_config_and_reaches_run_json() -> None:
    task = Task.from_config(
        {
            "name": "t",
            "dataset": {"rows": [{"q": "a", "a": "b"}]},
            "fields": {"input": "q", "target": "a"},
            "template": "{{ q }}",
            "evaluators": ["bleu", {"name": "bleu", "metric": "bleu_mean", "aggregation": "mean"}, "rouge1"],
        }
    )
    config = task.to_config()
    assert config["evaluators"][1]["aggregation"] == "mean" and "aggregation" not in config["evaluators"][0]
    again = Task.from_config(config)
    assert [m.aggregation for m in again.metrics] == ["corpus", "mean", "mean"]
    assert again.hash == task.hash
    assert [m.aggregation for m in task.info(1).metrics] == ["corpus", "mean", "mean"]
