"""Sentences per second of ``semantic_similarity`` (all-MiniLM-L6-v2 from the packaged weights, on this machine's
device) against plain baselines in the same run:

- batch: ``evaluate_batch`` over N (output, reference) pairs with a cold encoding cache (2N sentences encoded);
- loop: ``evaluate`` pair by pair with a cold cache (two sentences per model call: what unbatched scoring costs);
- direct: ``SentenceTransformer.encode`` on the same 2N sentences in one call (the library's own best case);
- cached: ``evaluate_batch`` again on the same pairs (every encoding from the cache by text hash);
- one thread: ``evaluate_batch`` with ``cpu_threads=1`` (on a machine busy with other work, torch's spinning
  threads can cost more than they bring).

Prints sentences/s for each and the ratios batch/loop, batch/direct and cached/batch; also the model load time.
"""

from __future__ import annotations

import random
import time

N_PAIRS = 300
LOOP_PAIRS = 40  # the slow per-pair baseline runs on a subset
SEED = 7
_WORDS = [
    *(
        [
            "the",
            "a",
            "model",
            "answer",
            "question",
            "river",
            "city",
            "capital",
            "quickly",
            "slowly",
            "found",
            "wrote",
            "built",
            "large",
            "small",
            "new",
        ]
    ),
    *(
        [
            "old",
            "red",
            "blue",
            "market",
            "stock",
            "fell",
            "rose",
            "cat",
            "dog",
            "sat",
            "ran",
            "mat",
            "park",
            "engine",
            "data",
            "result",
            "paper",
            "study",
        ]
    ),
]


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 18))).capitalize() + "."


def main() -> None:
    from assay import evaluators
    from assay.evaluators.semantic import SemanticSimilarity, load_model

    rng = random.Random(SEED)
    outs = [_sentence(rng) for _ in range(N_PAIRS)]
    refs = [_sentence(rng) for _ in range(N_PAIRS)]
    started = time.perf_counter()
    ev = evaluators.get("semantic_similarity", cache_size=10 * N_PAIRS)
    assert isinstance(ev, SemanticSimilarity)
    print(f"model load (import + weights): {time.perf_counter() - started:.1f}s on {ev._device}")
    ev.evaluate("warm up", "warm up the model")

    t = time.perf_counter()
    ev.evaluate_batch(outs, refs)
    batch = 2 * N_PAIRS / (time.perf_counter() - t)

    loop_ev = evaluators.get("semantic_similarity", cache_size=0)
    t = time.perf_counter()
    for o, r in zip(outs[:LOOP_PAIRS], refs[:LOOP_PAIRS], strict=True):
        loop_ev.evaluate(o, r)
    loop = 2 * LOOP_PAIRS / (time.perf_counter() - t)

    model = load_model("all-MiniLM-L6-v2", "auto", False)
    t = time.perf_counter()
    model.encode(outs + refs, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
    direct = 2 * N_PAIRS / (time.perf_counter() - t)

    t = time.perf_counter()
    ev.evaluate_batch(outs, refs)
    cached = 2 * N_PAIRS / (time.perf_counter() - t)

    import torch

    default_threads = torch.get_num_threads()
    one = evaluators.get("semantic_similarity", cpu_threads=1, cache_size=0)
    t = time.perf_counter()
    one.evaluate_batch(outs, refs)
    one_thread = 2 * N_PAIRS / (time.perf_counter() - t)
    torch.set_num_threads(default_threads)

    print(f"batch  evaluate_batch, cold cache : {batch:10.0f} sentences/s  ({N_PAIRS} pairs)")
    print(f"loop   evaluate per pair, no cache: {loop:10.0f} sentences/s  ({LOOP_PAIRS} pairs)")
    print(f"direct SentenceTransformer.encode : {direct:10.0f} sentences/s")
    print(f"cached evaluate_batch, warm cache : {cached:10.0f} sentences/s")
    print(f"batch  with cpu_threads=1         : {one_thread:10.0f} sentences/s  (default: {default_threads} threads)")
    ratios = f"batch/loop {batch / loop:.1f}x  batch/direct {batch / direct:.2f}x  cached/batch {cached / batch:.1f}x"
    print(f"ratios: {ratios}")
