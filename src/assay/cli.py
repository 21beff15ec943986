"""The ``assay`` command line. Subcommands live in ``assay.commands.*`` and load only when used."""

from __future__ import annotations

import gc
import importlib
from typing import Any

import click

# command name -> "module:attribute" of its click command
_COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("assay.commands.run:run_command", "Run a task against a model and write a run folder."),
    "score": (
        "assay.commands.score:score_command",
        "Re-score a run's logged responses, without calling a model.",
    ),
    "report": (
        "assay.commands.report:report_command",
        "Show a run's results again, as a table, JUnit or HTML.",
    ),
    "compare": (
        "assay.commands.report:compare_command",
        "Compare two runs with paired tests on shared samples.",
    ),
    "audit": (
        "assay.commands.audit:audit_command",
        "Score degenerate answers through tasks' scoring, with no model: can they be gamed?",
    ),
    "plan": (
        "assay.commands.plan:plan_command",
        "Plan the samples, repeats and cost a difference needs, from a pilot run.",
    ),
    "feedback": ("assay.commands.feedback:feedback_command", "Group failing samples' reasons into themes."),
    "view": ("assay.commands.view:view_command", "Serve the HTML report of runs on 127.0.0.1."),
    "judge": ("assay.commands.judge:judge_group", "Import people's labels and calibrate a run's judges."),
    "cache": ("assay.commands.cache:cache_group", "Inspect or clear the response cache."),
    "evaluators": ("assay.commands.reference:evaluators_group", "List the evaluators, or show one's options."),
    "optimize": (
        "assay.commands.optimize:optimize_command",
        "Improve a task's prompt, few-shot demos or settings within a budget.",
    ),
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported only when invoked, so ``assay --help`` stays fast."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = _COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module_name, attr = entry[0].split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as err:
            if err.name != module_name:
                raise
            return None
        command: click.Command = getattr(module, attr)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, _COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="assay")
def main(**_: Any) -> None:
    """Evaluate language models and agents: run tasks, score outputs, report and compare results."""


def entry() -> None:
    """The ``assay`` program (console script and ``python -m assay``): :func:`main`, then every object left is
    frozen out of the interpreter's last garbage collections. They are freed as the process ends all the same;
    collecting them first took 50-60 ms of each command's exit. Tests and other processes that go on call
    :func:`main`."""
    try:
        main()
    finally:
        gc.freeze()
