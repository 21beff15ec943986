"""Issue 40, the matrix page in headless Chromium (Debian's /usr/bin/chromium): each cell shows the prompt it sent
(its chat messages as its samples.jsonl records them), as text even when the prompt holds markup; every cell links
to its run's page, written beside the matrix page, and every sample outcome to that sample on it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
import yaml

from assay.testing.server import OpenAITestServer
from tests.browser.browser_support import CHROMIUM, CSP_WATCH, Watched, launch
from tests.e2e.e2e_support import run_cli, sample_lines
from tests.matrix.matrix_support import N, reply, write_task

SYSTEM = "<script>alert('system')</script>You are terse."
MARKUP = "<b>bold</b><img src=x onerror=alert(4)><script>alert(3)</script>"
AGENT = """
def answer(prompt):
    words = prompt.replace("?", "").split()
    return str(int(words[-3]) + int(words[-1]))
"""
CELLS = ["agent/plain", "agent/evil", "alpha/plain", "alpha/evil"]


@pytest.fixture(scope="module")
def matrix_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Python agent and a server model, each with a plain prompt and one whose system message and template
    hold markup."""
    root = tmp_path_factory.mktemp("prompts")
    (root / "page_agent.py").write_text(AGENT)
    task = write_task(root, variants=False)
    config = yaml.safe_load(task.read_text())
    config["variants"] = {"plain": "{{ question }}", "evil": {"system": SYSTEM, "template": MARKUP + " {{ question }}"}}
    task.write_text(yaml.safe_dump(config, sort_keys=False))
    with OpenAITestServer(reply, models=("alpha",)) as srv:
        alpha = {"provider": "openai", "model": "alpha", "base_url": srv.base_url}
        agent = {"provider": "python", "target": "page_agent:answer"}
        proc = run_cli("run", str(task), "-m", f"agent={json.dumps(agent)}", "-m", f"alpha={json.dumps(alpha)}",
                       "-o", "runs", "-q", cwd=root)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert len(srv.requests) == 2 * N
    (found,) = (root / "runs").iterdir()
    return found


def write_page(matrix_dir: Path, name: str, *extra: str) -> Path:
    out = matrix_dir.parent / "pages" / name
    proc = run_cli("report", str(matrix_dir), "--html", str(out), *extra, cwd=matrix_dir.parent)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def page_file(matrix_dir: Path) -> Path:
    return write_page(matrix_dir, "matrix.html")


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


def test_each_cell_shows_the_prompt_it_sent(watched: Watched, matrix_dir: Path, page_file: Path) -> None:
    page = watched.page
    page.goto(page_file.as_uri())
    assert page.eval_on_selector_all("table.samples thead th.cell", "els => els.map(e => e.dataset.cell)") == CELLS
    for cell in CELLS:
        box = page.locator(f'tr[data-sample="q3"] td[data-cell="{cell}"] .prompt')
        assert box.is_visible()
        roles = box.locator(".role").all_inner_texts()
        texts = box.locator(".msg .text").all_inner_texts()
        if cell.endswith("/evil"):
            assert roles == ["system", "user"] and texts == [SYSTEM, f"{MARKUP} What is 3 + 4?"]
        else:
            assert roles == ["user"] and texts == ["What is 3 + 4?"]
    # what the page shows is what the cell's samples.jsonl recorded it sent
    index = json.loads((matrix_dir / "matrix.json").read_text())
    for cell in index["cells"]:
        (record,) = [r for r in sample_lines(matrix_dir / cell["run_dir"]) if r["sample_id"] == "q7"]
        shown = page.locator(f'tr[data-sample="q7"] td[data-cell="{cell["name"]}"] .prompt .msg .text')
        assert shown.all_inner_texts() == [m["content"] for m in record["messages"]]


def test_markup_in_a_prompt_is_text(watched: Watched, page_file: Path) -> None:
    page = watched.page
    page.goto(page_file.as_uri())
    assert page.eval_on_selector_all("main script, main img, main b", "els => els.length") == 0
    assert page.locator(".prompt .text", has_text="<script>alert(3)</script>").count() == 2 * N
    assert watched.dialogs == [] and watched.errors == [] and watched.csp_violations() == []
    html = page_file.read_text()
    assert "<script>alert(3)" not in html and "&lt;script&gt;alert(3)&lt;/script&gt;" in html


def test_every_cell_links_to_its_run_page(watched: Watched, matrix_dir: Path, page_file: Path) -> None:
    page = watched.page
    page.goto(page_file.as_uri())
    heads = page.eval_on_selector_all(
        "table.samples thead th.cell",
        "els => els.map(e => [e.dataset.cell, e.querySelector('a.run-page')?.getAttribute('href')])",
    )
    index = {c["name"]: c for c in json.loads((matrix_dir / "matrix.json").read_text())["cells"]}
    for cell, href in heads:
        assert href and not urlsplit(href).scheme and not href.startswith("/")  # relative
        target = page_file.parent / unquote(href)
        assert target.is_file()
        assert target.name == f"{index[cell]['run_dir']}.html"
    # following a cell's link opens its run page, the report of that cell's run
    page.click('table.metrics th.cell[data-cell="alpha/evil"] a.run-page')
    page.wait_for_function("() => document.body.dataset.ready === '1'", timeout=15_000)
    assert page.url.endswith("/pages/matrix-runs/alpha__evil.html")
    assert "alpha/evil" in page.title() or page.locator("text=alpha/evil").count() > 0
    # a sample outcome opens that sample on its cell's run page
    page.goto(page_file.as_uri())
    link = page.locator('tr[data-sample="q4"] td[data-cell="agent/evil"] a.tag')
    assert link.get_attribute("href") == "matrix-runs/agent__evil.html#sample=add/q4"
    link.click()
    page.wait_for_function("() => document.body.dataset.ready === '1'", timeout=15_000)
    page.wait_for_function("() => !document.getElementById('detail').hidden", timeout=15_000)
    assert page.eval_on_selector("#detail", "e => e.dataset.sample") == "add/q4"
    assert page.locator("#detail", has_text="alert(3)").count() == 1  # the run page shows the prompt too, as text
    assert watched.dialogs == [] and watched.errors == []


def test_a_sample_the_run_page_leaves_out_links_to_the_page(watched: Watched, matrix_dir: Path) -> None:
    """With --html-samples 2 the run pages hold 2 samples each: a sample link carries #sample= only for those, and
    each such link opens its sample."""
    small = write_page(matrix_dir, "small.html", "--html-samples", "2")
    page = watched.page
    page.goto(small.as_uri())
    hrefs = page.eval_on_selector_all("td.outcome a.tag", "els => els.map(e => e.getAttribute('href'))")
    assert len(hrefs) == 2 * len(CELLS)
    deep = [h for h in hrefs if "#sample=" in h]
    assert 0 < len(deep) < len(hrefs)  # q0 is on the run pages (q0 and q5 are), q1 is not
    for href in hrefs:
        assert (small.parent / unquote(href.partition("#")[0])).is_file()
    for href in deep:
        page.goto(small.parent.joinpath(href.partition("#")[0]).as_uri() + "#" + href.partition("#")[2])
        page.wait_for_function("() => document.body.dataset.ready === '1'", timeout=15_000)
        opened = page.eval_on_selector("#detail", "e => e.hidden ? null : e.dataset.sample")
        assert opened == unquote(href.partition("#sample=")[2])
