"""Exceptions with messages that name what was wrong and where."""

from __future__ import annotations


class AssayError(Exception):
    """Base class for errors raised by assay."""


class ConfigError(AssayError, ValueError):
    """A configuration (evaluator options, task file, model settings) is invalid; the message names the key."""


class DataError(AssayError, ValueError):
    """A dataset or predictions file is malformed; the message names the file and line."""


class EvaluationInputError(AssayError, TypeError):
    """An evaluator was given an output it cannot judge (wrong type); becomes an error verdict."""
