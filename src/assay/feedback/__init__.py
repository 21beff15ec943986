"""Feedback: model-written corrections for failing samples, and the recurring themes of a run's failures."""

from assay.feedback.generate import FeedbackError, with_model_feedback, write_feedback
from assay.feedback.themes import Theme, ThemeGrouper, ThemeReport, build_report, group_failures, reason_pattern

__all__ = [
    "FeedbackError",
    "Theme",
    "ThemeGrouper",
    "ThemeReport",
    "build_report",
    "group_failures",
    "reason_pattern",
    "with_model_feedback",
    "write_feedback",
]
