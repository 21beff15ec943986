"""The matrix page in headless Chromium (Debian's /usr/bin/chromium): one column per cell in matrix order, each
cell's figure and its Δ against the baseline, samples side by side, and a model's answer shown as text, never run.
Also `assay report MATRIX_DIR` in the terminal, and `assay compare` labelling two cells by their names."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.testing.server import OpenAITestServer
from tests.browser.browser_support import CHROMIUM, CSP_WATCH, Watched, launch
from tests.e2e.e2e_support import run_cli
from tests.matrix.matrix_support import models, reply, write_task

EVIL = "<img src=x onerror=alert(1)><script>alert(2)</script>"


def evil_reply(request: dict[str, Any]) -> Any:
    """alpha and beta as scripted; "evil" answers with markup that would run if the page let it."""
    return EVIL if request["model"] == "evil" else reply(request)


@pytest.fixture(scope="module")
def matrix_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("matrix")
    task = write_task(root)
    with OpenAITestServer(evil_reply) as srv:
        proc = run_cli("run", str(task), *models(srv.base_url), "-m", "openai:evil", "-o", "runs", "-q", cwd=root)
    assert proc.returncode == 0, proc.stderr
    (found,) = (root / "runs").iterdir()
    return found


@pytest.fixture(scope="module")
def page_file(matrix_dir: Path) -> Path:
    out = matrix_dir.parent / "matrix.html"
    proc = run_cli("report", str(matrix_dir), "--html", str(out), cwd=matrix_dir.parent)
    assert proc.returncode == 0, proc.stderr
    assert "HTML report ->" in proc.stderr
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    with sync_api.sync_playwright() as pw:
        chromium = launch(pw)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def watched(browser: Any) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    w = Watched(page)
    page.on("dialog", lambda d: (w.dialogs.append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: w.errors.append(str(e)))
    page.add_init_script(CSP_WATCH)
    try:
        yield w
    finally:
        context.close()


CELLS = ["alpha/terse", "alpha/verbose", "beta/terse", "beta/verbose", "evil/terse", "evil/verbose"]


def test_matrix_page_has_a_column_per_cell(watched: Watched, page_file: Path) -> None:
    page = watched.page
    page.goto(page_file.as_uri())
    heads = page.eval_on_selector_all("table.metrics thead th.cell", "els => els.map(e => e.dataset.cell)")
    assert heads == CELLS
    means = page.eval_on_selector_all(
        "table.metrics tbody tr:first-child td", "els => els.map(e => e.querySelector('.mean')?.textContent)"
    )
    assert means == ["1.0000", "0.8000", "0.5000", "0.3000", "0.0000", "0.0000"]
    deltas = page.eval_on_selector_all(
        "table.metrics tbody tr:first-child td", "els => els.map(e => e.querySelector('.delta')?.textContent ?? null)"
    )
    assert deltas[0] is None and deltas[1] == "Δ -0.2000 p=0.5" and deltas[3].endswith("▼")
    worse = page.eval_on_selector_all("td .delta.worse", "els => els.length")
    assert worse == 3  # beta/verbose (p = 2 * 0.5^7 < 0.05) and both evil cells; not alpha/verbose, beta/terse
    # samples side by side: q0 is failed by alpha/verbose only among the scored cells
    q0 = page.eval_on_selector_all('tr[data-sample="q0"] td.outcome', "els => els.map(e => e.classList[1])")
    assert q0 == ["pass", "fail", "pass", "pass", "fail", "fail"]
    assert page.eval_on_selector_all("table.samples tbody tr", "els => els.length") == 10


def test_model_answers_are_text_on_the_page(watched: Watched, page_file: Path) -> None:
    page = watched.page
    page.goto(page_file.as_uri())
    assert page.eval_on_selector_all("img, main script", "els => els.length") == 0
    answers = page.eval_on_selector_all("td.outcome .answer", "els => els.map(e => e.textContent)")
    assert answers.count(EVIL) == 20  # both evil cells' answers, as the text the model sent
    assert watched.dialogs == [] and watched.errors == []
    assert watched.csp_violations() == []  # nothing even tried: no script, no image, the style by hash
    html = page_file.read_text()
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_report_and_compare_name_the_cells(matrix_dir: Path) -> None:
    proc = run_cli("report", str(matrix_dir), "--format", "json", cwd=matrix_dir.parent)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [c["name"] for c in doc["cells"]] == CELLS
    figures = {name: cell and cell["mean"] for name, cell in doc["metrics"][0]["cells"].items()}
    assert figures == dict(zip(CELLS, [1.0, 0.8, 0.5, 0.3, 0.0, 0.0], strict=True))
    rich = run_cli("report", str(matrix_dir), cwd=matrix_dir.parent)
    assert rich.returncode == 0 and all(name in rich.stdout for name in CELLS)
    index = json.loads((matrix_dir / "matrix.json").read_text())
    folder = {c["name"]: str(matrix_dir / c["run_dir"]) for c in index["cells"]}
    compared = run_cli("compare", folder["alpha/terse"], folder["beta/terse"], "--format", "json", cwd=matrix_dir)
    assert compared.returncode == 0, compared.stderr  # beta/terse is lower, but p = 0.0625
    out = json.loads(compared.stdout)
    assert (out["run_a"], out["run_b"]) == ("alpha/terse", "beta/terse")
    gated = run_cli("report", str(matrix_dir), "--fail-under", "exact_match=0.5", cwd=matrix_dir.parent)
    assert gated.returncode == 2 and "give a cell's run folder" in gated.stderr


def test_a_chosen_baseline(matrix_dir: Path) -> None:
    proc = run_cli("report", str(matrix_dir), "--format", "json", "--baseline", "beta/terse", cwd=matrix_dir.parent)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    cells = doc["metrics"][0]["cells"]
    assert doc["baseline"] == "beta/terse" and cells["beta/terse"]["diff"] is None
    assert cells["alpha/terse"]["diff"] == pytest.approx(0.5) and cells["alpha/terse"]["p_value"] == 0.0625
    assert cells["evil/terse"]["diff"] == pytest.approx(-0.5) and cells["evil/terse"]["verdict"] == ""
    unknown = run_cli("report", str(matrix_dir), "--baseline", "gamma", cwd=matrix_dir.parent)
    assert unknown.returncode == 2 and "no such cell" in unknown.stderr and "alpha/terse" in unknown.stderr
