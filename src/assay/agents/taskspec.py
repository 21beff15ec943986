"""A task's agent: its runnable tools and ``agent:`` limits, read from the task config (None for a plain task)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.agents.config import AgentConfig
from assay.agents.user import UserConfig
from assay.tools.base import ToolSet

if TYPE_CHECKING:
    from assay.environments.base import EnvironmentSpec
    from assay.tasks.config import TaskConfig
    from assay.tasks.taskfile import ConfigContext


@dataclass
class AgentSpec:
    """What turns a task's requests into trajectories: the tools and the loop's limits."""

    config: AgentConfig
    tools: ToolSet
    user: UserConfig | None = None  # a simulated user talks with the model under test
    environment: EnvironmentSpec | None = None  # one per sample, made before the loop and removed after its checks
    world: Any = None  # the stateful world's factory (``environment.python``), which makes each sample's state


def _pydantic_message(err: Exception) -> str:
    errors = getattr(err, "errors", None)
    if callable(errors):
        first = errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        return f"{where}: {first.get('msg')}" if where else str(first.get("msg"))
    return str(err)


def build_agent(cfg: TaskConfig, ctx: ConfigContext) -> AgentSpec | None:
    """The task's AgentSpec when it has runnable tools or an ``agent:`` key; None otherwise (a plain request)."""
    from assay.tools.spec import is_runnable

    tools: list[Any] = list(cfg.tools or ())
    runnable = any(isinstance(t, str) or is_runnable(t) for t in tools)
    if cfg.agent is None and cfg.user is None and cfg.environment is None and not runnable:
        return None
    try:
        config = AgentConfig.model_validate(cfg.agent or {})
    except Exception as err:
        raise ctx.error(("agent",), f"{_pydantic_message(err)} (keys: {sorted(AgentConfig.model_fields)})") from None
    user = None
    if cfg.user is not None:
        try:
            user = UserConfig.model_validate(cfg.user)
        except Exception as err:
            raise ctx.error(("user",), f"{_pydantic_message(err)} (keys: {sorted(UserConfig.model_fields)})") from None
    from assay.tools.spec import parse_tools

    toolset = parse_tools(tools, base_dir=ctx.base_dir, fail=ctx.error)
    environment, world = _environment(cfg, ctx, toolset)
    return AgentSpec(config, toolset, user, environment, world)


def _environment(cfg: TaskConfig, ctx: ConfigContext, toolset: ToolSet) -> tuple[EnvironmentSpec | None, Any]:
    """The task's environment spec and its world's factory; tools that need an environment get an empty one."""
    from assay.tools.spec import needs_environment

    if cfg.environment is None:
        if needs_environment(toolset):
            from assay.environments.base import EnvironmentSpec

            return EnvironmentSpec(base_dir=str(ctx.base_dir) if ctx.base_dir is not None else None), None
        return None, None
    from assay.environments.spec import parse_environment

    try:
        spec = parse_environment(cfg.environment, ctx.base_dir)
    except Exception as err:
        raise ctx.error(("environment",), _pydantic_message(err)) from None
    if spec.world is None:
        return spec, None
    import sys

    from assay.tools.world import resolve_factory, world_tools

    if ctx.base_dir is not None and str(ctx.base_dir) not in sys.path:
        sys.path.append(str(ctx.base_dir))  # my_world.py beside the task file, found as tool modules are
    try:
        factory = resolve_factory(spec.world)
        tools = world_tools(factory)
    except Exception as err:
        raise ctx.error(("environment", "python"), str(err)) from None
    taken = sorted(set(toolset.by_name) & {t.name for t in tools})
    if taken:
        raise ctx.error(("environment", "python"), f"the world's tool {taken[0]!r} has the name of a task tool")
    toolset.tools.extend(tools)
    toolset.by_name.update({t.name: t for t in tools})
    return spec, factory
