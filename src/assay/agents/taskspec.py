"""A task's agent: its runnable tools and ``agent:`` limits, read from the task config (None for a plain task)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.agents.config import AgentConfig
from assay.agents.user import UserConfig
from assay.tools.base import ToolSet

if TYPE_CHECKING:
    from assay.tasks.config import TaskConfig
    from assay.tasks.taskfile import ConfigContext


@dataclass
class AgentSpec:
    """What turns a task's requests into trajectories: the tools and the loop's limits."""

    config: AgentConfig
    tools: ToolSet
    user: UserConfig | None = None  # a simulated user talks with the model under test


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
    if cfg.agent is None and cfg.user is None and not any(is_runnable(t) for t in tools):
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

    return AgentSpec(config, parse_tools(tools, base_dir=ctx.base_dir, fail=ctx.error), user)
