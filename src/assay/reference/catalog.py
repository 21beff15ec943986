"""The reference entries of everything a task file or the command line can name: evaluators, filter steps,
model kinds and commands, each read from the code that implements it."""

from __future__ import annotations

import inspect

import click

from assay.errors import ConfigError
from assay.reference.entries import Entry, OptionDoc
from assay.reference.options import pydantic_options, signature_options


def _split_doc(obj: object) -> tuple[str, str]:
    """(first line, the rest) of an object's docstring."""
    doc = inspect.cleandoc(inspect.getdoc(obj) or "")
    first, _, rest = doc.partition("\n")
    return first.strip(), rest.strip()


def one_line(summary: str) -> str:
    """The first sentence of a summary, for index tables and the terminal list."""
    head, sep, _ = summary.partition(". ")
    return head + "." if sep else summary


def evaluator_names() -> list[str]:
    """Every evaluator a task can name (built-ins, registered classes, entry points)."""
    from assay.evaluators import registry

    return registry.names()


def evaluator_entry(name: str) -> Entry:
    """The reference of one evaluator: its docstring and its Options."""
    from assay.evaluators import registry

    cls = registry.get_class(name)
    summary, text = _split_doc(cls)
    options = pydantic_options(cls.Options)
    required = [o for o in options if o.default == "required"]
    usage = f"evaluators:\n  - name: {name}" + "".join(f"\n    {o.name}: ..." for o in required)
    return Entry("evaluator", name, summary, text, options, usage)


def filter_names() -> list[str]:
    """Every filter step type a task's ``filters:`` can name."""
    from assay.tasks import filters

    return filters.step_names()


def filter_entry(name: str) -> Entry:
    """The reference of one filter step."""
    from assay.tasks import filters

    cls = filters._STEPS.get(name)
    if cls is None:
        raise ConfigError(f"unknown filter step {name!r}; known: {', '.join(filter_names())}")
    summary, text = _split_doc(cls)
    options = pydantic_options(cls.Options)
    usage = f"filters:\n  - name: answer\n    steps:\n      - type: {name}" + "".join(
        f"\n        {o.name}: ..." for o in options if o.default == "required"
    )
    return Entry("filter step", name, summary, text, options, usage)


def model_kind_names() -> list[str]:
    """Every model kind (provider) a spec like ``KIND:NAME`` can name."""
    from assay.models import registry

    return registry.providers()


def model_kind_entry(name: str) -> Entry:
    """The reference of one model kind: the provider class's docstring and its constructor's options."""
    from assay.models import registry

    try:
        cls = registry.provider_class(name)
    except ImportError as err:  # an extra that is not installed: say which
        return Entry("model kind", name, f"needs an extra that is not installed here ({err.name}).")
    summary, text = _split_doc(cls)
    options = signature_options(cls.__init__, cls.__doc__)
    first = options[0].name if options else "name"
    usage = f"--model {name}:<{first}>\n\nmodel:\n  provider: {name}\n  {first}: ..."
    return Entry("model kind", name, summary, text, options, usage)


def command_entries(group: click.Group | None = None, prefix: str = "assay") -> list[Entry]:
    """The reference of every command and subcommand, from click's own definitions."""
    from assay.cli import main

    root = group or main
    ctx = click.Context(root, info_name=prefix)
    out: list[Entry] = []
    for name in root.list_commands(ctx):
        command = root.get_command(ctx, name)
        if command is None:
            continue
        full = f"{prefix} {name}"
        sub_ctx = click.Context(command, info_name=full, parent=None)
        summary, text = _split_doc(command.callback) if command.callback else ("", "")
        summary = command.get_short_help_str(limit=200) or summary
        help_text = inspect.cleandoc(command.help or "")
        body = help_text.partition("\n")[2].strip() if help_text else text
        out.append(Entry("command", full, summary, body, _command_options(command), command.get_usage(sub_ctx)))
        if isinstance(command, click.Group):
            out.extend(command_entries(command, full))
    return out


def _command_options(command: click.Command) -> list[OptionDoc]:
    rows = []
    for param in command.params:
        if isinstance(param, click.Option):
            if param.hidden:
                continue
            names = ", ".join(param.opts + param.secondary_opts)
            default = "" if param.default is None or callable(param.default) else str(param.default)
            if param.is_flag and not param.secondary_opts:
                default = "off" if not param.default else "on"
            rows.append(OptionDoc(names, param.type.name, default, param.help or ""))
        elif isinstance(param, click.Argument):
            rows.append(OptionDoc(param.human_readable_name, param.type.name, "required" if param.required else "", ""))
    return rows
