"""The package's layers, read from the source: a subpackage imports only from its own layer or those below it.

The layers are the architecture (docs/explanation/architecture.md): core helpers, then models and data, records,
evaluators and run-folder storage, tools and feedback, agents, tasks, results, the runner, the report, the
Python API, optimize, and the command line on top. An import from a lower layer up (or a circle between two
subpackages) fails here and names the file that made it. Imports under ``if TYPE_CHECKING:`` are types only.
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
    ],
    ["assay.models", "assay.data", "assay.sandbox"],
    ["assay.record"],
    ["assay.evaluators", "assay.store"],
    ["assay.tools", "assay.feedback"],
    ["assay.agents"],
    ["assay.tasks"],
    ["assay.results"],
    ["assay.runner"],
    ["assay.report"],
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


def _imports(module: str, path: Path) -> set[str]:
    """The assay modules ``module`` imports at run time (``from assay import x`` counts as ``assay.x``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    typing_only = {
        id(sub)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for sub in ast.walk(node)
    }
    found: set[str] = set()
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
            submodules = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES]
            names = submodules or [base]
        for name in names:
            target = _resolve(name) if name.startswith("assay") else None
            if target and target != module:
                found.add(target)
    return found


def _subpackage(module: str) -> str:
    return ".".join(module.split(".")[:2])


EDGES = {module: _imports(module, path) for module, path in MODULES.items()}


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
