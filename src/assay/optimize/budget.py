"""The budget of model calls, counted where the calls are made: every attempt (a retry too) of the task model in a
candidate run and of the optimiser model is written to ``calls.log`` before it is sent.

So the count is exact (retries are calls), a call in flight when the process is killed is counted by the resumed
session (its line was written before it went out), and no call is sent once the budget is spent: the attempt that
would pass it is refused instead.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

from assay.errors import ConfigError
from assay.models.base import Model, ModelError, Request, Response

CALLS = "calls.log"
_LINE = re.compile(r"(eval|propose) [0-9a-f]{6,64}(#[0-9]+)?")


class BudgetExhausted(Exception):
    """The next step would pass the budget of model calls (or of dollars)."""


class CallLog:
    """``calls.log``: one line per model call (``eval KEY`` or ``propose KEY#N``), flushed before the call is sent."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / CALLS
        self.earlier: Counter[str] = Counter()  # calls logged by earlier sessions, per step
        if self.path.is_file():
            self._read()
        self._file = self.path.open("a", encoding="utf-8")

    def _read(self) -> None:
        raw = self.path.read_bytes()
        lines = raw.split(b"\n")
        torn = lines.pop()  # after the last newline: empty, or a line cut by a kill before its call was sent
        for number, line in enumerate(lines, 1):
            text = line.decode("utf-8", errors="replace")
            if not _LINE.fullmatch(text):
                raise ConfigError(
                    f"{self.path}:{number}: not a call record ({text[:60]!r}); the file was edited or damaged. "
                    "Each line is 'eval KEY' or 'propose KEY#N', written before that model call was sent"
                )
            self.earlier[text] += 1
        if torn:
            with self.path.open("r+b") as fh:
                fh.truncate(len(raw) - len(torn))

    def write(self, step: str, *, durable: bool = False) -> None:
        """Log one call of ``step`` about to be sent (fsynced when ``durable``)."""
        self._file.write(step + "\n")
        self._file.flush()
        if durable:
            os.fsync(self._file.fileno())

    def close(self) -> None:
        """Close the file."""
        self._file.close()


class Budget:
    """The calls an optimisation may make (``limit``) and has made (``used``), and the optional dollar cap."""

    def __init__(self, limit: int, log: CallLog, usd_limit: float | None = None) -> None:
        self.limit = limit
        self.used = 0
        self.usd_limit = usd_limit
        self.spent_usd = 0.0
        self.log = log
        self._claimed: set[str] = set()  # steps whose earlier sessions' calls are counted already

    def check(self, calls: int) -> None:
        """Raise BudgetExhausted unless ``calls`` more fit the budget (and the dollar cap is not reached)."""
        if self.used + calls > self.limit:
            raise BudgetExhausted(f"{self.used} of {self.limit} model calls used; the next step needs {calls}")
        if self.usd_limit is not None and self.spent_usd >= self.usd_limit:
            raise BudgetExhausted(f"${self.spent_usd:.4f} of ${self.usd_limit:.4f} spent")

    def claim_earlier(self, step: str, *, charge: bool) -> int:
        """The calls earlier (killed) sessions made for an unfinished ``step``, counted once (and charged)."""
        if step in self._claimed:
            return 0
        self._claimed.add(step)
        calls = self.log.earlier.get(step, 0)
        if charge:
            self.used += calls
        return calls

    def call(self, step: str, *, charge: bool, durable: bool = False) -> None:
        """Count one call of ``step`` that is about to be sent; refused (BudgetExhausted) when the budget is spent."""
        if charge:
            if self.used + 1 > self.limit:
                raise BudgetExhausted(f"the budget of {self.limit} model calls is spent")
            self.used += 1
        self.log.write(step, durable=durable)

    def unreplayed(self, finished: set[str]) -> dict[str, int]:
        """Calls earlier sessions logged for steps this session neither replayed nor finished, per step; claimed."""
        left = {s: n for s, n in self.log.earlier.items() if s not in self._claimed and s not in finished}
        self._claimed.update(left)
        return left


class CountingModel(Model):
    """The task model of one candidate run, counting each attempt against the budget before it is sent; past the
    budget it refuses the attempt with a fatal error, which stops the run (its unsent samples stay pending)."""

    def __init__(self, inner: Model, budget: Budget, step: str, *, charge: bool) -> None:
        self.inner = inner
        self.budget = budget
        self.step = step
        self.charge = charge
        self.calls = 0
        self.exhausted = False
        self.name = inner.name
        self.provider = inner.provider  # type: ignore[misc]  # the wrapped model's, as the runner records it
        self.cacheable = inner.cacheable  # type: ignore[misc]

    async def generate(self, request: Request) -> Response:
        """Count the attempt, then send it."""
        try:
            self.budget.call(self.step, charge=self.charge)
        except BudgetExhausted as err:
            self.exhausted = True
            raise ModelError(f"not sent: {err}, so the optimisation stops here", fatal=True) from None
        self.calls += 1
        return await self.inner.generate(request)

    def identity(self) -> dict[str, Any]:
        """The wrapped model's (it keys the cache)."""
        return self.inner.identity()

    def describe(self) -> dict[str, Any]:
        """The wrapped model's (run.json records it)."""
        return self.inner.describe()

    def check_params(self, params: dict[str, Any], where: str) -> None:
        """The wrapped model's check."""
        self.inner.check_params(params, where)

    def check(self) -> None:
        """The wrapped model's check."""
        self.inner.check()

    async def aclose(self) -> None:
        """Close the wrapped model."""
        await self.inner.aclose()

    def __getattr__(self, name: str) -> Any:
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)  # e.g. timeout_s, which the runner reads
