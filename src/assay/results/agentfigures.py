"""Agent figures of a run, per task: trajectories, mean model calls (turns) and tool calls, tool errors, why they
stopped; and the run's count of trajectories stopped by a limit. Only responses with a ``stop_reason`` count."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

LIMIT_STOPS = frozenset({"max_turns", "max_tool_calls", "token_budget", "time_limit"})


@dataclass
class _TaskAgents:
    trajectories: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    stop_reasons: Counter[str] = field(default_factory=Counter)

    def merge(self, other: _TaskAgents) -> None:
        self.trajectories += other.trajectories
        self.model_calls += other.model_calls
        self.tool_calls += other.tool_calls
        self.tool_errors += other.tool_errors
        self.stop_reasons.update(other.stop_reasons)


class AgentTally:
    """Summed one record dict at a time (records without trajectories cost a key lookup per response)."""

    def __init__(self) -> None:
        self.tasks: dict[str, _TaskAgents] = {}

    def observe(self, rec: Mapping[str, Any]) -> None:
        for resp in rec.get("responses") or ():
            if not resp:
                continue
            stop = resp.get("stop_reason")
            if stop is None:
                continue
            t = self.tasks.get(rec["task"])
            if t is None:
                t = self.tasks[rec["task"]] = _TaskAgents()
            t.trajectories += 1
            t.stop_reasons[str(stop)] += 1
            agent = (resp.get("metadata") or {}).get("agent") or {}
            calls = resp.get("tool_calls") or ()
            t.model_calls += int(agent.get("model_calls", 0))
            t.tool_calls += int(agent.get("tool_calls", len(calls)))
            t.tool_errors += int(agent.get("tool_errors", sum(1 for c in calls if c and c.get("error"))))

    def merge(self, later: AgentTally) -> None:
        for name, t in later.tasks.items():
            self.tasks.setdefault(name, _TaskAgents()).merge(t)

    def task_figures(self, task: str) -> dict[str, Any] | None:
        """The figures of one task (None when it ran no trajectories)."""
        t = self.tasks.get(task)
        if t is None or not t.trajectories:
            return None
        n = t.trajectories
        return {
            "trajectories": n,
            "mean_turns": t.model_calls / n,
            "mean_tool_calls": t.tool_calls / n,
            "tool_errors": t.tool_errors,
            "stop_reasons": dict(sorted(t.stop_reasons.items())),
            "limit_stops": sum(c for r, c in t.stop_reasons.items() if r in LIMIT_STOPS),
        }

    def limit_stops(self) -> int:
        return sum(c for t in self.tasks.values() for r, c in t.stop_reasons.items() if r in LIMIT_STOPS)
