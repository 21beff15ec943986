"""Writes the reference pages from the code at build time (mkdocs-gen-files): one page per evaluator, filter step
and model kind, one for the commands (``assay evaluators show NAME --markdown`` prints the same page), and the
Python API: one page per public module, one section per name in its ``__all__`` (rendered by mkdocstrings)."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

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


# ---- the Python API: one page per public module, one section per name in its ``__all__`` ----------------------
# The names are read from the package at build time, so a new public name gets its section without editing the docs;
# each is rendered by mkdocstrings from wherever it is defined (found with griffe, which mkdocstrings uses too).

API_MODULES = {  # public module -> what its page is for
    "assay": "Run tasks, build them in Python, read and compare runs, and the types they are made of.",
    "assay.evaluators": "Build evaluators by name or by class, and write and register your own.",
    "assay.testing": "Test tasks and agents: `assert_eval`, the pytest plugin's case, and the test server.",
    "assay.environments": "Per-sample environments agents act in: the interface tools and evaluators use, providers.",
    "assay.tools": "Agent tools: the standard ones, Python functions, stateful worlds, and writing your own.",
}


def _api_page(module_name: str) -> str:
    return f"reference/api/{module_name}.md"


def _griffe_path(package: object, candidates: list[str], want: str) -> str | None:
    """The first candidate path griffe can load as an object of kind ``want`` (class, function or attribute)."""
    for path in candidates:
        try:
            found = package[path.partition(".")[2]]  # type: ignore[index]
            kind = found.final_target.kind.value if found.is_alias else found.kind.value
        except Exception:
            continue
        if kind == want:
            return path
    return None


def _kind(obj: object) -> str:
    if inspect.isclass(obj):
        return "class"
    if inspect.isroutine(obj):
        return "function"
    return "attribute"


def _api_pages() -> None:
    import griffe

    docs = Path(__file__).resolve().parent
    roles = griffe.load_extensions(f"{docs / 'griffe_roles.py'}:SphinxRolesAsCode")  # as mkdocs.yml's handler
    package = griffe.load("assay", search_paths=[str(docs.parent / "src")], resolve_aliases=False, extensions=roles)
    index = [
        "# Python API",
        "",
        "Every public name of assay's Python packages, generated from their `__all__` and the code's docstrings. "
        "Names not listed here are internal and may change without notice.",
        "",
    ]
    for module_name, purpose in API_MODULES.items():
        module = importlib.import_module(module_name)
        # in the order the module's author gave (``__version__`` and the like last)
        names = sorted(getattr(module, "__all__", ()), key=lambda n: n.startswith("_"))
        index.append(f"- [`{module_name}`]({module_name}.md): {purpose}")
        rows, sections = [], []
        for name in names:
            obj = getattr(module, name)
            if inspect.ismodule(obj) and obj.__name__ not in API_MODULES and hasattr(module, "__getattr__"):
                obj = module.__getattr__(name)  # a lazy export shadowed by the submodule of its name, once imported
            if inspect.ismodule(obj):
                if obj.__name__ in API_MODULES:
                    rows.append(f"| [`{name}`]({obj.__name__}.md) | module: see its page |")
                continue
            candidates = [f"{module_name}.{name}"]
            if hasattr(obj, "__module__") and "<" not in getattr(obj, "__qualname__", "<"):
                candidates.append(f"{obj.__module__}.{obj.__qualname__}")
            path = _griffe_path(package, candidates, _kind(obj))
            if _kind(obj) == "attribute":  # a constant: its value (its docstring would be its type's)
                summary = f"`{obj!r}`"
            else:  # the docstring's first sentence, as griffe (and so the section below) reads it
                found = package[path.partition(".")[2]] if path else None
                text = found.docstring.value if found is not None and found.docstring else inspect.getdoc(obj)
                summary = catalog.one_line((text or "").split("\n\n")[0].replace("\n", " "))
            anchor = path or f"{module_name}.{name}"
            rows.append(f"| [`{name}`](#{anchor}) | " + summary.replace("|", "\\|") + " |")
            if path is not None:
                sections.append(f'::: {path}\n    options:\n      heading: "{name}"\n')
            else:  # not found statically (made at run time): its signature and docstring as Python reports them
                try:
                    signature = f"{name}{inspect.signature(obj)}"
                except (TypeError, ValueError):
                    signature = name
                doc = inspect.getdoc(obj) or ""
                sections.append(f"## `{name}` {{ #{anchor} }}\n\n```python\n{signature}\n```\n\n{doc}\n")
        found = package[module_name.partition(".")[2]] if "." in module_name else package
        doc = found.docstring.value if found.docstring else ""
        page = [f"# `{module_name}`", "", doc, "", "| name | what it is |", "|---|---|", *rows, "", *sections]
        with mkdocs_gen_files.open(_api_page(module_name), "w") as f:
            f.write("\n".join(page) + "\n")
    with mkdocs_gen_files.open("reference/api/index.md", "w") as f:
        f.write("\n".join(index) + "\n")


_api_pages()
