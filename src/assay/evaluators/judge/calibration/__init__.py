"""Judges you can measure: human labels, agreement statistics, judge identity for calibration records."""
