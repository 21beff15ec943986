"""The error of a command asked for something it cannot do (not a run folder, an unknown metric): exit code 2."""

from __future__ import annotations

import click


class UsageFailure(click.ClickException):
    """A problem with what was asked (not a run folder, unknown metric): exit code 2, like click's usage errors."""

    exit_code = 2
