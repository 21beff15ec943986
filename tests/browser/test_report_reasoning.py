"""The HTML report's drawer shows a reasoning model's whole reply and, folded under it, the reasoning taken out
before scoring and the reasoning the server returned apart, in headless Chromium; markup in them stays text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import assay.api
from assay.report.html import write_html
from assay.testing.server import OpenAITestServer
from tests.browser.browser_support import Watched

PAYLOAD = '<img src=x onerror="alert(1)">'
REPLIES: dict[str, Any] = {
    "inline": f"<think>the answer is 5 {PAYLOAD}</think>\n42",
    "apart": {"text": "42", "reasoning_content": f"thought apart {PAYLOAD}"},
}


def _run(tmp_path: Path) -> Path:
    task = {
        "name": "qa",
        "dataset": [{"id": sid, "question": sid, "answer": "42"} for sid in REPLIES],
        "fields": {"id": "id", "input": "question", "target": "answer"},
        "template": "{{ question }}",
        "evaluators": ["exact_match"],
    }
    with OpenAITestServer(lambda request: REPLIES[request["messages"][-1]["content"]]) as server:
        model = {"provider": "openai", "model": "m", "base_url": server.base_url}
        assay.api.run(task, model, output_dir=tmp_path / "runs", progress=False, cache=False)
    return next((tmp_path / "runs").iterdir())


def _fields(page: Any) -> dict[str, str]:
    """Each field of the open drawer: its label and its text."""
    return dict(
        page.eval_on_selector_all(
            "#detail .field",
            "fs => fs.map(f => [f.querySelector(':scope > .label').textContent, "
            "f.querySelector(':scope > pre.text') ? f.querySelector(':scope > pre.text').textContent : ''])",
        )
    )


def _reasoning(page: Any) -> list[list[str]]:
    return page.eval_on_selector_all(
        "#detail details.reasoning",
        "ds => ds.map(d => [d.querySelector('summary').textContent, d.querySelector('pre.text').textContent])",
    )


def test_the_drawer_shows_the_whole_reply_and_the_reasoning_taken_out(watched: Watched, tmp_path: Path) -> None:
    page_file = write_html([_run(tmp_path)], tmp_path / "report.html")
    watched.load(page_file.as_uri() + "#sample=qa/inline")
    page = watched.page
    assert page.is_visible("#detail")
    fields = _fields(page)
    assert fields["Output"] == REPLIES["inline"]  # the reply as it came, thinking included
    assert fields["Filtered (none)"] == "42"  # what the evaluators judged
    assert _reasoning(page) == [["Reasoning taken out before scoring", f"the answer is 5 {PAYLOAD}"]]
    assert page.text_content("#detail .verdict.pass") is not None  # exact_match passed on the answer
    page.evaluate("() => document.querySelectorAll('#detail details').forEach(d => d.open = true)")
    assert page.is_visible("#detail details.reasoning pre.text")

    watched.load(page_file.as_uri() + "#sample=qa/apart")
    page.wait_for_function("() => document.getElementById('detail-title').textContent.endsWith('/ apart')")
    fields = _fields(page)
    assert fields["Output"] == "42" and "Filtered (none)" not in fields  # nothing was taken out of the text
    assert _reasoning(page) == [["Reasoning returned apart by the server (not scored)", f"thought apart {PAYLOAD}"]]
    assert page.query_selector("#detail img") is None
    assert watched.dialogs == [] and watched.errors == [] and watched.csp_violations() == []
