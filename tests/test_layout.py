"""The package's layers, read from the source: a subpackage imports only from its own layer or those below it.

The layers are the architecture (docs/explanation/architecture.md): core helpers, then models and data, records,
evaluators and run-folder storage, tools and feedback, agents, tasks, results, the runner, the report and the audit, the
Python API, optimize, and the command line on top. An import from a lower layer up (or a circle between two
subpackages) fails here and names the file that made it. No module may reach itself through imports either, inside
a subpackage or across (function-level imports count: they run too). Imports under ``if TYPE_CHECKING:`` are types
only.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

LAYERS: list[list[str]] = [
    [
        "assay.verdict",
        "assay.reductions",
        "assay.errors",
        "assay.secrets",
        "assay.importing",
        "assay.atomicfile",
        "assay.jsonfast",
        "assay.jsonerror",
        "assay.gcpause",
        "assay.forking",
        "assay.hashing",
        "assay.metricnames",
        "assay.version",
        "assay.lazyexports",
    ],
    ["assay.models", "assay.data", "assay.sandbox"],
    ["assay.environments"],
    ["assay.record"],
    ["assay.evaluators", "assay.store"],
    ["assay.tools", "assay.feedback"],
    ["assay.agents"],
    ["assay.tasks"],
    ["assay.results"],
    ["assay.runner"],
    ["assay.report", "assay.audit"],
    ["assay.api"],
    ["assay.optimize", "assay.demo"],
    ["assay.reference", "assay.commands", "assay.cli", "assay.__main__", "assay"],
    ["assay.testing"],  # the test kit: on top, so no production code imports it
]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _import_sites(module: str, path: Path) -> dict[str, list[str]]:
    """The assay modules ``module`` imports at run time, each with the ``file:line: statement`` of its imports.

    ``from assay.pkg import x`` counts as ``assay.pkg.x`` when ``x`` is a submodule, else as the package ``assay.pkg``.
    """
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    typing_only = {
        id(sub)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for sub in ast.walk(node)
    }
    where = path.relative_to(SRC.parent) if path.is_relative_to(SRC.parent) else path
    found: defaultdict[str, list[str]] = defaultdict(list)
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        targets = {_resolve(name) for name in names if name.startswith("assay")}
        for target in sorted(t for t in targets if t and t != module):
            statement = " ".join(ast.get_source_segment(text, node).split())  # type: ignore[union-attr]
            found[target].append(f"{where}:{node.lineno}: {statement}")
    return {target: sorted(lines, key=lambda line: int(line.split(":")[1])) for target, lines in found.items()}


def _imports(module: str, path: Path) -> set[str]:
    """The assay modules ``module`` imports at run time."""
    return set(_import_sites(module, path))


def _subpackage(module: str) -> str:
    return ".".join(module.split(".")[:2])


SITES = {module: _import_sites(module, path) for module, path in MODULES.items()}
EDGES = {module: set(targets) for module, targets in SITES.items()}


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``edges`` with more than one module (Tarjan's, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def _describe(cycle: list[str], sites: dict[str, dict[str, list[str]]]) -> str:
    members = set(cycle)
    lines = [f"{len(cycle)} modules: {', '.join(cycle)}"]
    for a in cycle:
        for b in sorted(sites[a].keys() & members):
            lines += [f"    {a} -> {b}", *(f"        {site}" for site in sites[a][b])]
    return "\n".join(lines)


def test_every_subpackage_has_a_layer():
    missing = sorted({_subpackage(m) for m in MODULES} - RANK.keys())
    assert not missing, f"add these to a layer in tests/test_layout.py (and the architecture page): {missing}"


def test_no_import_runs_from_a_lower_layer_up():
    upward = [
        f"{a} -> {b}"
        for a, targets in sorted(EDGES.items())
        for b in sorted(targets)
        if RANK.get(_subpackage(a), 99) < RANK.get(_subpackage(b), 99)
    ]
    assert upward == [], "imports from a lower layer up:\n" + "\n".join(upward)


def test_no_two_subpackages_import_each_other():
    between: defaultdict[str, set[str]] = defaultdict(set)
    for a, targets in EDGES.items():
        for b in targets:
            if _subpackage(a) != _subpackage(b):
                between[_subpackage(a)].add(_subpackage(b))
    circles = sorted(f"{a} <-> {b}" for a in between for b in between[a] if a < b and a in between.get(b, ()))
    assert circles == []


def test_the_checker_sees_an_upward_import(tmp_path: Path):
    """The test above would pass on a reader that found nothing: it must see a real import and its layer."""
    source = tmp_path / "probe.py"
    source.write_text("from assay.runner.session import x\nif TYPE_CHECKING:\n    import assay.cli\n")
    assert _imports("assay.models.probe", source) == {"assay.runner.session"}
    assert RANK["assay.models"] < RANK["assay.runner"]


def test_no_module_imports_itself_round_a_circle():
    """No cycle of imports anywhere, inside a subpackage or across; function-level imports count, as they run too.

    ``from assay.pkg import name`` is an import of the package's ``__init__`` unless ``name`` is a submodule: a
    module imported by its package's ``__init__`` imports what it needs from the module that defines it.
    """
    cycles = _cycles(EDGES)
    assert cycles == [], f"{len(cycles)} import cycles:\n" + "\n".join(_describe(c, SITES) for c in cycles)


def test_the_checker_sees_a_cycle(tmp_path: Path):
    """The test above would pass on a search that found nothing: it must see function-level imports and a circle."""
    probe = tmp_path / "probe.py"
    probe.write_text("from assay.tasks import config, Task\n\n\ndef f():\n    from assay.runner.session import x\n")
    assert _import_sites("assay.models.probe", probe) == {
        "assay.tasks.config": [f"{probe}:1: from assay.tasks import config, Task"],
        "assay.tasks": [f"{probe}:1: from assay.tasks import config, Task"],
        "assay.runner.session": [f"{probe}:5: from assay.runner.session import x"],
    }
    edges = {"assay.tasks.a": {"assay.tasks"}, "assay.tasks": {"assay.tasks.b"}, "assay.tasks.b": {"assay.tasks.c"}}
    edges["assay.tasks.c"] = {"assay.tasks.a", "assay.verdict"}
    edges["assay.verdict"] = set()
    assert _cycles(edges) == [["assay.tasks", "assay.tasks.a", "assay.tasks.b", "assay.tasks.c"]]
    assert _cycles({"x": {"y"}, "y": set()}) == []
