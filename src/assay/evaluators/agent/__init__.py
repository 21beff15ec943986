"""Agent evaluators: ``tool_usage`` judges the tool calls an agent made (reading calls, argument comparators,
match modes and named checks each in their own module)."""

from assay.evaluators.agent.arguments import Comparator, Comparators, argument_diffs, build_comparator, values_equal
from assay.evaluators.agent.calls import Call, parse_arguments, read_calls
from assay.evaluators.agent.checks import Check, run_checks
from assay.evaluators.agent.matching import MatchResult, match_calls
from assay.evaluators.agent.options import ToolUsageOptions, expectation_of, options_from_expected
from assay.evaluators.agent.tool_usage import ToolUsage

__all__ = [
    "Call",
    "Check",
    "Comparator",
    "Comparators",
    "MatchResult",
    "ToolUsage",
    "ToolUsageOptions",
    "argument_diffs",
    "build_comparator",
    "expectation_of",
    "match_calls",
    "options_from_expected",
    "parse_arguments",
    "read_calls",
    "run_checks",
    "values_equal",
]
