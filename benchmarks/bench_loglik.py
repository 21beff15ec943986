"""Log-likelihood scoring: assay's ``hf:`` scorer against lm-eval's own ``hf`` backend, same tiny model and task,
with the task as assay's YAML (``assay``) and as lm-eval's YAML run by assay through lm-eval's task layer
(``assay-lmeval``: lm-eval builds the requests and scores the documents, assay's runner and model answer).

A tiny GPT-2 (random weights, tokenizer trained locally: nothing is downloaded) and an ARC-style multiple-choice
task (N samples, 4 choices sharing their context) as assay YAML and as lm-eval YAML over the same JSONL. Each side
runs in its own subprocess, at its defaults (assay: ``assay.run`` with ``hf:PATH``; lm-eval: ``simple_evaluate``
with ``hf``, batch size 1, its default; ``lm-eval-noindex``: the same without indexing lm-eval's own task folder,
which its default ``TaskManager`` does), on CPU with one torch thread each; each prints samples/s (wall time of
the whole evaluation, model load included) and its peak RSS. The ratio is assay's samples/s over lm-eval's, and
``acc`` of both is printed (they must agree).

    python -m benchmarks loglik                      # 500 samples
    python -m benchmarks.bench_loglik --samples 2000
    python -m benchmarks.bench_loglik --memory --samples 25000   # assay's peak RSS at 2,500 and 25,000 samples
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = ["the", "river", "north", "city", "old", "bridge", "market", "tower", "lake", "island", "valley"]


def write_data(folder: Path, samples: int, seed: int = 0) -> None:
    """The JSONL rows, assay's task file and lm-eval's, in ``folder``."""
    from assay.testing.tiny_lm import CORPUS

    words = CORPUS.split() + WORDS
    rng = random.Random(seed)
    with (folder / "mc.jsonl").open("w") as out:
        for i in range(samples):
            question = " ".join(rng.choices(words, k=rng.randint(8, 30)))  # under the tiny model's 128 tokens
            choices: list[str] = []
            while len(choices) < 4:  # distinct: equal choices tie, and float noise breaks a tie either way
                choice = " ".join(rng.choices(words, k=rng.randint(1, 6)))
                choices += [choice] if choice not in choices else []
            out.write(json.dumps({"id": f"q{i}", "question": question, "choices": choices, "gold": i % 4}) + "\n")
    (folder / "mc.yaml").write_text(
        'name: mc\ndataset: mc.jsonl\noutput_type: multiple_choice\ntemplate: "Question: {{question}}\\nAnswer:"\n'
        "choices: choices\nfields: {target: gold}\nevaluators: [acc, acc_norm]\n"
    )
    include = folder / "lmeval"
    include.mkdir()
    (include / "mc_lm.yaml").write_text(
        f"task: mc_lm\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {folder / 'mc.jsonl'}\n"
        'test_split: test\noutput_type: multiple_choice\ndoc_to_text: "Question: {{question}}\\nAnswer:"\n'
        'doc_to_choice: "{{choices}}"\ndoc_to_target: gold\nmetric_list:\n  - metric: acc\n  - metric: acc_norm\n'
    )


def child(side: str, folder: Path, model: Path) -> None:
    """One side's evaluation in this process; prints one JSON line (seconds, acc, peak RSS)."""
    import os

    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    import torch

    torch.set_num_threads(1)
    started = time.perf_counter()
    if side == "assay":
        import assay

        run = assay.run(str(folder / "mc.yaml"), model=f"hf:{model}", output_dir=str(folder / "runs"), progress=False)
        acc = json.loads((run.path / "results.json").read_text())["results"]["mc"]["acc,none"]
    elif side == "assay-lmeval":
        import assay

        task = str(folder / "lmeval" / "mc_lm.yaml")
        run = assay.run(task, model=f"hf:{model}", output_dir=str(folder / "runs-lm"), progress=False)
        acc = json.loads((run.path / "results.json").read_text())["results"]["mc_lm"]["acc,none"]
    else:
        import lm_eval
        from lm_eval.tasks import TaskManager

        out = lm_eval.simple_evaluate(
            model="hf",
            model_args=f"pretrained={model}",
            tasks=["mc_lm"],
            # lm-eval's default indexes its own task folder too (~8 s); lm-eval-noindex leaves it out
            task_manager=TaskManager(include_path=str(folder / "lmeval"), include_defaults=side == "lm-eval"),
            device="cpu",
        )
        assert out is not None
        acc = out["results"]["mc_lm"]["acc,none"]
    seconds = time.perf_counter() - started
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "acc": acc, "rss_mb": rss_mb}))


def measure(side: str, folder: Path, model: Path) -> dict[str, float]:
    """Run ``side`` in a subprocess; its figures."""
    cmd = [sys.executable, "-m", "benchmarks.bench_loglik", "--child", side, str(folder), str(model)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{side} failed:\n{done.stderr[-3000:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def memory(samples: int) -> None:
    """assay's peak RSS at ``samples // 10`` and at ``samples`` (4 requests each): the growth a sample costs."""
    from assay.testing.tiny_lm import make_tiny_lm

    peaks: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        model = make_tiny_lm(Path(tmp) / "gpt2")
        for n in (samples // 10, samples):
            folder = Path(tmp) / str(n)
            folder.mkdir()
            write_data(folder, n)
            f = measure("assay", folder, model)
            peaks[n] = f["rss_mb"]
            print(f"   assay: {n} samples ({4 * n} requests) in {f['seconds']:.2f}s, peak RSS {f['rss_mb']:.0f} MB")
    small, large = sorted(peaks)
    grown = peaks[large] - peaks[small]
    per_sample = grown * 2**20 / (large - small)
    print(f"peak RSS grew {grown:.0f} MB for {4 * (large - small)} more requests ({per_sample:.0f} B a sample)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--samples", type=int, default=500, help="multiple-choice samples, 4 choices (default 500)")
    parser.add_argument(
        "--only",
        choices=("assay", "assay-lmeval", "lm-eval", "lm-eval-noindex"),
        default=None,
        help="run one side (e.g. assay alone on 25,000 samples)",
    )
    parser.add_argument(
        "--memory", action="store_true", help="assay alone at a tenth of --samples and at --samples: is memory flat?"
    )
    parser.add_argument("--child", nargs=3, metavar=("SIDE", "FOLDER", "MODEL"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv or [])
    if args.child:
        side, folder, model = args.child
        child(side, Path(folder), Path(model))
        return
    if args.memory:
        memory(args.samples)
        return
    from assay.testing.tiny_lm import make_tiny_lm

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        model = make_tiny_lm(folder / "gpt2")
        write_data(folder, args.samples)
        sides = (args.only,) if args.only else ("assay", "assay-lmeval", "lm-eval", "lm-eval-noindex")
        figures = {side: measure(side, folder, model) for side in sides}
    n = args.samples
    for side, f in figures.items():
        print(f"{side:>12}: {n} samples ({4 * n} requests) in {f['seconds']:.2f}s = {n / f['seconds']:.1f} samples/s, "
              f"peak RSS {f['rss_mb']:.0f} MB, acc {f['acc']:.4f}")  # fmt: skip
    if len(figures) < 2:
        return
    for side in ("assay", "assay-lmeval"):
        for theirs in ("lm-eval", "lm-eval-noindex"):
            if side in figures and theirs in figures:
                ratio = figures[theirs]["seconds"] / figures[side]["seconds"]
                print(f"ratio ({side} / {theirs} samples/s): {ratio:.2f}x")
                if abs(figures[side]["acc"] - figures[theirs]["acc"]) > 1e-9:
                    print(f"WARNING: acc differs between {side} and {theirs}")


if __name__ == "__main__":
    main(sys.argv[1:])
