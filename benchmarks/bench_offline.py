"""Offline scoring: an existing predictions file scored with exact_match + token_f1, end to end.

`assay run TASK --model predictions:FILE` (read the dataset and predictions, score through the evaluators' batch
paths, write samples.jsonl and results.json) on N realistic rows (non-ASCII text, 5 % long outputs), in a
subprocess: rows/s end to end and per phase, and the subprocess's peak RSS. The baseline is the per-sample runner
path (the same predictions behind an ordinary model, so every sample goes through the request loop) on a smaller
N, in the same run; the ratio compares rows/s.

    python -m benchmarks offline                     # 1,000,000 rows (baseline: 20,000)
    python -m benchmarks.bench_offline --quick       # 20,000 rows (baseline: 5,000)
    python -m benchmarks.bench_offline --rows 10000000 --no-baseline
    python -m benchmarks.bench_offline --table 100000,300000,1000000   # issue 12's table: wall, peak RSS, folder
    python -m benchmarks.bench_offline --rows 1000000 --no-baseline --processes 1   # the driver scoring alone
    python -m benchmarks.bench_offline --results-scan 1000000   # results.json: one process vs forked range scans
    python -m benchmarks.bench_offline --rows 1000000 --no-baseline --plain   # issue 12's data: short ASCII answers
    python -m benchmarks.bench_offline --cli 1000000 --plain   # `assay run` itself, as a user runs it, 3 times
    python -m benchmarks.bench_offline --score 300000 --plain  # `assay score` of such a run: one process, every core
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

_WORD_TEXT = (
    "Zürich café naïve façade año niño São Paulo Kraków Łódź Ærø Øresund straße Größe 東京 大阪 北京 서울 Москва Київ "
    "Αθήνα القاهرة תל אביב मुंबई ঢাকা กรุงเทพ Hà Nội the a an of river mountain capital city north south east west "
    "old new great little saint port lake island valley bridge tower castle market"
)
WORDS = _WORD_TEXT.split()


_PLAIN_TEXT = (
    "the a an of river mountain capital city north south east west old new great little saint port lake island "
    "valley bridge tower castle market paris london berlin madrid rome vienna prague"
)
_PLAIN_WORDS = _PLAIN_TEXT.split()


def write_plain_data(folder: Path, n: int, seed: int = 0) -> None:
    """The shape of issue 12's own measurement: ASCII answers of 1-3 words, predictions 45 % exact, 20 % close
    (upper case and a full stop), 35 % wrong (1-5 words); no long outputs."""
    rnd = random.Random(seed)
    with (
        open(folder / "data.jsonl", "w", encoding="utf-8") as data,
        open(folder / "preds.jsonl", "w", encoding="utf-8") as preds,
    ):
        for i in range(n):
            answer = " ".join(rnd.choice(_PLAIN_WORDS) for _ in range(rnd.randint(1, 3)))
            question = f"Question {i}: which city lies by the {rnd.choice(_PLAIN_WORDS)} {rnd.choice(_PLAIN_WORDS)}?"
            r = rnd.random()
            if r < 0.45:
                prediction = answer
            elif r < 0.65:
                prediction = f"{answer.upper()}."
            else:
                prediction = " ".join(rnd.choice(_PLAIN_WORDS) for _ in range(rnd.randint(1, 5)))
            data.write(json.dumps({"id": f"q{i}", "question": question, "answer": answer}) + "\n")
            preds.write(json.dumps({"id": f"q{i}", "prediction": prediction}) + "\n")
    _write_task(folder)


def _write_task(folder: Path) -> None:
    (folder / "task.yaml").write_text(
        "name: offline_bench\ndataset: data.jsonl\nfields: {id: id, input: question, target: answer}\n"
        'template: "{{ question }}"\nevaluators: [exact_match, token_f1]\n',
        encoding="utf-8",
    )


def write_data(folder: Path, n: int, seed: int = 0) -> None:
    """data.jsonl, preds.jsonl and task.yaml in ``folder``: answers of 1-4 words (some with a number), predictions
    45 % exact, 20 % close (case, punctuation, an extra word), 30 % wrong, 5 % long (200-600 words)."""
    if os.environ.get("BENCH_OFFLINE_DATA") == "plain":
        write_plain_data(folder, n, seed)
        return
    rnd = random.Random(seed)
    with (
        open(folder / "data.jsonl", "w", encoding="utf-8") as data,
        open(folder / "preds.jsonl", "w", encoding="utf-8") as preds,
    ):
        for i in range(n):
            answer = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(1, 4)))
            if rnd.random() < 0.3:
                answer += f" {rnd.randint(1, 99999)}"
            question = f"Frage {i}: welche Stadt liegt bei «{rnd.choice(WORDS)} {rnd.choice(WORDS)}»? 答えは何ですか"
            r = rnd.random()
            if r < 0.45:
                prediction = answer
            elif r < 0.65:
                prediction = f"{answer.upper()}." if rnd.random() < 0.5 else f"{answer} {rnd.choice(WORDS)}"
            elif r < 0.95:
                prediction = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(1, 8)))
            else:
                prediction = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(200, 600)))
            data.write(json.dumps({"id": f"q{i}", "question": question, "answer": answer}, ensure_ascii=False) + "\n")
            preds.write(json.dumps({"id": f"q{i}", "prediction": prediction}, ensure_ascii=False) + "\n")
    _write_task(folder)


def _per_sample_model(path: Path) -> Any:
    """The predictions behind an ordinary model, so the run takes the per-sample request loop."""
    from assay.models.base import Model, Request, Response
    from assay.models.predictions import PredictionsModel

    class PerSample(Model):
        provider: ClassVar[str] = "predictions"
        cacheable: ClassVar[bool] = False

        def __init__(self) -> None:
            self.inner = PredictionsModel(path)
            self.name = self.inner.name

        async def generate(self, request: Request) -> Response:
            return await self.inner.generate(request)

        def identity(self) -> dict[str, Any]:
            return self.inner.identity()

    return PerSample()


def child(mode: str, folder: Path, skip_results: bool = False) -> None:
    """One run, timed by phase; prints the phases as JSON on the last line. ``skip_results`` leaves results.json
    unwritten (to time the scoring of a run too big for a results writer that holds every record)."""
    import assay.results
    from assay.models.predictions import PredictionsModel
    from assay.runner.session import RunSettings, execute
    from assay.tasks import Task

    phases: dict[str, float] = {}  # wall seconds per phase
    cpu: dict[str, float] = {}  # CPU seconds per phase (steadier than wall time on a shared machine)
    write_results = assay.results.write_results

    def timed_results(*args: Any, **kwargs: Any) -> Any:
        t, c = time.perf_counter(), time.process_time()
        try:
            return None if skip_results else write_results(*args, **kwargs)
        finally:
            phases["results"], cpu["results"] = time.perf_counter() - t, time.process_time() - c

    def phase(name: str, t: float, c: float) -> None:
        phases[name], cpu[name] = time.perf_counter() - t, time.process_time() - c

    assay.results.write_results = timed_results  # type: ignore[assignment]  # the session imports it when called
    t, c = time.perf_counter(), time.process_time()
    task = Task.from_yaml(folder / "task.yaml")
    _ = task.hash
    phase("load_task", t, c)
    t, c = time.perf_counter(), time.process_time()
    model = PredictionsModel(folder / "preds.jsonl") if mode == "offline" else _per_sample_model(folder / "preds.jsonl")
    phase("index_predictions", t, c)
    processes = int(os.environ.get("BENCH_OFFLINE_PROCESSES", "0")) or None  # None: one per CPU
    settings = RunSettings(
        output_dir=folder / f"runs-{mode}", progress=False, cache=False, concurrency=32, processes=processes
    )
    t, c = time.perf_counter(), time.process_time()
    outcome = asyncio.run(execute([task], model, settings))
    phase("run", t, c)
    for table in (phases, cpu):
        table["score_and_write_samples"] = table["run"] - table.get("results", 0.0)
    assert outcome.status == "finished", outcome.message
    print(json.dumps({"phases": phases, "cpu": cpu, "written": outcome.written}))


def measure(mode: str, folder: Path, skip_results: bool = False) -> dict[str, Any]:
    """Run :func:`child` in a subprocess: its phases, wall time and peak RSS (MiB)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent.parent), *sys.path])}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.bench_offline", "--child", mode, str(folder)]
        + (["--skip-results"] if skip_results else []),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{mode} run failed:\n{err[-3000:]}")
    result = json.loads(out.strip().splitlines()[-1])
    result["wall"] = wall
    result["rss_mib"] = _peak_rss(err)
    result["workers_rss_mib"] = _peak_rss(err, "workers_peak_rss_kib=")
    result["workers_cpu"] = next(
        (float(line.split("=", 1)[1]) for line in err.splitlines() if line.startswith("workers_cpu_s=")), 0.0
    )
    return result


def _peak_rss(stderr: str, key: str = "peak_rss_kib=") -> float:
    """The child's own peak RSS (getrusage at its end; with ``key="workers_peak_rss_kib="``, its scoring
    processes' largest), in MiB."""
    for line in stderr.splitlines():
        if line.startswith(key):
            return int(line.split("=", 1)[1]) / 1024
    return float("nan")


def report(label: str, n: int, r: dict[str, Any]) -> float:
    p = r["phases"]
    rate = n / r["wall"]
    print(
        f"{label}: {n:,} rows in {r['wall']:.1f}s end to end = {rate:,.0f} rows/s, peak RSS {r['rss_mib']:,.0f} MiB"
        f" (each scoring process: {r['workers_rss_mib']:,.0f} MiB, {r['workers_cpu']:.1f} s CPU in all)"
    )
    for label_, table in (("wall", p), ("CPU", r["cpu"])):
        score = table["score_and_write_samples"]
        print(
            f"  {label_:>4}: load task {table['load_task']:.1f}s | index predictions {table['index_predictions']:.1f}s"
            f" | check prompts + score + write samples {score:.1f}s ({n / score:,.0f} rows/s) | "
            f"results {table.get('results', 0):.1f}s"
        )
    return rate


def folder_bytes(path: Path) -> int:
    """Bytes of the files under ``path`` (the run folders a measured run wrote)."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def table(sizes: list[int]) -> None:
    """`assay run TASK --model predictions:FILE` at each size, end to end (results.json and the sample logs
    included), in a subprocess: the figures of issue 12's table."""
    print("| samples | wall | rows/s | peak RSS | scoring processes' peak | run folder |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="bench_offline_") as tmp:
            folder = Path(tmp)
            write_data(folder, n)
            r = measure("offline", folder)
            size = folder_bytes(folder / "runs-offline")
            rate, rss = n / r["wall"], r["rss_mib"]
            workers = r["workers_rss_mib"]
            print(
                f"| {n:,} | {r['wall']:.1f} s | {rate:,.0f} | {rss:,.0f} MiB | {workers:,.0f} MiB each "
                f"| {size / 1e6:,.0f} MB |",
                flush=True,
            )


def results_scan(n: int, rounds: int = 2) -> None:
    """results.json and the sample logs of one n-sample run folder, written by one process and by the default
    (forked range scans), alternately ``rounds`` times each, each in a subprocess: wall, CPU, peak RSS, ratio."""
    code = (
        "import resource, sys, time\n"
        "from assay.results import write_results\n"
        "t = time.perf_counter()\n"
        "write_results(sys.argv[1], processes=int(sys.argv[2]) or None)\n"
        "me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(time.perf_counter() - t, me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime, me.ru_maxrss,"
        " kids.ru_maxrss)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent.parent), *sys.path])}
    with tempfile.TemporaryDirectory(prefix="bench_results_") as tmp:
        folder = Path(tmp)
        write_data(folder, n)
        measure("offline", folder, skip_results=True)
        run = next((folder / "runs-offline").iterdir())
        print(f"results of {n:,} samples ({(run / 'samples.jsonl').stat().st_size / 1e6:,.0f} MB of records)")
        best: dict[str, float] = {}
        for _ in range(rounds):
            for label, processes in (("one process", 1), ("default processes", 0)):
                for old in [run / "results.json", *run.glob("samples_*.jsonl")]:
                    old.unlink(missing_ok=True)
                out = subprocess.run(
                    [sys.executable, "-c", code, str(run), str(processes)],
                    capture_output=True, text=True, env=env, check=True,
                )  # fmt: skip
                wall, cpu, rss, kids_rss = (float(x) for x in out.stdout.split())
                best[label] = min(best.get(label, wall), wall)
                print(
                    f"  {label:>17}: {wall:.1f}s wall, {cpu:.1f}s CPU, peak RSS {rss / 1024:,.0f} MiB"
                    + (f" (each scanning process {kids_rss / 1024:,.0f} MiB)" if kids_rss else ""),
                    flush=True,
                )
        print(f"  speed-up, best wall: {best['one process'] / best['default processes']:.2f}x")


def _timed_assay(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """``python -m assay ARGS`` in a subprocess: (wall s, CPU s of it and its scoring processes, the largest
    one's peak RSS so far in MiB)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "assay", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"assay {args[0]} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu, after.ru_maxrss / 1024


def _assay_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent.parent), *sys.path])}


def cli(n: int, rounds: int = 3) -> None:
    """`assay run task.yaml --model predictions:preds.jsonl` as a user types it (the results table printed
    included), ``rounds`` times on the same n rows, each in a subprocess: wall, CPU of it and its scoring
    processes, and the peak RSS of the largest of them."""
    env = _assay_env()
    with tempfile.TemporaryDirectory(prefix="bench_cli_") as tmp:
        folder = Path(tmp)
        write_data(folder, n)
        print(f"assay run over {n:,} existing predictions ({os.environ.get('BENCH_OFFLINE_DATA') or 'benchmark'} data)")
        walls = []
        for i in range(rounds):
            out = folder / f"runs-{i}"
            args = ["run", "task.yaml", "--model", "predictions:preds.jsonl", "--output", str(out)]
            wall, cpu, rss = _timed_assay(args, folder, env)
            walls.append(wall)
            print(
                f"  round {i + 1}: {wall:.1f}s wall = {n / wall:,.0f} rows/s, {cpu:.1f}s CPU, "
                f"largest process's peak RSS so far {rss:,.0f} MiB",
                flush=True,
            )
            shutil.rmtree(out)
        print(f"  best {min(walls):.1f}s, median {sorted(walls)[len(walls) // 2]:.1f}s")


def score(n: int, rounds: int = 3) -> None:
    """`assay score RUN` (re-scoring a run's logged responses into a new folder) as a user types it, on a run of
    n rows, ``rounds`` times alternately in one process (``--processes 1``) and on every core; the baseline is the
    `assay run` that made the run, on the same rows. Wall, CPU and rows/s of each."""
    env = _assay_env()
    with tempfile.TemporaryDirectory(prefix="bench_score_") as tmp:
        folder = Path(tmp)
        write_data(folder, n)
        data = os.environ.get("BENCH_OFFLINE_DATA") or "benchmark"
        run_wall, run_cpu, _ = _timed_assay(
            ["run", "task.yaml", "--model", "predictions:preds.jsonl", "--output", "runs", "-q"], folder, env
        )
        run_dir = next((folder / "runs").iterdir())
        print(f"assay score of a run of {n:,} rows ({data} data); the run took {run_wall:.1f}s ({run_cpu:.1f}s CPU)")
        walls: dict[str, list[float]] = {"one process": [], "every core": []}
        for i in range(rounds):
            for label, extra in (("one process", ["--processes", "1"]), ("every core", [])):
                out = folder / f"scored-{i}-{len(extra)}"
                wall, cpu, rss = _timed_assay(["score", str(run_dir), "-o", str(out), "-q", *extra], folder, env)
                walls[label].append(wall)
                print(
                    f"  round {i + 1}, {label}: {wall:.1f}s wall = {n / wall:,.0f} rows/s, {cpu:.1f}s CPU, "
                    f"peak RSS so far {rss:,.0f} MiB",
                    flush=True,
                )
                shutil.rmtree(out)
        for label, ws in walls.items():
            best, median = min(ws), sorted(ws)[len(ws) // 2]
            print(f"  {label}: best {best:.1f}s, median {median:.1f}s, {run_wall / best:.2f}x the run's speed")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench_offline")
    parser.add_argument("--quick", action="store_true", help="20,000 rows (baseline 5,000)")
    parser.add_argument("--rows", type=int, help="rows of the offline run")
    parser.add_argument("--baseline-rows", type=int, help="rows of the per-sample baseline")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--skip-results", action="store_true", help="time everything but writing results.json")
    parser.add_argument("--table", help="comma-separated row counts: wall, peak RSS and run folder size of each")
    parser.add_argument("--processes", type=int, help="scoring processes (default: one per CPU; 1: the driver alone)")
    parser.add_argument("--results-scan", type=int, metavar="N", help="time writing the results of N samples only")
    parser.add_argument("--plain", action="store_true", help="issue 12's data: short ASCII answers, no long outputs")
    parser.add_argument("--cli", type=int, metavar="N", help="time `assay run` itself on N rows (3 rounds)")
    parser.add_argument("--score", type=int, metavar="N", help="time `assay score` of a run of N rows (3 rounds)")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "FOLDER"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv if argv is not None else [])
    if args.plain:
        os.environ["BENCH_OFFLINE_DATA"] = "plain"
    if args.processes:
        os.environ["BENCH_OFFLINE_PROCESSES"] = str(args.processes)
    if args.child:
        child(args.child[0], Path(args.child[1]), args.skip_results)
        import resource

        print(f"peak_rss_kib={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", file=sys.stderr)
        workers = resource.getrusage(resource.RUSAGE_CHILDREN)  # the scoring processes, ended and waited for
        print(f"workers_peak_rss_kib={workers.ru_maxrss}", file=sys.stderr)
        print(f"workers_cpu_s={workers.ru_utime + workers.ru_stime}", file=sys.stderr)
        return
    if args.table:
        table([int(n) for n in args.table.split(",")])
        return
    if args.results_scan:
        results_scan(args.results_scan)
        return
    if args.cli:
        cli(args.cli)
        return
    if args.score:
        score(args.score)
        return
    quick = args.quick or os.environ.get("ASSAY_BENCH_QUICK") == "1"
    n = args.rows or (20_000 if quick else 1_000_000)
    n_base = args.baseline_rows or (5_000 if quick else 20_000)
    data = "short ASCII answers" if args.plain else "non-ASCII, 5 % long outputs"
    print(f"exact_match + token_f1 over existing predictions ({data}); {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="bench_offline_") as tmp:
        big, small = Path(tmp) / "big", Path(tmp) / "small"
        big.mkdir()
        small.mkdir()
        t = time.perf_counter()
        write_data(big, n)
        print(f"(wrote {n:,} rows in {time.perf_counter() - t:.1f}s)")
        label = "offline path" + (" (results.json not written)" if args.skip_results else "")
        rate = report(label, n, measure("offline", big, args.skip_results))
        if not args.no_baseline:
            write_data(small, n_base)
            base = report("per-sample runner path (baseline)", n_base, measure("per-sample", small))
            small_offline = report("offline path on the baseline's rows", n_base, measure("offline", small))
            print(
                f"ratio offline ÷ per-sample, rows/s end to end: {rate / base:.1f}x at {n:,} rows, "
                f"{small_offline / base:.1f}x on the same {n_base:,} rows"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
