"""The reference pages and ``assay evaluators show`` come from the same code, and every option is described."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.reference import catalog

ROOT = Path(__file__).resolve().parents[2]


def test_show_prints_the_page_the_docs_generate():
    for name in catalog.evaluator_names():
        result = CliRunner().invoke(main, ["evaluators", "show", name, "--markdown"])
        assert result.exit_code == 0, result.output
        assert result.output == catalog.evaluator_entry(name).markdown()


def test_the_list_names_every_evaluator_and_an_unknown_name_is_a_usage_error():
    listing = CliRunner().invoke(main, ["evaluators"])
    assert listing.exit_code == 0
    for name in catalog.evaluator_names():
        assert name in listing.output
    unknown = CliRunner().invoke(main, ["evaluators", "show", "exact_mach"])
    assert unknown.exit_code == 2
    assert "unknown evaluator 'exact_mach'" in unknown.output and "exact_match" in unknown.output


def test_options_table_shows_types_and_defaults():
    page = catalog.evaluator_entry("contains").markdown()
    assert "| `mode` | 'all' \\| 'any' \\| 'none' | 'all' |" in page
    assert "| `substrings` | list[str] \\| None | null |" in page


@pytest.mark.skipif(shutil.which("mkdocs", path=str(Path(sys.executable).parent)) is None, reason="mkdocs missing")
def test_the_site_builds_strict_with_a_page_per_evaluator(tmp_path: Path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
    mkdocs = str(Path(sys.executable).parent / "mkdocs")
    subprocess.run([mkdocs, "build", "--strict", "--quiet", "--site-dir", str(tmp_path)], cwd=ROOT, env=env, check=True)
    # the names the site is built from, read in a fresh process: evaluators other tests register are not in it
    listed = [sys.executable, "-c", "from assay.reference import catalog; print(*catalog.evaluator_names())"]
    names = subprocess.run(listed, cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout.split()
    assert "exact_match" in names
    for name in names:
        page = (tmp_path / "reference" / "evaluators" / name / "index.html").read_text()
        for option in catalog.evaluator_entry(name).options:
            assert f"<code>{option.name}</code>" in page, (name, option.name)
    assert "assay evaluators show" in (tmp_path / "reference" / "commands" / "index.html").read_text()
    # the Python API: a section for every name each public module exports (read from __all__ at build time)
    exported = [sys.executable, "-c", f"import importlib, json; print(json.dumps({_ALL_OF}))"]
    public = json.loads(subprocess.run(exported, cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout)
    assert {"run", "Task", "Sample", "Evaluator", "Verdict", "load_run", "Run", "compare_runs"} <= set(public["assay"])
    for module, names in public.items():
        page = (tmp_path / "reference" / "api" / module / "index.html").read_text()
        for name in names:
            if name != "evaluators":  # the submodule: its own page
                assert re.search(rf'<h2 id="[\w.]*\b{re.escape(name)}"', page), (module, name)


_ALL_OF = "{m: importlib.import_module(m).__all__ for m in ('assay', 'assay.evaluators', 'assay.testing')}"
