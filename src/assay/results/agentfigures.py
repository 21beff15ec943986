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
    create_s: list[float] = field(default_factory=list)  # each environment's time to be made (and set up)
    remove_s: list[float] = field(default_factory=list)
    lifetimes: list[tuple[float, float]] = field(default_factory=list)  # (created_at, removed_at): the peak alive

    def merge(self, other: _TaskAgents) -> None:
        self.create_s += other.create_s
        self.remove_s += other.remove_s
        self.lifetimes += other.lifetimes
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
            env = (resp.get("metadata") or {}).get("environment")
            if env:
                t.create_s.append(float(env.get("create_s", 0.0)))
                t.remove_s.append(float(env.get("remove_s", 0.0)))
                if env.get("created_at") is not None and env.get("removed_at") is not None:
                    t.lifetimes.append((float(env["created_at"]), float(env["removed_at"])))

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
            **({"environments": environment_figures(t)} if t.create_s else {}),
        }

    def limit_stops(self) -> int:
        """Trajectories of every task stopped by a limit (scored failures)."""
        return sum(c for t in self.tasks.values() for r, c in t.stop_reasons.items() if r in LIMIT_STOPS)


def environment_figures(t: _TaskAgents) -> dict[str, Any]:
    """How the task's environments were made: their count, creation and removal times, and the most alive at once
    (from each one's creation and removal time, so a resumed run's earlier part counts too)."""
    events = sorted([(a, 1) for a, _ in t.lifetimes] + [(b, -1) for _, b in t.lifetimes], key=lambda e: (e[0], e[1]))
    alive = peak = 0
    for _, step in events:
        alive += step
        peak = max(peak, alive)
    made = sorted(t.create_s)
    return {
        "count": len(made),
        "mean_create_s": sum(made) / len(made),
        "p95_create_s": made[min(len(made) - 1, int(0.95 * len(made)))],
        "mean_remove_s": sum(t.remove_s) / len(t.remove_s),
        "peak_alive": peak,
    }
