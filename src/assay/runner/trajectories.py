"""How the runner runs a task's trajectories: each model call goes through the request loop's cache, retries and
attempt limiter (a request is the whole history so far), so an agent sample is cached per turn and retried per
request as any other; the loop of each task is made once per run and its tools stopped at the end."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assay.agents.loop import AgentLoop, TurnFailed
from assay.models.base import Model, Request, Response
from assay.runner.outcomes import RequestOutcome, ToolsUnavailable
from assay.tools.base import ToolStartError

if TYPE_CHECKING:
    from assay.runner.room import Place
    from assay.runner.scheduler import Scheduler
    from assay.tasks import Task


def loop_for(scheduler: Scheduler, task: Task) -> AgentLoop:
    """The run's AgentLoop of ``task`` (made at its first sample)."""
    loops: dict[int, AgentLoop] = scheduler.__dict__.setdefault("_agent_loops", {})
    loop = loops.get(id(task))
    if loop is None:
        assert task.agent is not None
        limit = scheduler.config.max_response_chars  # tool results are capped as answers are
        loop = loops[id(task)] = AgentLoop(scheduler.model, task.agent.tools, task.agent.config, max_result_chars=limit)
    return loop


def scripted_turns(request: Request) -> list[str]:
    """The later user turns a row scripts (``turns:``: texts or ``{content: ...}``), after the rendered prompt."""
    turns = request.doc.get("turns") if isinstance(request.doc, dict) else None
    if not isinstance(turns, list):
        return []
    out = []
    for turn in turns:
        out.append(str(turn.get("content", turn.get("user", ""))) if isinstance(turn, dict) else str(turn))
    return out


async def run_trajectory(scheduler: Scheduler, task: Task, request: Request, place: Place | None) -> RequestOutcome:
    """One sample's trajectory; a model call that fails after its retries makes it an error sample. Tools that
    cannot start stop the run (:class:`ToolsUnavailable`): no sample is judged on a model offered no tools."""
    loop = loop_for(scheduler, task)

    async def turn(turn_request: Request) -> tuple[Response, bool]:
        outcome = await scheduler._answer(turn_request, place)
        if outcome.error is not None or outcome.response is None:
            raise TurnFailed(outcome.error or "no response")
        return outcome.response, outcome.cached

    user: Any = None
    spec = task.agent
    try:
        if spec is not None and spec.user is not None:
            from assay.agents.user import SimulatedUser

            user = SimulatedUser(user_model(scheduler, task), spec.user, dict(request.doc), request.sample_id)
        if spec is not None and spec.environment is not None:
            from assay.runner.environments import in_environment

            async def trajectory(env: Any) -> Response:
                return await loop.run(request, turn, scripted_turns(request), user=user, environment=env)

            response = await in_environment(slots_for(scheduler), task, request.doc, request.sample_id, trajectory)
        else:
            response = await loop.run(request, turn, scripted_turns(request), user=user)
    except TurnFailed as err:
        return RequestOutcome(None, f"model call failed mid-trajectory: {err}", False)
    except ToolStartError as err:
        raise ToolsUnavailable(
            f"the tools of task {task.name!r} could not start, so no sample ran (fix it, then resume the run): {err}"
        ) from None
    except Exception as err:  # a broken tool server or environment fails this sample, not the run
        from assay.environments.base import EnvironmentFailed
        from assay.sandbox.bwrap import SandboxUnavailable

        if isinstance(err, SandboxUnavailable):  # no sample of the task can run here: stop, resumable once fixed
            raise ToolsUnavailable(f"the environments of task {task.name!r} cannot be made here: {err}") from None
        if isinstance(err, EnvironmentFailed):
            return RequestOutcome(None, f"environment: {err}", False)
        return RequestOutcome(None, f"agent loop failed: {type(err).__name__}: {err}", False)
    return RequestOutcome(response, None, response.cached)


def slots_for(scheduler: Scheduler) -> Any:
    """The run's limit on environments alive at once (``--max-environments``), made at the first one."""
    from assay.runner.environments import EnvironmentSlots

    slots = scheduler.__dict__.get("_environment_slots")
    if slots is None:
        slots = scheduler.__dict__["_environment_slots"] = EnvironmentSlots(scheduler.config.max_environments)
    return slots


def user_model(scheduler: Scheduler, task: Task) -> Model:
    """The model playing ``task``'s simulated user (loaded at its first conversation)."""
    from assay.models.registry import load_model

    users: dict[int, Model] = scheduler.__dict__.setdefault("_agent_users", {})
    model = users.get(id(task))
    if model is None:
        assert task.agent is not None and task.agent.user is not None
        model = users[id(task)] = load_model(task.agent.user.model)
    return model


async def close_loops(scheduler: Scheduler) -> None:
    """Stop every task's run-long tools (MCP servers) and simulated users' clients when the run ends."""
    loops: dict[int, AgentLoop] = scheduler.__dict__.pop("_agent_loops", {})
    for loop in loops.values():
        await loop.aclose()
    users: dict[int, Model] = scheduler.__dict__.pop("_agent_users", {})
    for model in users.values():
        await model.aclose()
