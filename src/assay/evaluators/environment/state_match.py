"""``state_match``: a stateful world's final state against the row's expected state, field by field, with partial
credit and feedback naming each field that differs (tau-bench scores a world's final database)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from assay.environments.base import Environment
from assay.errors import ConfigError, EvaluationInputError
from assay.evaluators.base import Options
from assay.evaluators.environment.jsonable import to_json
from assay.evaluators.environment.observing import ObservingEvaluator
from assay.evaluators.environment.statediff import Rules, compare, ignore_pattern
from assay.evaluators.registry import register
from assay.verdict import Verdict

SHOWN = 20  # differences named in the feedback and details

NO_WORLD = (
    "the sample's environment has no stateful world (its state is None): state_match scores "
    '`environment: {python: "module:factory"}` worlds'
)


class StateMatchOptions(Options):
    expected: str = Field(
        "expected_state", description="the row key holding the expected final state (an object; may be partial)"
    )
    key_fields: list[str] = Field(
        default_factory=list,
        description="fields that identify a list's items (e.g. [id]): lists of objects having one are matched by "
        "it, and named by it in paths (orders.O2.status); other lists by position (items.0.sku)",
    )
    tolerance: float = Field(0.0, ge=0, description="numbers match when they differ by at most this much")
    ignore: list[str] = Field(
        default_factory=list,
        description="dotted paths left out of the comparison (* within a segment, ** any number of segments: "
        "orders.*.updated_at)",
    )
    allow_extra: bool = Field(
        True,
        description="keys of the state the expected state does not name are ignored (a partial expected state); "
        "false counts each as a difference. Extra list items always count",
    )


@register("state_match")
class StateMatch(ObservingEvaluator):
    """Compares a stateful world's final state (``environment: {python: "module:factory"}``) with the row's
    ``expected_state``: objects by key, lists by position or by an id-like key, numbers within a tolerance. The
    score is the share of expected fields that match (unexpected list items and, without ``allow_extra``, keys
    count against it); passed only when all match. The observation: ``{"state": <the state as JSON>}``."""

    Options = StateMatchOptions
    options: StateMatchOptions
    runs_programs = False  # reads the world's object only: a pure world needs no sandbox

    def setup(self) -> None:
        try:
            self._rules = Rules(
                key_fields=tuple(self.options.key_fields),
                tolerance=self.options.tolerance,
                ignore=tuple(ignore_pattern(p) for p in self.options.ignore),
                allow_extra=self.options.allow_extra,
            )
        except ValueError as exc:
            raise ConfigError(f"state_match: option ignore: {exc}") from None

    async def observe(self, env: Environment, doc: Mapping[str, Any]) -> Any:
        """The world's state after the loop, as JSON."""
        if env.state is None:
            return {"error": NO_WORLD}
        return {"state": to_json(env.state)}

    def score(self, observation: Any, doc: Mapping[str, Any], expected: Any) -> Verdict:
        """The share of expected fields the final state has."""
        if not isinstance(observation, Mapping) or "state" not in observation:
            raise EvaluationInputError(f"state_match: not a state_match observation: {observation!r:.150}")
        if self.options.expected not in doc:
            raise EvaluationInputError(f"state_match: the row has no {self.options.expected!r} to compare with")
        want = to_json(doc[self.options.expected])
        result = compare(want, observation["state"], self._rules)
        if result.total == 0 or want == {}:
            raise EvaluationInputError(f"state_match: the row's {self.options.expected!r} names no field to compare")
        shown = result.differences[:SHOWN]
        details: dict[str, Any] = {
            "matched": result.matched,
            "total": result.total,
            "extras": result.extras,
            "differences": [d.to_dict() for d in shown],
        }
        if not result.differences:
            return Verdict.pass_(1.0, details)
        more = f"\n… and {len(result.differences) - SHOWN} more" if len(result.differences) > SHOWN else ""
        lines = "\n".join(d.describe() for d in shown) + more
        count = f"{result.mismatched} of {result.total} fields differ"
        if result.extras:
            count += f", {result.extras} unexpected"
        return Verdict.partial(
            result.score,
            f"{count}: " + ", ".join(d.path or "(the state)" for d in shown[:5]) + (", …" if len(shown) > 5 else ""),
            threshold=1.0,
            feedback=f"The final state differs from the expected one:\n{lines}",
            details=details,
        )
