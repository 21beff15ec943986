"""The architecture page names the layers ``tests/test_layout.py`` enforces, in its order, and nothing else."""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_layout import LAYERS

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "explanation" / "architecture.md"


def _page_layers() -> list[list[str]]:
    """The packages of each row of the page's layer table, as module names (``models/`` -> ``assay.models``)."""
    text = PAGE.read_text(encoding="utf-8")
    table = text[text.index("| Layer | Packages |") :].split("\n\n", 1)[0].splitlines()[2:]
    rows = []
    for line in table:
        packages = line.split("|")[2]
        names = [n.rstrip("/") for n in re.findall(r"`([^`]+)`", packages)]
        rows.append([name if name == "assay" else f"assay.{name}" for name in names])
    return rows


def test_the_layer_table_is_the_layout_tests_layers():
    assert _page_layers() == LAYERS


def test_every_file_the_page_names_exists():
    text = PAGE.read_text(encoding="utf-8")
    named = re.findall(r"`((?:[a-z_]+/)*[a-z_]+\.py)`", text)
    assert "record.py" in named and "evaluators/_factories.py" in named  # the search finds what the page names
    for path in named:  # relative to the package (most), to src/ (assay/api.py), or to the checkout (tests/...)
        places = [ROOT / "src" / "assay" / path, ROOT / "src" / path, ROOT / path, ROOT / "tests" / path]
        assert any(p.is_file() for p in places), f"{PAGE.name} names {path}, which does not exist"
