"""The agent tool loop against a scripted server in its own process, beside inspect_ai and a plain loop (issue 26).

Each sample is a two-request trajectory: the model asks for the Python tool ``add(x, y)``, the loop runs it and
sends the result back, the model answers with it. 500 samples, 50 ms server latency, concurrency 64 (``assay run``'s
default is 32: this benchmark sets 64 for every side, as the issue asks). Each side runs in its own process: assay
(``arun_outcome``, everything else at its defaults: scoring, records, retries), inspect_ai (``use_tools(add()),
generate()``, ``max_connections=64``; when ``--inspect-python`` names a Python that has it) and the plain baseline,
a bare aiohttp loop doing the same requests and tool calls (no scoring, no records, no retries). Each side first
runs 10 samples untimed in the same process (imports and first use; a process's start-up is ``bench_runner``'s
figure 3), then the timed run. Printed per side: wall seconds, share of the latency bound (requests × latency ÷
concurrency is the fastest any client could finish), client CPU per model call, and the score (every side must give
1.0).

    python -m benchmarks agent
    python -m benchmarks.bench_agent --inspect-python /path/to/venv/bin/python --samples 500
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchmarks.bench_runner import ServerProcess

SAMPLES = 500
LATENCY_S = 0.05
CONCURRENCY = 64  # assay run's default is 32 (RunSettings.concurrency); every side gets 64 here
ROOT = Path(__file__).resolve().parent.parent
WARM_UP = 10  # samples run first in each side's process, untimed: imports and first-use costs are not the loop's


async def add(x: int, y: int) -> int:
    """Add two numbers.

    Args:
        x: The first number.
        y: The second number.
    """
    return x + y


def _step(conv: Any) -> Any:
    """The scripted model: ask for add(x, y) on a new question, then answer with the tool's result."""
    if not conv.tool_results:
        x, y = (int(n) for n in re.findall(r"\d+", conv.user)[:2])
        return {"tool_calls": [{"name": "add", "arguments": {"x": x, "y": y}}]}
    return f"The sum is {conv.tool_results[-1]['content']}."


def serve(latency_s: float) -> None:
    """Run the scripted server until killed, printing its base URL first."""
    from assay.testing.server import ConversationReplies, OpenAITestServer

    with OpenAITestServer(ConversationReplies(_step), latency_s=latency_s) as server:
        print(server.base_url, flush=True)
        while True:
            time.sleep(3600)


def _server(latency_s: float) -> ServerProcess:
    """The scripted server in its own process, so its CPU is not counted as the client's (imported here: the
    inspect_ai side runs in a Python without assay)."""
    from benchmarks.bench_runner import ServerProcess

    return ServerProcess(latency_s, cmd=[sys.executable, "-m", "benchmarks.bench_agent", "--serve", str(latency_s)])


def _rows(n: int) -> list[dict[str, Any]]:
    return [
        {"id": f"q{i}", "input": f"What is {i} + {2 * i + 1}?", "target": f"The sum is {3 * i + 1}."} for i in range(n)
    ]


async def _assay(base_url: str, n: int, concurrency: int) -> dict[str, Any]:
    """assay.arun_outcome on the agent task (concurrency set, all else default): wall, CPU, score, agent figures."""
    from assay.api import arun_outcome

    task = {
        "name": "agent",
        "dataset": {"rows": _rows(n)},
        "template": "{{ input }}",
        "tools": [{"python": "benchmarks.bench_agent:add"}],
        "evaluators": [{"name": "exact_match"}],
    }
    model = {"provider": "openai", "model": "assay-test", "base_url": base_url}
    with tempfile.TemporaryDirectory() as tmp:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        outcome = await arun_outcome(
            task, model, output_dir=Path(tmp), cache=False, progress=False, concurrency=concurrency
        )
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        results = json.loads((outcome.run_dir / "results.json").read_text())
    score = results["results"]["agent"]["exact_match,none"]  # 1.0: every trajectory ran the tool, used its result
    agent = results["assay"]["tasks"]["agent"].get("agent", {})
    return {"wall": wall, "cpu": cpu, "score": score, "agent": agent}


async def _plain(base_url: str, n: int, concurrency: int) -> dict[str, Any]:
    """The plain baseline: per sample, request, run add, request again, from a bare aiohttp loop."""
    import aiohttp

    tools = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {}}}}]
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for row in _rows(n):
        queue.put_nowait(row)

    async def worker(session: aiohttp.ClientSession) -> None:
        while not queue.empty():
            row = queue.get_nowait()
            messages: list[dict[str, Any]] = [{"role": "user", "content": row["input"]}]
            for _ in range(2):
                body = {"model": "assay-test", "messages": messages, "tools": tools}
                async with session.post(f"{base_url}/chat/completions", json=body) as resp:
                    message = (await resp.json())["choices"][0]["message"]
                messages.append(message)
                for call in message.get("tool_calls") or []:
                    args = json.loads(call["function"]["arguments"])
                    result = await add(**args)
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": str(result)})
            assert messages[-1]["content"] == row["target"]

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
        return {"wall": time.perf_counter() - wall0, "cpu": time.process_time() - cpu0, "score": 1.0}


def _inspect(base_url: str, n: int, concurrency: int) -> dict[str, Any]:
    """inspect_ai's own loop on the same samples: ``use_tools(add()), generate()`` and ``includes()``."""
    from inspect_ai import Task, eval  # type: ignore[import-not-found]
    from inspect_ai.dataset import Sample  # type: ignore[import-not-found]
    from inspect_ai.scorer import includes  # type: ignore[import-not-found]
    from inspect_ai.solver import generate, use_tools  # type: ignore[import-not-found]
    from inspect_ai.tool import tool  # type: ignore[import-not-found]

    @tool(name="add")
    def add_named() -> Any:
        async def execute(x: int, y: int) -> int:
            """Add two numbers.

            Args:
                x: The first number.
                y: The second number.
            """
            return x + y

        return execute

    samples = [Sample(input=r["input"], target=r["target"], id=r["id"]) for r in _rows(n)]
    task = Task(dataset=samples, solver=[use_tools(add_named()), generate()], scorer=includes())
    os.environ.setdefault("OPENAI_API_KEY", "not-a-secret")
    with tempfile.TemporaryDirectory() as tmp:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        (log,) = eval(
            task, model="openai/assay-test", model_base_url=base_url, max_connections=concurrency,
            model_args={"responses_api": False},
            display="none", log_dir=tmp, max_samples=concurrency,
        )  # fmt: skip
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    assert log.results is not None, log.error
    score = log.results.scores[0].metrics["accuracy"].value
    return {"wall": wall, "cpu": cpu, "score": score}


def _side(name: str, base_url: str, n: int, concurrency: int, python: str = sys.executable) -> dict[str, Any] | None:
    """One side in its own process: its figures as JSON on the last line (None when it could not run)."""
    cmd = [python, "-m", "benchmarks.bench_agent", "--side", name, base_url, str(n), str(concurrency)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        print(f"{name}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--samples", type=int, default=SAMPLES)
    parser.add_argument("--latency", type=float, default=LATENCY_S, help="server seconds per reply")
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY)
    parser.add_argument("--inspect-python", default=None, help="a Python with inspect_ai and openai installed")
    parser.add_argument("--serve", type=float, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--side", nargs=4, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv if argv is not None else [])
    if args.serve is not None:
        return serve(args.serve)
    if args.side is not None:
        name, base_url, n, concurrency = args.side[0], args.side[1], int(args.side[2]), int(args.side[3])
        for size in (WARM_UP, n):  # the warm-up run loads every module and first-use cost; the second is timed
            if name == "inspect":
                mine = _inspect(base_url, size, concurrency)
            else:
                mine = asyncio.run((_assay if name == "assay" else _plain)(base_url, size, concurrency))
        print(json.dumps(mine))
        return None
    n, latency, concurrency = args.samples, args.latency, args.concurrency
    calls = 2 * n
    bound = calls * latency / concurrency
    print(f"{n} samples, 2 model calls + 1 Python tool call each, {latency * 1000:.0f} ms per reply", end="")
    print(f", concurrency {concurrency}; latency bound {bound:.2f}s")
    sides = [("plain aiohttp", "plain", sys.executable), ("assay", "assay", sys.executable)]
    inspect_python = args.inspect_python
    if inspect_python is None:
        try:
            import inspect_ai  # noqa: F401

            inspect_python = sys.executable
        except ImportError:
            print("inspect_ai: not installed here; --inspect-python PATH names a Python that has it")
    if inspect_python is not None:
        sides.append(("inspect_ai", "inspect", inspect_python))
    with _server(latency) as server:
        for label, name, python in sides:
            figures = _side(name, server.base_url, n, concurrency, python)
            if figures is None:
                continue
            wall, cpu = figures["wall"], figures["cpu"]
            print(
                f"{label:>14}: {wall:6.2f}s, {bound / wall:4.0%} of the bound, "
                f"{cpu / calls * 1000:5.2f} ms client CPU per model call, score {figures['score']:.3f}"
            )
            if "agent" in figures:
                print(f"{'':>16}agent figures: {json.dumps(figures['agent'], sort_keys=True)}")


if __name__ == "__main__":
    main(sys.argv[1:])
