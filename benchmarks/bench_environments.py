"""Agent environments at scale (issue 42): samples each in their own bubblewrap environment, beside a bare subprocess.

Each sample's row gives a workspace of 50 files (about 200 B to 4.5 KB, some non-ASCII text, five in a subfolder); the
task has ``environment:`` (the row's files), ``tools: [bash]``, ``agent:`` at its defaults and an ``env_check`` metric
whose command (``cmp -s out.txt f01.txt``) runs in the environment after the loop, so the observe step is measured.
The scripted model (the assay test server in its own process, replying after 50 ms) makes 3 bash calls, one a turn
(``ls | wc -l``, ``grep -c e *.txt | tail -1``, ``cat f01.txt > out.txt``), then answers: 4 model calls a sample.

Sides, each in its own process after a warm-up of 8 untimed samples:

- assay: ``arun_outcome`` at its defaults (concurrency 32, ``--max-environments`` 32) but ``cache=False`` and no
  progress bar; wall, CPU of the process and its children (``getrusage``), peak RSS, each record's environment
  ``create_s``/``remove_s`` (mean, p95) and the peak alive from ``created_at``/``removed_at``;
- bare subprocess: per sample a temp folder with the same 50 files, 4 × ``asyncio.sleep(0.05)`` for the model
  calls, the same 3 commands each with ``bash -c`` as an asyncio subprocess, the same ``cmp`` check, the folder
  removed; 32 samples at once, no sandbox;
- direct: ``BwrapEnvironment.create`` + ``close`` one after another, an empty environment and a 50-file one (and the
  50-file one with one shell command, which starts the persistent bash), median of 20.

The latency bound is samples × 4 model calls × latency ÷ 32: the time the model's latency alone takes at that
concurrency (the 3 tool calls and the environment's life come on top of it in each sample's critical path).

    python -m benchmarks environments                    # 200 samples, 1 round
    BENCH_ENV_SAMPLES=40 python -m benchmarks environments
    python -m benchmarks.bench_environments --samples 200 --rounds 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SAMPLES = 200
LATENCY_S = 0.05
CONCURRENCY = 32  # assay run's default (RunSettings.concurrency) and --max-environments' default: not passed to assay
FILES = 50
WARM_UP = 8  # samples run first in each side's process, untimed (imports, first use)
DIRECT_REPEATS = 20
ROOT = Path(__file__).resolve().parent.parent
COMMANDS = ("ls | wc -l", "grep -c e *.txt | tail -1", "cat f01.txt > out.txt")
CHECK = "cmp -s out.txt f01.txt"
_TEXT = (
    "alpha beta gamma delta the quick brown fox jumps over lazy dog river stone table window "
    "café naïve façade Ωμέγα λόγος Привет мир 東京 数据 ✓ → déjà"
)
WORDS = tuple(_TEXT.split())


def _base_text() -> str:
    rng = random.Random(0)
    return " ".join(rng.choice(WORDS) + ("\n" if rng.random() < 0.1 else "") for _ in range(1500)) + "\n"


BASE_TEXT = _base_text()  # ~11,000 characters, cut at a random place and length for each file


def _files(i: int) -> dict[str, str]:
    """Sample ``i``'s workspace: f01.txt … f45.txt and notes/n1.md … n5.md, about 200 B – 4.5 KB each."""
    rng = random.Random(i)
    out: dict[str, str] = {}
    for k in range(1, FILES + 1):
        name = f"f{k:02d}.txt" if k <= FILES - 5 else f"notes/n{k - FILES + 5}.md"
        start, size = rng.randrange(len(BASE_TEXT) - 3600), rng.randint(180, 3600)
        out[name] = f"sample {i} file {k}: {BASE_TEXT[start : start + size]}\n"
    return out


def _rows(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [
        {"id": f"s{i}", "input": f"Sample {i}: look at the files in /workspace.", "files": _files(i)}
        for i in range(start, start + n)
    ]


def _step(conv: Any) -> Any:
    """The scripted model: the three commands, one a turn, then an answer quoting the first's output."""
    done = len(conv.tool_results)
    if done < len(COMMANDS):
        return {"tool_calls": [{"name": "bash", "arguments": {"cmd": COMMANDS[done]}}]}
    return f"There are {conv.tool_results[0]['content'].strip()} entries; f01.txt is copied to out.txt."


def serve(latency_s: float) -> None:
    """Run the scripted server until killed, printing its base URL first."""
    from assay.testing.server import ConversationReplies, OpenAITestServer

    with OpenAITestServer(ConversationReplies(_step), latency_s=latency_s) as server:
        print(server.base_url, flush=True)
        while True:
            time.sleep(3600)


def _usage() -> tuple[float, float]:
    """CPU seconds of this process and of its waited-for children (user + system)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def _peak_rss_mib() -> float:
    """Peak RSS of this process, MiB (a child's counts the parent's pages it had before its exec: not shown)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def _peak_alive(lifetimes: list[tuple[float, float]]) -> int:
    events = sorted([(a, 1) for a, _ in lifetimes] + [(b, -1) for _, b in lifetimes])
    alive = peak = 0
    for _, step in events:
        alive += step
        peak = max(peak, alive)
    return peak


async def _assay(base_url: str, n: int, start: int) -> dict[str, Any]:
    """``arun_outcome`` on the environment task (cache off, no progress bar; everything else default)."""
    from assay.api import arun_outcome

    task = {
        "name": "envs",
        "dataset": {"rows": _rows(n, start)},
        "template": "{{ input }}",
        "environment": {},  # the row's `files` key fills the workspace (row_files' default)
        "tools": ["bash"],
        "agent": {},
        "evaluators": [{"name": "env_check", "command": CHECK}],
    }
    model = {"provider": "openai", "model": "assay-test", "base_url": base_url}
    with tempfile.TemporaryDirectory() as tmp:
        self0, kids0 = _usage()
        wall0 = time.perf_counter()
        outcome = await arun_outcome(task, model, output_dir=Path(tmp), cache=False, progress=False)
        wall = time.perf_counter() - wall0
        self1, kids1 = _usage()
        results = json.loads((outcome.run_dir / "results.json").read_text())
        records = [json.loads(line) for line in (outcome.run_dir / "samples.jsonl").read_text().splitlines()]
    envs = [(r.get("responses") or [{}])[0].get("metadata", {}).get("environment") or {} for r in records]
    create = [e["create_s"] for e in envs if "create_s" in e]
    remove = [e["remove_s"] for e in envs if "remove_s" in e]
    lifetimes = [(e["created_at"], e["removed_at"]) for e in envs if "created_at" in e and "removed_at" in e]
    assert len(records) == n and len(create) == n, (len(records), len(create))
    model_s, tools_s = [], []
    for r in records:
        transcript = r["responses"][0].get("transcript") or []
        model_s.append(sum(m.get("latency_s") or 0.0 for m in transcript if m.get("role") == "assistant"))
        tools_s.append(sum(m.get("duration_s") or 0.0 for m in transcript if m.get("role") == "tool"))
    return {
        "wall": wall,
        "cpu_self": self1 - self0,
        "cpu_children": kids1 - kids0,
        "score": results["results"]["envs"]["env_check,none"],
        "create_mean": statistics.fmean(create),
        "create_p95": _p95(create),
        "remove_mean": statistics.fmean(remove),
        "remove_p95": _p95(remove),
        "peak_alive": _peak_alive(lifetimes),
        "life": statistics.fmean(b - a for a, b in lifetimes),
        "model": statistics.fmean(model_s),
        "tools": statistics.fmean(tools_s),
        "agent": results["assay"]["tasks"]["envs"].get("agent", {}),
    }


async def _bare(n: int, start: int, latency: float, concurrency: int) -> dict[str, Any]:
    """The same work with no sandbox: temp folder, 4 × sleep, 3 × ``bash -c``, the check, the folder removed."""
    rows = _rows(n, start)
    gate = asyncio.Semaphore(concurrency)
    create: list[float] = []
    remove: list[float] = []
    life: list[float] = []
    model_s: list[float] = []
    tools_s: list[float] = []
    check_s: list[float] = []

    async def run(cmd: list[str], cwd: str) -> tuple[int, bytes]:
        proc = await asyncio.create_subprocess_exec(
            *cmd, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        out, _ = await proc.communicate()
        return proc.returncode or 0, out

    async def sample(row: dict[str, Any]) -> bool:
        async with gate:
            t0 = time.perf_counter()
            folder = tempfile.mkdtemp(prefix="bare-env-")
            for name, text in row["files"].items():
                path = Path(folder, name)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
            create.append(time.perf_counter() - t0)
            model = tools = 0.0
            try:
                for turn in range(len(COMMANDS) + 1):
                    t = time.perf_counter()
                    await asyncio.sleep(latency)  # the model's reply
                    model += time.perf_counter() - t
                    if turn < len(COMMANDS):
                        t = time.perf_counter()
                        await run(["bash", "-c", COMMANDS[turn]], folder)
                        tools += time.perf_counter() - t
                t = time.perf_counter()
                code, _ = await run(["bash", "-c", CHECK], folder)
                check_s.append(time.perf_counter() - t)
                return code == 0
            finally:
                t1 = time.perf_counter()
                shutil.rmtree(folder)
                remove.append(time.perf_counter() - t1)
                life.append(time.perf_counter() - t0)
                model_s.append(model)
                tools_s.append(tools)

    self0, kids0 = _usage()
    wall0 = time.perf_counter()
    passed = await asyncio.gather(*(sample(r) for r in rows))
    wall = time.perf_counter() - wall0
    self1, kids1 = _usage()
    return {
        "wall": wall,
        "cpu_self": self1 - self0,
        "cpu_children": kids1 - kids0,
        "score": sum(passed) / len(passed),
        "create_mean": statistics.fmean(create),
        "create_p95": _p95(create),
        "remove_mean": statistics.fmean(remove),
        "remove_p95": _p95(remove),
        "life": statistics.fmean(life),
        "model": statistics.fmean(model_s),
        "tools": statistics.fmean(tools_s),
        "check": statistics.fmean(check_s),
    }


async def _direct(repeats: int) -> dict[str, Any]:
    """BwrapEnvironment.create + close one after another: empty, 50 files, 50 files and one shell command."""
    from assay.environments.bwrap_env import BwrapEnvironment
    from assay.environments.spec import parse_environment

    spec = parse_environment({}, None)
    out: dict[str, Any] = {}
    row = _rows(1)[0]
    variants = (("empty", {}, None), ("50 files", row, None), ("50 files + 1 bash", row, "true"))
    for label, files, command in variants:
        creates, closes, shells = [], [], []
        for i in range(repeats + 1):  # the first is left out (first use)
            t0 = time.perf_counter()
            env = await BwrapEnvironment.create(spec, files, f"direct-{i}")
            t1 = time.perf_counter()
            if command is not None:
                result = await (await env.shell()).run(command, timeout_s=30)
                assert result.exit_code == 0, result
            t2 = time.perf_counter()
            await env.close()
            t3 = time.perf_counter()
            if i:
                creates.append(t1 - t0)
                shells.append(t2 - t1)
                closes.append(t3 - t2)
        out[label] = {
            "create": statistics.median(creates),
            "shell": statistics.median(shells),
            "close": statistics.median(closes),
            "total": statistics.median(a + b + c for a, b, c in zip(creates, shells, closes, strict=True)),
        }
    return out


def _side(args: list[str]) -> dict[str, Any]:
    """One side in its own process: its figures as JSON on the last line."""
    cmd = [sys.executable, "-m", "benchmarks.bench_environments", "--side", *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"side {args[0]} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _run_side(name: str, rest: list[str]) -> None:
    if name == "direct":
        mine: dict[str, Any] = asyncio.run(_direct(int(rest[0])))
    elif name == "assay":
        base_url, n = rest[0], int(rest[1])
        asyncio.run(_assay(base_url, WARM_UP, 10_000_000))  # other ids than the timed run's
        mine = asyncio.run(_assay(base_url, n, 0))
    else:
        n, latency = int(rest[0]), float(rest[1])
        asyncio.run(_bare(WARM_UP, 10_000_000, latency, CONCURRENCY))
        mine = asyncio.run(_bare(n, 0, latency, CONCURRENCY))
    mine["peak_rss_mib"] = _peak_rss_mib()
    print(json.dumps(mine))


def _uptime() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--samples", type=int, default=int(os.environ.get("BENCH_ENV_SAMPLES", SAMPLES)))
    parser.add_argument("--latency", type=float, default=LATENCY_S, help="server seconds per reply")
    parser.add_argument("--rounds", type=int, default=1, help="times each side runs (alternating)")
    parser.add_argument("--repeats", type=int, default=DIRECT_REPEATS, help="direct create+close, median of")
    parser.add_argument("--serve", type=float, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--side", nargs="+", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv if argv is not None else [])
    if args.serve is not None:
        return serve(args.serve)
    if args.side is not None:
        return _run_side(args.side[0], args.side[1:])
    from benchmarks.bench_runner import ServerProcess

    n, latency = args.samples, args.latency
    bound = n * (len(COMMANDS) + 1) * latency / CONCURRENCY
    print(
        f"{n} samples × ({FILES} files, {len(COMMANDS)} bash calls, {len(COMMANDS) + 1} model calls at "
        f"{latency * 1000:.0f} ms), concurrency {CONCURRENCY}; latency bound {bound:.2f} s "
        f"(the model's latency alone; the tool calls and each environment's life add to every sample's path)"
    )
    cmd = [sys.executable, "-m", "benchmarks.bench_environments", "--serve", str(latency)]
    with ServerProcess(latency, cmd=cmd) as server:
        for r in range(1, args.rounds + 1):
            load0 = _uptime()
            sides = {
                "bare": _side(["bare", str(n), str(latency)]),
                "assay": _side(["assay", server.base_url, str(n)]),
            }
            direct = _side(["direct", str(args.repeats)])
            print(f"-- round {r}: load {load0} → {_uptime()} (1-minute average)")
            for label, f in (("bare subprocess", sides["bare"]), ("assay", sides["assay"])):
                cpu = f["cpu_self"] + f["cpu_children"]
                print(
                    f"{label:>16}: wall {f['wall']:6.2f} s ({f['wall'] / bound:4.2f}× the bound), CPU {cpu:6.2f} s "
                    f"(process {f['cpu_self']:.2f} + children {f['cpu_children']:.2f}), peak RSS "
                    f"{f['peak_rss_mib']:.0f} MiB, score {f['score']:.3f}"
                )
                print(
                    f"{'':>18}per sample: create {f['create_mean'] * 1000:6.1f} ms mean, {f['create_p95'] * 1000:6.1f}"
                    f" p95; remove {f['remove_mean'] * 1000:6.1f} ms mean, {f['remove_p95'] * 1000:6.1f} p95"
                    + (f"; peak alive {f['peak_alive']}" if "peak_alive" in f else "")
                )
                rest = f["life"] - f["create_mean"] - f["model"] - f["tools"] - f.get("check", 0.0) - f["remove_mean"]
                print(
                    f"{'':>18}a sample's life {f['life'] * 1000:6.1f} ms: create {f['create_mean'] * 1000:.1f}, "
                    f"{len(COMMANDS) + 1} model calls {f['model'] * 1000:.1f}, {len(COMMANDS)} bash calls "
                    f"{f['tools'] * 1000:.1f}, "
                    + (f"check {f['check'] * 1000:.1f}, " if "check" in f else "")
                    + f"remove {f['remove_mean'] * 1000:.1f}, the rest {rest * 1000:.1f}"
                    + (" (the check, the workspace diff, the loop)" if "check" not in f else "")
                )
            a, b = sides["assay"], sides["bare"]
            ratio_cpu = (a["cpu_self"] + a["cpu_children"]) / (b["cpu_self"] + b["cpu_children"])
            print(f"{'assay ÷ bare':>16}: wall {a['wall'] / b['wall']:.2f}×, CPU {ratio_cpu:.2f}×")
            print(f"{'':>18}agent figures: {json.dumps(a['agent'], sort_keys=True)}")
            for label, d in direct.items():
                if not isinstance(d, dict):
                    continue  # its process's peak RSS
                print(
                    f"{'direct ' + label:>26}: create {d['create'] * 1000:6.1f} ms, first shell command "
                    f"{d['shell'] * 1000:5.1f} ms, close {d['close'] * 1000:5.1f} ms; total {d['total'] * 1000:6.1f} ms"
                    f" (median of {args.repeats})"
                )
    return None


if __name__ == "__main__":
    main(sys.argv[1:])
