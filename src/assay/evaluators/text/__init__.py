"""Text evaluators, one module each: exact_match, fuzzy_match, contains, regex, token_f1.

The registry imports the one module a task names (start-up time: a task scored by exact_match does not build the
other four); the classes and helpers are importable from here too, their modules loading on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay.evaluators.text.common import DETAIL_CHARS, clip, cut, listing, references
from assay.lazyexports import lazy_exports

if TYPE_CHECKING:
    from assay.evaluators.text.contains import Contains, ContainsOptions
    from assay.evaluators.text.exact_match import ExactMatch, ExactMatchOptions
    from assay.evaluators.text.fuzzy_match import (
        FuzzyAlgorithm,
        FuzzyMatch,
        FuzzyMatchOptions,
        describe_differences,
    )
    from assay.evaluators.text.regex import Regex, RegexOptions
    from assay.evaluators.text.token_f1 import TokenF1, TokenF1Options, f1_array, f1_figures, token_overlap

# name -> module of this package that defines it
_LAZY: dict[str, str] = {
    "Contains": ".contains",
    "ContainsOptions": ".contains",
    "ExactMatch": ".exact_match",
    "ExactMatchOptions": ".exact_match",
    "FuzzyAlgorithm": ".fuzzy_match",
    "FuzzyMatch": ".fuzzy_match",
    "FuzzyMatchOptions": ".fuzzy_match",
    "describe_differences": ".fuzzy_match",
    "Regex": ".regex",
    "RegexOptions": ".regex",
    "TokenF1": ".token_f1",
    "TokenF1Options": ".token_f1",
    "f1_array": ".token_f1",
    "f1_figures": ".token_f1",
    "token_overlap": ".token_f1",
}

__all__ = [
    "DETAIL_CHARS",
    "Contains",
    "ContainsOptions",
    "ExactMatch",
    "ExactMatchOptions",
    "FuzzyAlgorithm",
    "FuzzyMatch",
    "FuzzyMatchOptions",
    "Regex",
    "RegexOptions",
    "TokenF1",
    "TokenF1Options",
    "clip",
    "cut",
    "describe_differences",
    "f1_array",
    "f1_figures",
    "listing",
    "references",
    "token_overlap",
]

__getattr__ = lazy_exports(__name__, _LAZY)
