"""Text evaluators, one module each: exact_match, fuzzy_match, contains, regex, token_f1.

Importing this package registers all five (the registry imports it on first use of any of them).
"""

from assay.evaluators.text.common import DETAIL_CHARS, clip, cut, listing, references
from assay.evaluators.text.contains import Contains, ContainsOptions
from assay.evaluators.text.exact_match import ExactMatch, ExactMatchOptions
from assay.evaluators.text.fuzzy_match import FuzzyAlgorithm, FuzzyMatch, FuzzyMatchOptions, describe_differences
from assay.evaluators.text.regex import Regex, RegexOptions
from assay.evaluators.text.token_f1 import TokenF1, TokenF1Options, f1_array, f1_figures, token_overlap

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
