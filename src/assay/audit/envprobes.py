"""Trajectories that should never earn credit in an environment task: the agent does nothing, or deletes every file
of its workspace. Each runs in a real environment of the task (made, observed by the task's environment evaluators
and removed as in a run, :func:`assay.runner.environments.in_environment`), with no model, and is scored by the
task's real scoring. A check that passes an untouched repository, or a world whose expected state is where it
started, is a finding."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.environments.base import Environment, EnvironmentEvaluator
from assay.models.base import Response

if TYPE_CHECKING:
    from assay.audit.battery import _Tally
    from assay.tasks import Sample, Task

MAX_SAMPLES = 100  # environments made per probe by default (each is a sandbox: far costlier than a text probe)
ALIVE = 8  # environments alive at once during the audit


@dataclass(frozen=True)
class EnvProbe:
    """A trajectory with no model: what it does to the environment before the checks look."""

    name: str
    about: str
    act: Callable[[Environment], Awaitable[None]]
    needs_workspace: bool


async def _nothing(env: Environment) -> None:
    """Leave the environment as it was made."""


async def _delete_all(env: Environment) -> None:
    """Remove every file and folder of the workspace."""
    await env.exec(["bash", "-c", "find . -mindepth 1 -delete"], timeout_s=60)


ENV_PROBES = (
    EnvProbe("env:nothing", "the agent changes nothing", _nothing, needs_workspace=False),
    EnvProbe("env:delete-all", "the agent deletes every file of its workspace", _delete_all, needs_workspace=True),
)


def environment_metrics(task: Task) -> list[Any]:
    """The task's metrics scored from its environment (empty for a task without one)."""
    if task.agent is None or task.agent.environment is None:
        return []
    return [m for m in task.metrics if isinstance(m.evaluator, EnvironmentEvaluator)]


async def _trajectory_records(
    task: Task, samples: Sequence[Sample], prompts: Sequence[str], probe: EnvProbe
) -> tuple[list[Sample], list[Any], list[str]]:
    """Each sample's filter records after ``probe`` acted in its own environment; samples whose environment could
    not be made are left out, with why."""
    from assay.environments.base import EnvironmentFailed
    from assay.runner.environments import EnvironmentSlots, in_environment
    from assay.runner.offline import Answered, score_chunk

    slots = EnvironmentSlots(ALIVE)

    async def one(sample: Sample) -> Response | str:
        async def trajectory(env: Environment) -> Response:
            await probe.act(env)
            return Response(text="", stop_reason="answer")

        try:
            return await in_environment(slots, task, sample.doc, sample.id, trajectory)
        except EnvironmentFailed as err:
            return f"{sample.id}: {err}"

    outcomes = await asyncio.gather(*(one(s) for s in samples))
    kept = [(s, o, p) for s, o, p in zip(samples, outcomes, prompts, strict=True) if isinstance(o, Response)]
    failed = [o for o in outcomes if isinstance(o, str)]
    answered = [Answered(s, [o] * task.repeats, [None] * task.repeats) for s, o, _ in kept]
    records = await score_chunk(task, answered, [p for _, _, p in kept]) if answered else []
    return [s for s, _, _ in kept], records, failed


async def environment_battery(
    task: Task,
    samples: Sequence[Sample],
    prompts: Sequence[str],
    tally: Callable[[Any, str, str], _Tally],
    verdict_of: Callable[[dict[str, Any], str, str], dict[str, Any] | None],
) -> list[str]:
    """Score every environment probe into the battery's tallies (``tally(probe, filter, metric)``); the reasons
    environments could not be made (at most a few)."""
    metrics = environment_metrics(task)
    if not metrics:
        return []
    world_only = task.agent is not None and task.agent.world is not None and _pure_world(task)
    problems: list[str] = []
    for probe in ENV_PROBES:
        if probe.needs_workspace and world_only:
            continue
        kept, records, failed = await _trajectory_records(task, samples, prompts, probe)
        problems += failed[:3]
        for sample, record in zip(kept, records, strict=True):
            for pipeline in task.pipelines:
                for metric in metrics:
                    verdict = verdict_of(record, pipeline.name, metric.name)
                    if verdict is None:
                        continue
                    counted = tally(probe, pipeline.name, metric.name)
                    counted.add(sample, "", verdict, False)
                    example = counted.fig.example
                    if example is not None and example["sample_id"] == sample.id and not example["reason"]:
                        example["reason"] = str(verdict.get("reason") or "passed")[:200]
    return problems


def _pure_world(task: Task) -> bool:
    """A world with no workspace (nothing to delete)."""
    from assay.environments.spec import needs_sandbox
    from assay.tools.spec import needs_workspace

    agent = task.agent
    assert agent is not None and agent.environment is not None
    programs = needs_workspace(agent.tools) or any(e.evaluator.runs_programs for e in environment_metrics(task))
    return not needs_sandbox(agent.environment, programs=programs)
