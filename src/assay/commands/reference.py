"""``assay evaluators``: the reference of every evaluator, printed from the same code as the docs site's pages."""

from __future__ import annotations

import click

from assay.errors import ConfigError


@click.group("evaluators", invoke_without_command=True)
@click.pass_context
def evaluators_group(ctx: click.Context) -> None:
    """List the evaluators a task can name, with what each checks.

    `assay evaluators show NAME` prints one evaluator's options (names, types, defaults, meanings), the text of its
    reference page in the docs.
    """
    if ctx.invoked_subcommand is not None:
        return
    from rich.console import Console
    from rich.table import Table

    from assay.reference import catalog

    table = Table("evaluator", "what it checks", box=None, show_edge=False)
    for name in catalog.evaluator_names():
        try:
            summary = catalog.one_line(catalog.evaluator_entry(name).summary)
        except (ConfigError, ImportError) as err:  # an entry point that fails to load, an extra not installed
            summary = f"(cannot be loaded here: {err})"
        table.add_row(name, summary)
    Console().print(table)


@evaluators_group.command("show")
@click.argument("name")
@click.option("--markdown", "as_markdown", is_flag=True, help="Print the page's Markdown source instead.")
def show_command(name: str, as_markdown: bool) -> None:
    """Print one evaluator's reference: what it checks, an example, and every option."""
    from assay.reference import catalog

    try:
        entry = catalog.evaluator_entry(name)
    except ConfigError as err:
        raise click.UsageError(str(err)) from None
    if as_markdown:
        click.echo(entry.markdown(), nl=False)
        return
    from rich.console import Console
    from rich.markdown import Markdown

    Console().print(Markdown(entry.markdown()))
