"""Registry tasks scored by log-likelihood, unchanged but for their data: ``piqa`` (multiple choice), ``wikitext``
(rolling, its own process_results giving lm-eval's weighted perplexity pairs), each run by lm_eval's hf backend and
by assay on the same tiny model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.importers.lmeval.parity import (
    FLOAT32,
    assay_run,
    assert_parity,
    inside,
    lm_eval_loglik,
    loglik_requests,
    registry_copy,
)

pytest.importorskip("lm_eval", reason="lm-eval is not installed")
pytest.importorskip("accelerate", reason="lm-eval's hf backend needs accelerate")

PIQA = [
    {"goal": "How do I keep bread fresh?", "sol1": "Put it in a bag.", "sol2": "Leave it in the sun.", "label": 0},
    {"goal": "To open a jar", "sol1": "twist the lid", "sol2": "paint the lid", "label": 0},
    {"goal": "Cool a drink fast", "sol1": "Add ice.", "sol2": "Add hot water.", "label": 0},
    {"goal": "Dry wet shoes", "sol1": "Soak them.", "sol2": "Stuff them with paper.", "label": 1},
    {"goal": "Sharpen a pencil", "sol1": "Use a sharpener.", "sol2": "Use a spoon.", "label": 0},
    {"goal": "Clean a window", "sol1": "Use mud.", "sol2": "Use glass cleaner.", "label": 1},
]
PAGES = [
    {"page": " = Valkyria = \n Senjō no Valkyria 3 @-@ is a tactical role @-@ playing game . It 's fun . \n"},
    {"page": " = Tower = \n The tower is 300 @,@ 000 feet tall , and ( very ) old . \n"},
    {"page": " = Café = \n Ünïcödé text : naïve résumé ; 東京 . \n"},
]


@pytest.mark.parametrize(
    ("name", "data"),
    [("piqa", {"train": PIQA, "validation": PIQA}), ("wikitext", {"train": PAGES, "validation": PAGES, "test": PAGES})],
)
def test_equal_to_lm_eval(tmp_path: Path, tiny_lm: Path, name: str, data: dict) -> None:
    path = registry_copy(name, tmp_path, data)
    with inside(tmp_path):
        run_dir = assay_run([path], f"hf:{tiny_lm}", tmp_path, lmeval={"bootstrap_iters": 1000})
        theirs = lm_eval_loglik(tiny_lm, [name], tmp_path, bootstrap_iters=1000)
    assert assert_parity(run_dir, theirs, tol=FLOAT32, requests=loglik_requests(run_dir)) >= len(PAGES)
