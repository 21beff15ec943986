"""SWE-bench's rule for whether an instance is resolved, on the test outcomes ``env_check`` observed.

As SWE-bench's harness grades (``swebench/harness/grading.py``: ``test_passed``, ``test_failed``,
``get_eval_tests_report``, ``compute_fail_to_pass``, ``compute_pass_to_pass``, ``get_resolution_status``,
``get_eval_report``; read at SWE-bench/SWE-bench fdefc6a): a listed test succeeds when its status is PASSED or
XFAIL, and fails when it is FAILED, ERROR or missing from the status map; the instance is resolved (FULL) only when
every FAIL_TO_PASS and every PASS_TO_PASS test succeeds; PARTIAL (some but not all FAIL_TO_PASS, every PASS_TO_PASS)
and NO are both unresolved. Its pytest log parser reads ``-rA``'s short summary, where a skipped test is printed
without its node id (``SKIPPED [1] file:line: reason``) and an xpassed one as ``XPASS``, a status it does not know:
neither reaches the status map under its node id, so both count as missing, that is failed; here they count as
failed directly. An empty list scores 1 for its half, as ``compute_*`` do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

SUCCEEDS = frozenset({"passed", "xfailed"})  # SWE-bench's TestStatus.PASSED and TestStatus.XFAIL

FULL, PARTIAL, NO = "RESOLVED_FULL", "RESOLVED_PARTIAL", "RESOLVED_NO"  # SWE-bench's ResolvedStatus values


@dataclass(frozen=True)
class ListReport:
    """One list's tests split as SWE-bench splits them, each failure with the outcome seen (or ``missing``)."""

    success: tuple[str, ...]
    failure: tuple[tuple[str, str], ...]

    @property
    def rate(self) -> float:
        """The share of the list that succeeded (1.0 for an empty list, as SWE-bench's ``compute_*``)."""
        total = len(self.success) + len(self.failure)
        return 1.0 if total == 0 else len(self.success) / total


@dataclass(frozen=True)
class Report:
    """Both lists' reports and the resolution status."""

    fail_to_pass: ListReport
    pass_to_pass: ListReport

    @property
    def status(self) -> str:
        f2p, p2p = self.fail_to_pass.rate, self.pass_to_pass.rate
        if f2p == 1 and p2p == 1:
            return FULL
        return PARTIAL if 0 < f2p < 1 and p2p == 1 else NO

    @property
    def resolved(self) -> bool:
        return self.status == FULL

    @property
    def fraction_passing(self) -> float:
        """The share of all listed tests that succeeded (details only: the score is resolved or not)."""
        ok = len(self.fail_to_pass.success) + len(self.pass_to_pass.success)
        total = ok + len(self.fail_to_pass.failure) + len(self.pass_to_pass.failure)
        return 1.0 if total == 0 else ok / total


def split(tests: Sequence[str], outcomes: Mapping[str, str]) -> ListReport:
    """A list's tests that succeeded and those that failed, with the outcome each failure had."""
    success, failure = [], []
    for test in tests:
        outcome = outcomes.get(test, "missing")
        if outcome in SUCCEEDS:
            success.append(test)
        else:
            failure.append((test, outcome))
    return ListReport(tuple(success), tuple(failure))


def grade(outcomes: Mapping[str, str], fail_to_pass: Sequence[str], pass_to_pass: Sequence[str]) -> Report:
    """SWE-bench's report on one instance's outcomes."""
    return Report(split(fail_to_pass, outcomes), split(pass_to_pass, outcomes))
