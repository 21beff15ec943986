"""``--budget-usd``: a run that may not spend more than a stated sum, and fails closed when spend cannot be measured.

Before the run starts, its cost is estimated from the pending requests (input tokens at about four characters a
token of the rendered prompt, output tokens at the request's ``max_tokens``, or :data:`OUTPUT_GUESS` without one,
times the repeats, at ``--prices``); a run whose estimate is above the budget is refused before anything is written.
While it runs, every finished sample's measured spend (the model's requests not served from the cache, and the
judges' calls) is added up, and the run stops once it reaches the budget. A request whose provider reported no usage
is not free but unknown: the run stops at once rather than spend what it cannot count. The spend is recorded in
``run.json`` (``config.budget``); a stopped run resumes with a larger ``--budget-usd``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from assay.errors import ConfigError
from assay.results.operational import judge_calls
from assay.runner.outcomes import BudgetSpent, BudgetUnmeasured

if TYPE_CHECKING:
    from assay.record import SampleRecord
    from assay.tasks import Sample, Task

OUTPUT_GUESS = 1024  # output tokens assumed for a request with no max_tokens (an estimate must bound the output)
CHARS_PER_TOKEN = 4
ESTIMATE_FROM = 200  # prompts rendered for the estimate; the rest extrapolated from their mean


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def _tokens(usage: Any) -> tuple[int, int]:
    tin, tout = _field(usage, "input_tokens"), _field(usage, "output_tokens")
    return (int(tin) if isinstance(tin, int | float) else 0), (int(tout) if isinstance(tout, int | float) else 0)


class Budget:
    """The run's spend against ``limit_usd`` at ``prices`` (US dollars per million tokens, by model name)."""

    def __init__(
        self, limit_usd: float, prices: Mapping[str, Mapping[str, float]] | None, model: str, judges: Sequence[str]
    ) -> None:
        if not limit_usd > 0 or not math.isfinite(limit_usd):
            raise ConfigError(f"--budget-usd: expected a positive sum, got {limit_usd}")
        table = dict(prices or {})
        missing = [name for name in dict.fromkeys([model, *judges]) if name not in table]
        if missing:
            raise ConfigError(
                f"--budget-usd: no price for {', '.join(missing)}; give --prices with every model the run calls "
                "(a budget cannot be kept on spend it cannot price)"
            )
        self.limit = limit_usd
        self.prices = table
        self.model = model
        self.spent = 0.0
        self.requests = 0
        self.unreported = 0
        self.estimate: float | None = None

    def _cost(self, model: str, tin: int, tout: int) -> float:
        price = self.prices.get(model)
        if price is None:
            raise BudgetUnmeasured(f"--budget-usd: a call to {model!r}, which has no price: its spend is unknown")
        return (tin * float(price.get("input", 0.0)) + tout * float(price.get("output", 0.0))) / 1e6

    def estimate_run(self, work: Iterable[tuple[Task, Sample]]) -> float:
        """The pending requests' estimated cost (see the module docstring); refuses a run estimated above the
        budget."""
        items = list(work)
        if not items:
            self.estimate = 0.0
            return 0.0
        step = max(len(items) // ESTIMATE_FROM, 1)
        shown = items[::step][:ESTIMATE_FROM]
        total = 0.0
        for task, sample in shown:
            for repeat in range(task.repeats):
                request = task.build_request(sample, repeat)
                chars = sum(len(str(m.get("content") or "")) for m in request.messages)
                out = request.params.get("max_tokens") or request.params.get("max_completion_tokens") or OUTPUT_GUESS
                total += self._cost(self.model, math.ceil(chars / CHARS_PER_TOKEN), int(out))
        self.estimate = total / len(shown) * len(items)
        if self.estimate > self.limit:
            raise ConfigError(
                f"--budget-usd {self.limit:g}: the run is estimated at ${self.estimate:,.2f} for {len(items):,} "
                f"samples (prompts at {CHARS_PER_TOKEN} characters a token, answers at max_tokens or {OUTPUT_GUESS}, "
                "judges not counted); raise the budget, or --limit the samples"
            )
        return self.estimate

    def observe(self, record: SampleRecord | Mapping[str, Any]) -> None:
        """Add one finished sample's spend; raises :class:`BudgetUnmeasured` on usage nobody reported and
        :class:`BudgetSpent` once the budget is reached."""
        for response in _field(record, "responses") or ():
            if response is None or _field(response, "cached"):
                continue
            self.requests += 1
            tin, tout = _tokens(_field(response, "usage"))
            if tin == 0 and tout == 0:
                self.unreported += 1
                raise BudgetUnmeasured(
                    f"--budget-usd: the model did not report the usage of sample {_field(record, 'sample_id')!r}: the "
                    f"spend cannot be measured (${self.spent:,.4f} measured so far); the run stops rather than spend "
                    "what it cannot count"
                )
            self.spent += self._cost(self.model, tin, tout)
        for fr in (_field(record, "filters") or {}).values():
            for verdicts in (_field(fr, "verdicts") or {}).values():
                for verdict in verdicts:
                    self._judge_calls(verdict)
        if self.spent >= self.limit:
            raise BudgetSpent(
                f"--budget-usd {self.limit:g} reached: ${self.spent:,.4f} spent on {self.requests} request(s); "
                "resume with a larger --budget-usd to go on"
            )

    def _judge_calls(self, verdict: Mapping[str, Any]) -> None:
        for call in judge_calls(verdict):  # the calls as the operational figures count them
            if call.get("cached"):
                continue
            tin, tout = _tokens(call.get("usage") or {})
            if tin == 0 and tout == 0:
                if call.get("error"):
                    continue  # a call that failed before the judge answered
                self.unreported += 1
                raise BudgetUnmeasured("--budget-usd: a judge call reported no usage: the spend cannot be measured")
            self.spent += self._cost(str(call.get("model") or "judge"), tin, tout)

    def summary(self) -> dict[str, Any]:
        """What ``run.json`` records of the budget."""
        return {
            "limit_usd": self.limit,
            "spent_usd": self.spent,
            "estimate_usd": self.estimate,
            "requests": self.requests,
            "unreported": self.unreported,
        }
