"""A promptfoo config's run resumes from its run folder alone (issue 39): run.json records every task the config
became, so a resume typed in another folder, after the config's folder is gone, finishes the run exactly once with
the figures of the uninterrupted run."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

from tests.e2e.e2e_support import sample_lines
from tests.e2e.test_resume import cut_run
from tests.importers.promptfoo.test_simple_test import reply, run
from tests.rowchecks.test_graded_server import GradingServer


def _figures(run_dir: Path) -> dict[str, dict[str, float]]:
    tasks = json.loads((run_dir / "results.json").read_text())["assay"]["tasks"]
    return {name: tasks[name]["filters"]["none"]["row_checks"] for name in tasks}


def test_a_promptfoo_run_resumes_from_its_run_folder_alone(tmp_path: Path) -> None:
    with GradingServer(reply, models=("gpt-4.1-mini",)) as server:  # with /embeddings, for similar
        proc, runs = run(tmp_path, server)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        (run_dir,) = [p for p in runs.iterdir() if p.is_dir()]
        whole = _figures(run_dir)
        moved = tmp_path / "kept" / run_dir.name
        shutil.copytree(run_dir, moved)
        shutil.rmtree(tmp_path / "simple-test")  # the config, its prompt and test files are gone
        cut_run(moved, 4)
        asked = len(server.requests)
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        from tests.e2e.e2e_support import run_cli

        resumed = run_cli("run", "--resume", str(moved), "-q", cwd=elsewhere)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert len(server.requests) > asked  # the missing samples were asked again (no response cache here)
    lines = sample_lines(moved)
    assert Counter((r["task"], r["sample_id"]) for r in lines) == Counter(
        {(task, f"test-{i}"): 1 for task in whole for i in range(1, 6)}
    )
    again = _figures(moved)
    for name, entry in whole.items():
        assert again[name]["mean"] == entry["mean"] and again[name]["n_scored"] == entry["n_scored"] == 5
