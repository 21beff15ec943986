"""Generation on an lm-eval task: ``assay run`` (lm-eval's task layer, assay's runner) against ``lm_eval`` itself, one
server, the same task file and documents.

A gsm8k-style lm-eval task (lm-eval's gsm8k file with local data: 5-shot, two regex filters) over N documents, asked
of the OpenAI-compatible test server in its own process (a fixed reply after ``--latency`` seconds), in chat mode
(lm-eval's ``local-chat-completions`` needs ``--apply_chat_template``; assay gets ``--apply-chat-template``). Each
side runs in its own subprocess and prints its wall time (task loading included), CPU time and figures:

* ``assay``: at its defaults (concurrency 32);
* ``lm-eval``: at its defaults (``num_concurrent=1``);
* ``lm-eval-32``: ``num_concurrent=32``, the setting that changes lm-eval's default, named as such.

    python -m benchmarks lmeval_generate                  # 400 documents, 50 ms a reply
    python -m benchmarks.bench_lmeval_generate --docs 1000 --latency 0.1
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_runner import ServerProcess

REPLY = "They add up.\n#### 42"
TASK = """task: gsm8k_bench
dataset_path: json
dataset_kwargs:
  data_files:
    train: {train}
    test: {test}
output_type: generate_until
training_split: train
fewshot_split: train
test_split: test
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_target: "{{{{answer}}}}"
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
    ignore_case: true
    ignore_punctuation: false
    regexes_to_ignore: [",", "\\\\$", "(?s).*#### ", "\\\\.$"]
generation_kwargs:
  until: ["Question:", "</s>", "<|im_end|>"]
  do_sample: false
  temperature: 0.0
num_fewshot: 5
filter_list:
  - name: strict-match
    filter:
      - function: regex
        regex_pattern: "#### (\\\\-?[0-9\\\\.\\\\,]+)"
      - function: take_first
  - name: flexible-extract
    filter:
      - function: regex
        group_select: -1
        regex_pattern: "(-?[$0-9.,]{{2,}})|(-?[0-9]+)"
      - function: take_first
"""


def write_task(folder: Path, docs: int) -> Path:
    """The task file and its train/test JSONL (answers 42 for a third of the documents)."""
    rows = [
        {"question": f"Ann has {i} pens and gets {i % 9 + 1} more. How many? (ünïcode ok)",
         "answer": f"{i}+{i % 9 + 1}\n#### {42 if i % 3 == 0 else i + i % 9 + 1}"}
        for i in range(docs)
    ]  # fmt: skip
    for name, part in (("train", rows[:20]), ("test", rows)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in part))
    path = folder / "gsm8k_bench.yaml"
    path.write_text(TASK.format(train=folder / "train.jsonl", test=folder / "test.jsonl"))
    return path


def child(side: str, folder: Path, base_url: str) -> None:
    """One side in this process; prints one JSON line (seconds, CPU seconds, figures)."""
    os.environ.setdefault("OPENAI_API_KEY", "EMPTY")
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    started, cpu0 = time.perf_counter(), time.process_time()
    if side == "assay":
        import assay

        run = assay.run(
            str(folder / "gsm8k_bench.yaml"),
            model="openai:test-model",
            base_url=base_url,
            lmeval={"apply_chat_template": True},
            output_dir=str(folder / "runs"),
            progress=False,
            cache=False,
        )
        results = json.loads((run.path / "results.json").read_text())["results"]["gsm8k_bench"]
    else:
        import lm_eval
        from lm_eval.tasks import TaskManager

        concurrent = 32 if side == "lm-eval-32" else 1
        out = lm_eval.simple_evaluate(
            model="local-chat-completions",
            model_args=f"model=test-model,base_url={base_url}/chat/completions,num_concurrent={concurrent},"
            "max_retries=1,tokenized_requests=False",
            tasks=["gsm8k_bench"],
            apply_chat_template=True,
            task_manager=TaskManager(include_path=str(folder)),
        )
        assert out is not None
        results = out["results"]["gsm8k_bench"]
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    figures = {k: v for k, v in results.items() if "," in k and "stderr" not in k}
    print(json.dumps({"seconds": seconds, "cpu": cpu, "rss_mb": rss_mb, "figures": figures}))


def measure(side: str, folder: Path, base_url: str) -> dict:
    cmd = [sys.executable, "-m", "benchmarks.bench_lmeval_generate", "--child", side, str(folder), base_url]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{side} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--docs", type=int, default=400, help="documents (default 400)")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds the server takes a reply (0.05)")
    parser.add_argument("--only", choices=("assay", "lm-eval", "lm-eval-32"), help="run one side")
    parser.add_argument("--child", nargs=3, metavar=("SIDE", "FOLDER", "URL"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv or [])
    if args.child:
        side, folder, url = args.child
        child(side, Path(folder), url)
        return
    sides = (args.only,) if args.only else ("assay", "lm-eval-32", "lm-eval")
    with tempfile.TemporaryDirectory() as tmp, ServerProcess(args.latency, "--reply", REPLY) as server:
        folder = Path(tmp)
        write_task(folder, args.docs)
        figures = {side: measure(side, folder, server.base_url) for side in sides}
    n = args.docs
    for side, f in figures.items():
        print(f"{side:>10}: {n} documents in {f['seconds']:.2f}s = {n / f['seconds']:.1f} docs/s, CPU {f['cpu']:.2f}s, "
              f"peak RSS {f['rss_mb']:.0f} MB, {f['figures']}")  # fmt: skip
    if "assay" in figures:
        for side in ("lm-eval", "lm-eval-32"):
            if side in figures:
                print(f"ratio (assay / {side} docs/s): {figures[side]['seconds'] / figures['assay']['seconds']:.2f}x")
                if figures[side]["figures"] != figures["assay"]["figures"]:
                    print(f"WARNING: figures differ between assay and {side}")


if __name__ == "__main__":
    main(sys.argv[1:])
