"""Tools the agent tests name in their task files (``tools: [{python: "agent_tools:add"}]``)."""

from __future__ import annotations

import asyncio
import time

from assay.environments import Environment


async def add(x: int, y: int) -> int:
    """Add two numbers.

    Args:
        x: First number to add.
        y: Second number to add.

    Returns:
        The sum of the two numbers.
    """
    return x + y


def multiply(x: float, y: float = 1.0) -> float:
    """Multiply two numbers (a sync tool).

    Args:
        x: The first factor.
        y: The second factor.
    """
    return x * y


def explode(reason: str) -> str:
    """A tool that always raises.

    Args:
        reason: What to say.
    """
    raise RuntimeError(f"boom: {reason}")


async def hang(seconds: float) -> str:
    """A tool that takes too long.

    Args:
        seconds: How long to sleep.
    """
    await asyncio.sleep(seconds)
    return "woke up"


CONCURRENT: list[tuple[float, float]] = []


async def slow_add(x: int, y: int) -> int:
    """Add slowly, recording when it ran (to show parallel calls overlap).

    Args:
        x: First number.
        y: Second number.
    """
    t0 = time.perf_counter()
    await asyncio.sleep(0.3)
    CONCURRENT.append((t0, time.perf_counter()))
    return x + y


def log_call(tag: str) -> str:
    """Append ``tag`` to the file named by $AGENT_TOOL_LOG (to count tool runs across processes).

    Args:
        tag: What to write.
    """
    import os

    with open(os.environ["AGENT_TOOL_LOG"], "a") as fh:
        fh.write(tag + "\n")
    return f"logged {tag}"


def echo(text: str) -> str:
    """Return the text given (a tool whose result is whatever the model wrote).

    Args:
        text: What to return.
    """
    return text


def block(reason: str) -> str:
    """A sync tool that never returns (a blocking call with no time-out of its own).

    Args:
        reason: Ignored.
    """
    import threading

    threading.Event().wait()
    return "unreachable"


def huge(n: int) -> str:
    """Return ``n`` characters (a tool whose result is far larger than any model should read).

    Args:
        n: How many characters.
    """
    return "x" * (n - 3) + "END"


async def count_lines(path: str, environment: Environment) -> int:
    """Count the lines of a workspace file.

    Args:
        path: the file, relative to the workspace.
    """
    return len(environment.read_file(path).decode().splitlines())
