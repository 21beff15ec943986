"""``assay feedback RUN_DIR``: the recurring themes of a run's failures, as text or JSON."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import click

from assay.errors import AssayError, ConfigError


def _model(spec: str, base_url: str | None, api_key_env: str | None) -> Any:
    from assay.models.registry import load_model

    overrides = {k: v for k, v in (("base_url", base_url), ("api_key_env", api_key_env)) if v is not None}
    return load_model(spec, **overrides)


async def _model_passes(
    report: Any,
    run_dir: Path,
    summarize_with: str | None,
    write_with: str | None,
    base_url: str | None,
    key: str | None,
) -> None:
    from assay.feedback.summarize import summarize_themes, write_example_feedback

    if write_with:
        writer = _model(write_with, base_url, key)
        try:
            await write_example_feedback(writer, report, run_dir)
        finally:
            await writer.aclose()
    if summarize_with:
        summarizer = _model(summarize_with, base_url, key)
        try:
            report.summary = await summarize_themes(summarizer, report)
            report.summary_model = str(getattr(summarizer, "name", summarize_with))
        finally:
            await summarizer.aclose()


@click.command("feedback")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--examples", type=click.IntRange(0, 100), default=3, show_default=True, help="Examples per theme.")
@click.option("--task", "tasks", multiple=True, help="Only this task (repeatable).")
@click.option("--no-errors", is_flag=True, help="Leave out error verdicts (the evaluator could not judge).")
@click.option("--summarize-with", metavar="MODEL", help="A model (e.g. openai:gpt-4o-mini) summarises the themes.")
@click.option("--write-with", metavar="MODEL", help="A model writes one concrete correction per failing example.")
@click.option("--base-url", help="Base URL of the OpenAI-compatible server of those models.")
@click.option("--api-key-env", help="Environment variable that holds their API key.")
def feedback_command(
    run_dir: Path,
    fmt: str,
    examples: int,
    tasks: tuple[str, ...],
    no_errors: bool,
    summarize_with: str | None,
    write_with: str | None,
    base_url: str | None,
    api_key_env: str | None,
) -> None:
    """Group the reasons and feedback of RUN_DIR's failing samples into recurring themes, most frequent first."""
    from assay.feedback.themes import build_report

    if (base_url or api_key_env) and not (summarize_with or write_with):
        raise click.UsageError("--base-url and --api-key-env need --summarize-with or --write-with")
    from assay.commands.usage import UsageFailure

    try:
        report = build_report(run_dir, examples=examples, include_errors=not no_errors, tasks=tasks or None)
    except AssayError as err:  # not a run folder, an unknown task: exit 2, as `assay report` says it
        raise UsageFailure(str(err)) from None
    try:
        if summarize_with or write_with:
            asyncio.run(_model_passes(report, run_dir, summarize_with, write_with, base_url, api_key_env))
    except ConfigError as err:  # a bad model spec or option: exit 2
        raise UsageFailure(str(err)) from None
    except AssayError as err:  # the model passes failed: exit 1
        raise click.ClickException(str(err)) from None
    if fmt == "json":
        click.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        click.echo(report.to_text(), nl=False)
