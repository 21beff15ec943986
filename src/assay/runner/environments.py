"""One sample's environment around its trajectory: made when the trajectory starts (at most ``--max-environments``
alive, the rest queued), its world built, the loop run in it, every environment evaluator's observation taken after
the loop, the workspace's final diff kept, and the environment removed whatever happened.

What a sample's environment did goes in ``response.metadata["environment"]``: ``observations`` (by evaluator key,
what ``env_check``/``env_files``/``state_match`` score from the record), ``diff`` (the workspace against how it
was when the agent started), ``created_at``/``create_s`` (from when it was asked for), ``stop_s`` (ending what
the agent left running), ``removed_at``/``remove_s`` (operations figures)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from assay.environments.base import Environment, EnvironmentEvaluator, EnvironmentFailed
from assay.models.base import Response
from assay.runner.envdiff import Before, capture, unified_diff

if TYPE_CHECKING:
    from assay.agents.taskspec import AgentSpec
    from assay.tasks import Task

DEFAULT_MAX_ENVIRONMENTS = 32  # alive at once; a run's --max-environments


class EnvironmentSlots:
    """How many environments may be alive at once in a run (queued, never failed, beyond it)."""

    def __init__(self, limit: int = DEFAULT_MAX_ENVIRONMENTS) -> None:
        if limit < 1:
            raise ValueError(f"max environments must be at least 1, got {limit}")
        self.limit = limit
        self._free = asyncio.Semaphore(limit)
        self.alive = 0
        self.peak = 0

    async def __aenter__(self) -> EnvironmentSlots:
        await self._free.acquire()
        self.alive += 1
        self.peak = max(self.peak, self.alive)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.alive -= 1
        self._free.release()


def environment_evaluators(task: Task) -> list[EnvironmentEvaluator]:
    """The task's metrics that look at the environment after the loop (each once, by observation key)."""
    seen: dict[str, EnvironmentEvaluator] = {}
    for metric in task.metrics:
        evaluator = metric.evaluator
        if isinstance(evaluator, EnvironmentEvaluator):
            seen.setdefault(evaluator.observation_key(), evaluator)
    return list(seen.values())


async def _make(spec: AgentSpec, task: Task, doc: Mapping[str, Any], sample_id: str) -> Environment:
    """The sample's environment: a sandboxed one, or a pure world's when nothing runs a program in it."""
    from assay.environments.spec import needs_sandbox
    from assay.tools.spec import needs_workspace

    env_spec = spec.environment
    assert env_spec is not None
    programs = needs_workspace(spec.tools) or any(e.runs_programs for e in environment_evaluators(task))
    if needs_sandbox(env_spec, programs=programs):
        from assay.environments.provider import get_provider

        return await get_provider().create(env_spec, doc, sample_id)
    from assay.environments.world import WorldEnvironment

    return WorldEnvironment(None)


async def _observe(task: Task, env: Environment, doc: Mapping[str, Any]) -> dict[str, Any]:
    """Every environment evaluator's observation; one that fails is recorded as its error (an error verdict)."""
    out: dict[str, Any] = {}
    for evaluator in environment_evaluators(task):
        key = evaluator.observation_key()
        try:
            out[key] = await evaluator.observe(env, doc)
        except Exception as err:
            out[key] = {"error": f"{type(err).__name__}: {err}"}
    return out


async def in_environment(
    slots: EnvironmentSlots,
    task: Task,
    doc: Mapping[str, Any],
    sample_id: str,
    trajectory: Callable[[Environment], Awaitable[Response]],
) -> Response:
    """Run ``trajectory`` in a new environment of ``task``'s spec and return its response with what the
    environment did; EnvironmentFailed when it could not be made, set up or checked within its wall time."""
    spec = task.agent
    assert spec is not None and spec.environment is not None
    limits = spec.environment.limits
    async with slots:
        created_at = time.time()
        t0 = time.perf_counter()
        env = await _make(spec, task, doc, sample_id)
        create_s = time.perf_counter() - t0
        facts: dict[str, Any] = {"kind": env.kind, "created_at": round(created_at, 6), "create_s": round(create_s, 6)}
        try:
            try:
                async with asyncio.timeout(max(limits.wall_s - create_s, 0.001)):
                    if spec.world is not None:
                        from assay.tools.world import make_world

                        env.state = make_world(spec.world, dict(doc))
                    # reading every file is slow work: off the event loop, which other samples' model calls share
                    before: Before = await asyncio.to_thread(capture, env)
                    response = await trajectory(env)
                    t1 = time.perf_counter()
                    await env.stop_programs()  # nothing the agent left running may change what the checks see
                    facts["stop_s"] = round(time.perf_counter() - t1, 6)
                    diff = await asyncio.to_thread(unified_diff, before, env)  # before a check writes its files
                    if diff:
                        facts["diff"] = diff
                    facts["observations"] = await _observe(task, env, doc)
            except TimeoutError:
                raise EnvironmentFailed(
                    f"the sample's environment reached its wall time limit of {limits.wall_s:g} s"
                ) from None
        finally:
            t1 = time.perf_counter()
            await env.close()
            facts["remove_s"] = round(time.perf_counter() - t1, 6)
            facts["removed_at"] = round(time.time(), 6)
    response.metadata["environment"] = facts
    return response
