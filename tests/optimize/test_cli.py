"""``assay optimize`` and ``assay report OPT_DIR`` from the command line: the offline demo of the README, its exit
codes, and the HTML page in a real headless Chromium."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "optimize_format" / "task.yaml"
CHROMIUM = Path(os.environ.get("ASSAY_CHROMIUM", "/usr/bin/chromium"))


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASSAY_CACHE_DIR": str(cwd / "cache"), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "assay", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's demo command, run once: its optimisation folder."""
    cwd = tmp_path_factory.mktemp("demo")
    out = cli("optimize", str(DEMO), "--optimizer-model", "python:assay.optimize.demo:reflect", "--budget", "200",
              "--output", "opt", cwd=cwd)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "improved: candidate" in out.stderr and "trial   1  original" in out.stderr
    (folder,) = (cwd / "opt").iterdir()
    return folder


def test_demo_raises_the_held_out_score_significantly(demo: Path) -> None:
    summary = json.loads((demo / "summary.json").read_text())
    assert summary["improved"] is True
    assert summary["test"]["baseline"]["mean"] < 0.5 <= 0.8 <= summary["test"]["best"]["mean"]
    assert summary["test"]["comparison"]["p_value"] < 0.01
    assert summary["calls"]["used"] <= 200


def test_report_of_an_optimisation_folder(demo: Path, tmp_path: Path) -> None:
    md = cli("report", str(demo), "--format", "markdown", cwd=tmp_path)
    assert md.returncode == 0, md.stderr
    assert "| trial | origin | candidate |" in md.stdout and "improved: candidate" in md.stdout
    js = cli("report", str(demo), "--format", "json", cwd=tmp_path)
    view = json.loads(js.stdout)
    assert view["strategy"] == "reflective" and view["val_trials"][0]["origin"] == "original"
    rich = cli("report", str(demo), cwd=tmp_path)
    assert "0.370" in rich.stdout and "[0.215, 0.558]" in rich.stdout  # the baseline's Wilson interval, 10 of 27


def test_exit_codes(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(DEMO.read_text().replace("minibatch: 4", "minibatch: 0"))
    (tmp_path / "questions.jsonl").write_text((DEMO.parent / "questions.jsonl").read_text())
    out = cli(
        "optimize", str(bad), "--optimizer-model", "python:assay.optimize.demo:reflect", "-b", "100", cwd=tmp_path
    )
    assert out.returncode == 2 and "bad.yaml:" in out.stderr and "optimize.minibatch" in out.stderr
    assert not (tmp_path / "runs").exists()  # nothing written for a bad task
    # a budget that only pays for the baseline: no candidate, so --require-improvement fails with exit 1
    out = cli("optimize", str(DEMO), "--optimizer-model", "python:assay.optimize.demo:reflect", "-b", "27",
              "--require-improvement", cwd=tmp_path)  # fmt: skip
    assert out.returncode == 1, out.stderr
    assert "no candidate beat the original task on the validation split" in out.stderr
    out = cli("optimize", cwd=tmp_path)
    assert out.returncode == 2 and "give a TASK file, or --resume FOLDER" in out.stderr
    # an option the chosen strategy would ignore is refused, naming it, before anything runs
    for extra in (["--trials", "3"], ["--demos", "2"], ["--strategy", "fewshot", "--minibatch", "2"]):
        out = cli("optimize", str(DEMO), "-b", "100", *extra, "--output", "ignored", cwd=tmp_path)
        key = {"--trials": "trials", "--demos": "fewshot", "--strategy": "minibatch"}[extra[0]]
        assert out.returncode == 2 and f"{key}: applies to the" in out.stderr, out.stderr
    assert not (tmp_path / "ignored").exists()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox"])
        try:
            yield chromium
        finally:
            chromium.close()


def test_html_shows_score_per_trial_and_escapes_model_text(demo: Path, tmp_path: Path, browser: Any) -> None:
    hostile = "<img src=x onerror=alert(1)><script>alert(2)</script>"
    with (demo / "journal.jsonl").open("a") as fh:  # a candidate produced by a failure whose output is hostile
        entry = {"kind": "candidate", "key": "evil", "candidate": {}, "parents": [], "origin": "reflection",
                 "component": "instructions", "note": "", "diff": hostile,
                 "failures": [{"sample_id": "q1", "reason": hostile, "feedback": hostile}]}  # fmt: skip
        fh.write(json.dumps(entry) + "\n")
    page_path = tmp_path / "opt.html"
    out = cli("report", str(demo), "--html", str(page_path), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    page = browser.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(page_path.as_uri())
    view = json.loads(cli("report", str(demo), "--format", "json", cwd=tmp_path).stdout)
    assert page.locator("svg.opt-score circle").count() == len(view["val_trials"]) >= 2
    assert page.locator("svg.opt-score line.ci").count() >= 1
    assert "improved: candidate" in page.locator("#verdict").inner_text()
    assert page.locator("img").count() == 0 and page.locator("script").count() == 0
    page.locator("details", has_text="evil").locator("summary").click()
    assert hostile in page.locator("details", has_text="evil").inner_text()
    assert dialogs == []
    page.close()
