"""``vllm:``: without vLLM the error names the extra (no traceback, nothing sent); the engine's prompts are cut as
lm-eval's ``vllm`` backend cuts them; on a machine with vLLM and a CUDA GPU, its figures equal ``hf``'s (skipped
elsewhere; ``benchmarks/gpu_vllm_parity.py`` compares a real checkpoint)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import assay
from assay.cli import main
from assay.errors import ConfigError
from tests.loglik.lldata import assay_tasks, wiki_rows

HAS_VLLM = importlib.util.find_spec("vllm") is not None


@pytest.mark.skipif(HAS_VLLM, reason="vLLM is installed")
def test_without_vllm_the_error_names_the_extra(tmp_path: Path):
    arc, _ = assay_tasks(tmp_path)
    with pytest.raises(ConfigError, match=r"pip install 'assay\[vllm\]'"):
        assay.run(str(arc), model=f"vllm:{tmp_path}", output_dir=str(tmp_path / "runs"), progress=False)
    assert not list((tmp_path / "runs").glob("*/samples.jsonl"))
    result = CliRunner().invoke(main, ["run", str(arc), "--model", f"vllm:{tmp_path}", "-o", str(tmp_path / "cli")])
    assert result.exit_code != 0
    assert "assay[vllm]" in result.output and "Traceback" not in result.output, result.output


def test_engine_prompts_are_cut_as_lm_evals_vllm_cuts_them(tiny_lm: Path):
    """At most max_length - 1 tokens a prompt (the engine makes one more); windows of max_length - 2 predicted
    tokens, lm-eval's own ``get_rolling_token_windows`` and ``make_disjoint_window``; a long context cut on the left."""
    from lm_eval.utils import get_rolling_token_windows, make_disjoint_window
    from transformers import AutoTokenizer

    from assay.models.tokens import TokenSplitter
    from assay.models.vllm import scoring_prompts

    max_length = 40
    tokenizer = AutoTokenizer.from_pretrained(tiny_lm)
    splitter = TokenSplitter(tokenizer)
    texts = [r["page"] for r in wiki_rows()]
    pairs = [(text, " the end") for text in texts]
    prompts, bounds, spans = scoring_prompts([("pairs", pairs), ("rolling", texts)], splitter, max_length)
    assert max(len(p) for p in prompts) == max_length - 1
    pair_spans, rolling_spans = spans
    for (start, count, _), (context, continuation) in zip(pair_spans, splitter.pairs(pairs), strict=True):
        assert count == 1
        ctxlen, whole = bounds[start]
        assert whole == (context + continuation)[-(max_length - 1) :] and whole[ctxlen:] == continuation
    for (start, count, _), text in zip(rolling_spans, texts, strict=True):
        tokens = splitter.encode([text])[0]
        theirs = [
            make_disjoint_window(w)
            for w in get_rolling_token_windows(tokens, splitter.prefix_token_id, max_length - 2, 1)
        ]
        assert count == len(theirs)
        for (ctxlen, whole), (context, predicted) in zip(bounds[start : start + count], theirs, strict=True):
            assert whole == context + predicted and whole[ctxlen:] == predicted
    assert any(len(tokenizer.encode(t)) > 3 * max_length for t in texts)  # several windows per text


def test_bad_max_length_is_refused_naming_the_option():
    with pytest.raises(ConfigError, match="max_length"):
        assay.models.registry.load_model({"provider": "vllm", "pretrained": "x", "max_length": 2})


@pytest.mark.skipif(not HAS_VLLM, reason="vLLM is not installed (pip install 'assay[vllm]', needs a CUDA GPU)")
def test_vllm_figures_equal_hfs_on_the_tiny_model(tiny_lm: Path, tmp_path: Path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("vLLM needs a CUDA GPU")
    arc, wiki = assay_tasks(tmp_path)
    # hf at max_length - 2 has vLLM's cuts and windows at max_length (see test_completions)
    hf = {"provider": "hf", "pretrained": str(tiny_lm), "max_length": 126}
    engine = {"provider": "vllm", "pretrained": str(tiny_lm), "max_length": 128, "dtype": "float32"}
    figures = []
    for name, model in (("hf", hf), ("vllm", engine)):
        run = assay.run([str(arc), str(wiki)], model=model, output_dir=str(tmp_path / name), progress=False)
        figures.append(json.loads((run.path / "results.json").read_text())["results"])
    for task in ("arc_tiny", "wiki_tiny"):
        for key, value in figures[0][task].items():
            if "," in key and "_stderr" not in key:
                assert figures[1][task][key] == pytest.approx(value, rel=1e-4), f"{task} {key}"
