"""A run may have a name (`assay run --name`, `assay.run(name=...)`): stored in run.json and shown wherever the run
is labelled (summary line, compare, report, HTML, JUnit); runs without one keep their folder names as labels."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import assay
from assay.results import compare_runs, load_run
from assay.testing.server import OpenAITestServer
from tests.e2e.e2e_support import run_cli, write_task


def _run(tmp_path: Path, server: OpenAITestServer, *args: str) -> tuple[Path, str]:
    before = set((tmp_path / "runs").iterdir()) if (tmp_path / "runs").exists() else set()
    task = tmp_path / "add.yaml"
    proc = run_cli(
        "run", str(task), "--model", "openai:assay-test", "--base-url", server.base_url, "-o", "runs", "-q", *args,
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (new,) = set((tmp_path / "runs").iterdir()) - before
    return new, proc.stderr


def test_named_runs_are_labelled_by_name_everywhere(tmp_path: Path, server: OpenAITestServer) -> None:
    write_task(tmp_path, 6)
    base, said = _run(tmp_path, server, "--name", "baseline")
    assert "run 'baseline': 6 samples evaluated" in said
    assert json.loads((base / "run.json").read_text())["name"] == "baseline"
    cand, _ = _run(tmp_path, server, "--name", "candidate v2")

    compared = run_cli("compare", str(base), str(cand), "--format", "markdown", cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    assert "A = baseline, B = candidate v2" in compared.stdout and base.name not in compared.stdout

    shown = run_cli("report", str(base), "--format", "markdown", cwd=tmp_path)
    assert shown.stdout.startswith("## run baseline\n"), shown.stdout[:200]
    both = run_cli("report", str(base), str(cand), "--format", "markdown", "--html", "page.html", cwd=tmp_path)
    assert f"## A: baseline ({base})" in both.stdout and f"## B: candidate v2 ({cand})" in both.stdout
    page = (tmp_path / "page.html").read_text()
    assert "<title>baseline vs candidate v2" in page or "<h1>baseline vs candidate v2</h1>" in page
    labels = set(
        re.findall(r'<span class="label"><span class="swatch [^"]*" aria-hidden="true"></span>([^<]*)</span>', page)
    )
    assert labels == {"baseline", "candidate v2"}  # the runs' headings: their names, not their folders
    as_json = json.loads(run_cli("report", str(cand), "--format", "json", cwd=tmp_path).stdout)
    assert as_json["runs"][0]["name"] == "candidate v2"

    run_cli("report", str(cand), "--junit", "junit.xml", cwd=tmp_path)
    assert ET.parse(tmp_path / "junit.xml").getroot().get("name") == "assay run candidate v2"


def test_runs_without_a_name_keep_their_folder_labels(tmp_path: Path, server: OpenAITestServer) -> None:
    write_task(tmp_path, 4)
    first, said = _run(tmp_path, server)
    second, _ = _run(tmp_path, server)
    assert said.startswith("4 samples evaluated") and json.loads((first / "run.json").read_text())["name"] is None
    compared = run_cli("compare", str(first), str(second), "--format", "markdown", cwd=tmp_path)
    assert f"A = {first.name}, B = {second.name}" in compared.stdout
    assert load_run(first).name == first.name
    shown = run_cli("report", str(first), "--format", "markdown", cwd=tmp_path)
    assert not shown.stdout.startswith("## ")


def test_two_runs_of_one_name_are_told_apart_and_python_runs_take_a_name(
    tmp_path: Path, server: OpenAITestServer
) -> None:
    task = write_task(tmp_path, 3)
    spec = {"provider": "openai", "model": "assay-test", "base_url": server.base_url}
    a = assay.run(task, spec, name="exp", output_dir=tmp_path / "runs", progress=False)
    b = assay.run(task, spec, name="exp", output_dir=tmp_path / "runs", progress=False)
    assert a.name == b.name == "exp"
    comparison = compare_runs(a, b)
    assert (comparison.run_a, comparison.run_b) == (f"exp ({a.path.name})", f"exp ({b.path.name})")
    renamed = assay.run(resume=a.path, name="exp-final")  # a label may change on resume
    assert renamed.manifest.name == "exp-final"


def test_a_bad_name_is_a_clear_error(tmp_path: Path, server: OpenAITestServer) -> None:
    write_task(tmp_path, 1)
    proc = run_cli(
        "run", "add.yaml", "--model", "openai:assay-test", "--base-url", server.base_url, "--name", "two\nlines",
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2 and "name: " in proc.stderr and "one line of text" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "runs").exists()


def test_the_name_is_in_the_run_folders_name(tmp_path: Path, server: OpenAITestServer) -> None:
    write_task(tmp_path, 4)
    first, _ = _run(tmp_path, server, "--name", "demo agent/v2: ünïcode")
    second, _ = _run(tmp_path, server, "--name", "demo agent/v2: ünïcode")
    assert first != second  # still unique
    for folder in (first, second):
        assert folder.name.startswith("add-demo-agent-v2-")
        assert re.fullmatch(r"[A-Za-z0-9_.+-]+", folder.name)
    unnamed, _ = _run(tmp_path, server)
    assert re.fullmatch(r"add-\d{8}-\d{6}-[0-9a-f]{6}", unnamed.name)
