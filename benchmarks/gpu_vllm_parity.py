"""vLLM against hf (and lm-eval's vllm backend, when installed) on a GPU: the same figures, and samples/s of each.

Not run in CI and never by ``python -m benchmarks`` (its name has no ``bench_`` prefix): it needs a CUDA GPU, vLLM
(``pip install 'assay[vllm,hf]'``) and a small local checkpoint. A GPU user runs it by hand:

    python benchmarks/gpu_vllm_parity.py /path/to/Qwen2-1.5B --samples 2000

It writes an ARC-style multiple-choice task (4 choices, a context shared by them) and a wikitext-style rolling task
in a temporary folder, runs ``assay run`` with ``vllm:`` and with ``hf:`` (``hf`` at ``max_length - 2``, which cuts
contexts and rolls windows exactly as vLLM does at ``max_length``: lm-eval's vllm keeps one position for the made
token and one for a window's context), and prints each figure of both with their difference and each run's
samples/s. With lm-eval installed it runs lm-eval's own ``vllm`` backend on the same data too. Exit code 1 when a
figure differs by more than ``--tolerance`` (relative; bf16/fp16 kernels differ slightly from hf's).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_TEXT = "the river north city old bridge market tower lake island valley saint port great little mountain capital south"
WORDS = _TEXT.split(" ")


def write_tasks(folder: Path, samples: int, seed: int = 0) -> tuple[Path, Path]:
    """The multiple-choice and rolling task files (assay YAML over JSONL) in ``folder``."""
    rng = random.Random(seed)
    with (folder / "mc.jsonl").open("w") as out:
        for i in range(samples):
            question = " ".join(rng.choices(WORDS, k=rng.randint(8, 40)))
            choices = [" ".join(rng.choices(WORDS, k=rng.randint(1, 5))) for _ in range(4)]
            out.write(json.dumps({"id": f"q{i}", "question": question, "choices": choices, "gold": i % 4}) + "\n")
    with (folder / "wiki.jsonl").open("w") as out:
        for i in range(max(8, samples // 50)):
            out.write(json.dumps({"id": f"d{i}", "page": " ".join(rng.choices(WORDS, k=rng.randint(50, 3000)))}) + "\n")
    mc, wiki = folder / "mc.yaml", folder / "wiki.yaml"
    mc.write_text(
        'name: mc\ndataset: mc.jsonl\noutput_type: multiple_choice\ntemplate: "Question: {{question}}\\nAnswer:"\n'
        "choices: choices\nfields: {target: gold}\nevaluators: [acc, acc_norm]\n"
    )
    wiki.write_text("name: wiki\ndataset: wiki.jsonl\noutput_type: loglikelihood_rolling\nfields: {target: page}\n")
    return mc, wiki


def run(tasks: list[Path], model: dict[str, Any], out: Path) -> tuple[dict[str, Any], float, int]:
    """(results, seconds, samples) of one ``assay.run``."""
    import assay

    started = time.perf_counter()
    done = assay.run([str(t) for t in tasks], model=model, output_dir=str(out), progress=False, concurrency=512)
    seconds = time.perf_counter() - started
    results = json.loads((done.path / "results.json").read_text())["results"]
    return results, seconds, sum(int(r.get("sample_len", 0)) for r in results.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("checkpoint", help="a local Hugging Face checkpoint folder")
    parser.add_argument("--samples", type=int, default=2000, help="multiple-choice samples (default 2000)")
    parser.add_argument("--max-length", type=int, default=2048, help="vLLM's max_model_len (default 2048)")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--tolerance", type=float, default=2e-3, help="largest relative difference (default 2e-3)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tasks = write_tasks(folder, args.samples)
        common = {"pretrained": args.checkpoint, "dtype": args.dtype}
        vllm_model = {"provider": "vllm", **common, "max_length": args.max_length}
        hf_model = {"provider": "hf", **common, "max_length": args.max_length - 2, "device": "cuda"}
        figures = {}
        for name, model in (("vllm", vllm_model), ("hf", hf_model)):
            results, seconds, n = run(tasks, model, folder / name)
            figures[name] = results
            print(f"{name:>5}: {n} samples in {seconds:.1f}s = {n / seconds:.1f} samples/s")
        worst = 0.0
        for task, metrics in figures["hf"].items():
            for key, theirs in metrics.items():
                if "," not in key or "_stderr" in key:
                    continue
                ours = figures["vllm"][task][key]
                diff = abs(ours - theirs) / max(abs(theirs), 1e-12)
                worst = max(worst, diff)
                print(f"{task:>5} {key:<24} vllm {ours:<14.6g} hf {theirs:<14.6g} rel diff {diff:.2e}")
        lmeval_figures(folder, args)
    print(f"largest relative difference {worst:.2e} (tolerance {args.tolerance:g})")
    return 0 if worst <= args.tolerance else 1


def lmeval_figures(folder: Path, args: argparse.Namespace) -> None:
    """lm-eval's own vllm backend on the multiple-choice data, with its samples/s (skipped without lm-eval)."""
    try:
        import lm_eval
        from lm_eval.tasks import TaskManager
    except ImportError:
        print("lm-eval is not installed: its vllm backend was not run")
        return
    include = folder / "lmeval"
    include.mkdir()
    (include / "mc_lm.yaml").write_text(
        f"task: mc_lm\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {folder / 'mc.jsonl'}\n"
        "test_split: test\noutput_type: multiple_choice\n"
        'doc_to_text: "Question: {{question}}\\nAnswer:"\ndoc_to_choice: "{{choices}}"\ndoc_to_target: gold\n'
        "metric_list:\n  - metric: acc\n  - metric: acc_norm\n"
    )
    started = time.perf_counter()
    out = lm_eval.simple_evaluate(
        model="vllm",
        model_args=f"pretrained={args.checkpoint},dtype={args.dtype},max_model_len={args.max_length}",
        tasks=["mc_lm"],
        task_manager=TaskManager(include_path=str(include)),
        batch_size="auto",
    )
    seconds = time.perf_counter() - started
    res = out["results"]["mc_lm"] if out else {}
    print(f"lm-eval vllm: {args.samples / seconds:.1f} samples/s; acc {res.get('acc,none')} "
          f"acc_norm {res.get('acc_norm,none')}")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
