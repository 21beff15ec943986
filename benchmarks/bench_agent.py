"""The agent tool loop at its defaults against a scripted server in its own process (issue 26).

Each sample is a two-request trajectory: the model asks for the Python tool ``add(x, y)``, the loop runs it and
sends the result back, the model answers with it. 1,000 samples, 50 ms server latency, ``assay run``'s default
concurrency (32), nothing tuned. Printed: samples/s and the ratio to the latency bound (requests × latency ÷
concurrency is the fastest any client could finish), the client's CPU per sample, and the same figures for the
plain baseline, a bare aiohttp loop doing the same two requests and the tool call per sample with the same
concurrency (no scoring, no records, no retries).

    python -m benchmarks agent
    python -m benchmarks.bench_agent --samples 2000 --latency 0.02
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SAMPLES = 1000
LATENCY_S = 0.05
CONCURRENCY = 32  # assay run's default (RunSettings.concurrency)


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


class ServerProcess:
    """The scripted server in its own process, so its CPU is not counted as the client's."""

    def __init__(self, latency_s: float) -> None:
        cmd = [sys.executable, "-m", "benchmarks.bench_agent", "--serve", str(latency_s)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def _rows(n: int) -> list[dict[str, Any]]:
    return [
        {"id": f"q{i}", "input": f"What is {i} + {2 * i + 1}?", "target": f"The sum is {3 * i + 1}."} for i in range(n)
    ]


async def _assay(base_url: str, n: int, out: Path) -> tuple[float, float, dict[str, Any]]:
    """assay.arun_outcome on the agent task at its defaults: wall seconds, client CPU seconds, the agent figures."""
    from assay.api import arun_outcome

    task = {
        "name": "agent",
        "dataset": {"rows": _rows(n)},
        "template": "{{ input }}",
        "tools": [{"python": "benchmarks.bench_agent:add"}],
        "evaluators": [{"name": "exact_match"}],
    }
    model = {"provider": "openai", "model": "assay-test", "base_url": base_url}
    cpu0, wall0 = time.process_time(), time.perf_counter()
    outcome = await arun_outcome(task, model, output_dir=out, cache=False, progress=False)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    results = json.loads((outcome.run_dir / "results.json").read_text())
    figures = results["results"]["agent"]
    agent = results["assay"]["tasks"]["agent"].get("agent", {})
    assert figures["exact_match,none"] == 1.0, figures  # every trajectory ran the tool and answered with its result
    return wall, cpu, agent


async def _plain(base_url: str, n: int, concurrency: int) -> tuple[float, float]:
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
        return time.perf_counter() - wall0, time.process_time() - cpu0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=SAMPLES)
    parser.add_argument("--latency", type=float, default=LATENCY_S, help="server seconds per reply")
    parser.add_argument("--serve", type=float, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv if argv is not None else [])
    if args.serve is not None:
        return serve(args.serve)
    n, latency = args.samples, args.latency
    bound = 2 * n * latency / CONCURRENCY
    print(f"{n} samples, 2 requests + 1 Python tool call each, {latency * 1000:.0f} ms per reply", end="")
    print(f", concurrency {CONCURRENCY}")
    print(f"latency bound: {bound:.2f}s ({n / bound:.0f} samples/s)")
    with ServerProcess(latency) as server, tempfile.TemporaryDirectory() as tmp:
        plain_wall, plain_cpu = asyncio.run(_plain(server.base_url, n, CONCURRENCY))
        wall, cpu, agent = asyncio.run(_assay(server.base_url, n, Path(tmp) / "runs"))
    print(f"plain aiohttp loop: {plain_wall:.2f}s, {n / plain_wall:.0f} samples/s ({bound / plain_wall:.0%} of bound), "
          f"{plain_cpu / n * 1000:.2f} ms client CPU per sample")  # fmt: skip
    print(f"assay at defaults:  {wall:.2f}s, {n / wall:.0f} samples/s ({bound / wall:.0%} of the bound), "
          f"{cpu / n * 1000:.2f} ms client CPU per sample (run start-up, scoring and records included)")  # fmt: skip
    print(f"assay ÷ plain: {wall / plain_wall:.2f}× the wall time, {cpu / plain_cpu:.2f}× the client CPU")
    print(f"agent figures: {json.dumps(agent, sort_keys=True)}")


if __name__ == "__main__":
    main(sys.argv[1:])
