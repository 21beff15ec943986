"""Writes the reference pages from the code at build time (mkdocs-gen-files): one page per evaluator, filter step
and model kind, and one for the commands. ``assay evaluators show NAME --markdown`` prints the same page."""

from __future__ import annotations

import mkdocs_gen_files

from assay.reference import catalog


def _index(folder: str, title: str, intro: str, names: list[str], summaries: dict[str, str]) -> None:
    lines = [f"# {title}", "", intro, "", "| name | what it is |", "|---|---|"]
    lines += [f"| [`{n}`]({n}.md) | {catalog.one_line(summaries[n])} |" for n in names]
    with mkdocs_gen_files.open(f"reference/{folder}/index.md", "w") as f:
        f.write("\n".join(lines) + "\n")


def _pages(folder: str, names: list[str], entry: object) -> dict[str, str]:
    summaries = {}
    for name in names:
        page = entry(name)  # type: ignore[operator]
        summaries[name] = page.summary
        with mkdocs_gen_files.open(f"reference/{folder}/{name}.md", "w") as f:
            f.write(page.markdown())
    return summaries


names = catalog.evaluator_names()
_index(
    "evaluators",
    "Evaluators",
    "Every evaluator a task's `evaluators:` list can name. Each page is generated from the evaluator's `Options`.",
    names,
    _pages("evaluators", names, catalog.evaluator_entry),
)
names = catalog.filter_names()
_index(
    "filters",
    "Filter steps",
    "The steps a task's `filters:` pipelines are made of, from the code of each step.",
    names,
    _pages("filters", names, catalog.filter_entry),
)
names = catalog.model_kind_names()
_index(
    "models",
    "Model kinds",
    "What `--model KIND:NAME` (or a task's `model: {provider: KIND, ...}`) can name, from each provider's code.",
    names,
    _pages("models", names, catalog.model_kind_entry),
)
with mkdocs_gen_files.open("reference/commands.md", "w") as f:
    f.write("# Commands\n\nEvery `assay` command and its options, read from the command line's own definitions.\n\n")
    f.write("\n".join(entry.markdown(heading="##") for entry in catalog.command_entries()))
