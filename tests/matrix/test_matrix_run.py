"""Two models x two prompt variants in one command: four cells, each an ordinary run folder with its own figure;
a killed matrix resumes cell by cell and asks nothing again that a cell already has."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections import Counter
from pathlib import Path

import pytest
import yaml

from assay.results import load_run
from assay.testing.server import OpenAITestServer
from tests.e2e.e2e_support import assay_cmd, run_cli, sample_lines
from tests.matrix.matrix_support import EXPECTED, N, models, reply, write_task
from tests.support import lines_written, wait_for


def only_matrix(root: Path) -> Path:
    (found,) = [p for p in root.iterdir() if p.is_dir()]
    return found


def figures(matrix_dir: Path) -> dict[str, float | None]:
    index = json.loads((matrix_dir / "matrix.json").read_text())
    out = {}
    for cell in index["cells"]:
        row = load_run(matrix_dir / cell["run_dir"]).row("add", "exact_match")
        assert row is not None
        out[cell["name"]] = row.mean
    return out


def test_two_models_two_variants_give_four_cells(tmp_path: Path, server: OpenAITestServer) -> None:
    task = write_task(tmp_path)
    proc = run_cli("run", str(task), *models(server.base_url), "-o", "runs", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    matrix_dir = only_matrix(tmp_path / "runs")
    index = json.loads((matrix_dir / "matrix.json").read_text())
    assert index["models"] == ["alpha", "beta"] and index["variants"] == ["terse", "verbose"]
    assert [(c["model"], c["variant"]) for c in index["cells"]] == [
        ("alpha", "terse"), ("alpha", "verbose"), ("beta", "terse"), ("beta", "verbose"),
    ]  # fmt: skip
    assert figures(matrix_dir) == EXPECTED
    # each cell asked its own model with its own prompt, every sample once
    asked = Counter((b["model"], b["messages"][-1]["content"].startswith("Please")) for b in server.requests)
    assert asked == {(m, v): N for m in ("alpha", "beta") for v in (False, True)}
    verbose = [b for b in server.requests if b["messages"][-1]["content"].startswith("Please")]
    assert all(b["messages"][0] == {"role": "system", "content": "You are careful."} for b in verbose)
    # the cells of one variant share a task hash, and every cell names its run after the cell
    hashes = {}
    for cell in index["cells"]:
        manifest = json.loads((matrix_dir / cell["run_dir"] / "run.json").read_text())
        assert manifest["name"] == cell["name"]
        assert "variants" not in manifest["tasks"][0]["config"]
        hashes.setdefault(cell["variant"], set()).add(manifest["tasks"][0]["task_hash"])
    assert all(len(h) == 1 for h in hashes.values()) and hashes["terse"] != hashes["verbose"]


def test_variants_alone_make_a_matrix_and_one_model_stays_one_run(tmp_path: Path, server: OpenAITestServer) -> None:
    task = write_task(tmp_path)
    proc = run_cli("run", str(task), "-m", "openai:beta", "--base-url", server.base_url, "-o", "m", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert figures(only_matrix(tmp_path / "m")) == {"beta/terse": 0.5, "beta/verbose": 0.3}
    plain = write_task(tmp_path, variants=False, name="plain")
    proc = run_cli("run", str(plain), "-m", "b=openai:beta", "--base-url", server.base_url, "-o", "one", "-q",
                   cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run_dir = only_matrix(tmp_path / "one")
    assert not (run_dir / "matrix.json").exists() and (run_dir / "samples.jsonl").is_file()
    assert json.loads((run_dir / "run.json").read_text())["name"] == "b"  # NAME=SPEC names the one run


def test_a_cell_past_its_error_limit_fails_the_matrix(tmp_path: Path, server: OpenAITestServer) -> None:
    task = write_task(tmp_path, variants=False)
    proc = run_cli("run", str(task), *models(server.base_url), "--model", "openai:broken", "--max-attempts", "1",
                   "-o", "runs", "-q", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 1, proc.stderr  # as the broken cell's own run would exit
    assert "run 'broken': 10 samples evaluated (0 already done, 10 model errors" in proc.stderr
    assert "resume with: assay run --resume" in proc.stderr
    matrix_dir = only_matrix(tmp_path / "runs")
    assert figures(matrix_dir) == {"alpha": 1.0, "beta": 0.5, "broken": None}  # the other cells ran whole


def test_duplicate_model_names_are_refused(tmp_path: Path, server: OpenAITestServer) -> None:
    task = write_task(tmp_path, variants=False)
    proc = run_cli("run", str(task), "-m", "openai:alpha", "-m", "openai:alpha", "--base-url", server.base_url,
                   "-o", "runs", "-q", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2
    assert "two models are named 'alpha'" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "runs").exists()


def test_killed_matrix_resumes_without_asking_again(tmp_path: Path) -> None:
    task = write_task(tmp_path)
    with OpenAITestServer(reply, latency_s=0.05, models=("alpha", "beta")) as srv:
        env = {**os.environ, "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
        cmd = assay_cmd("run", str(task), *models(srv.base_url), "-o", "runs", "-q", "-c", "2", "--no-cache")
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        second = lambda: lines_written(tmp_path / "runs", "*/alpha__verbose/samples.jsonl")  # noqa: E731
        wait_for(lambda: second() >= 3, 60, "3 samples of the second cell", interval=0.01, proc=proc)
        proc.send_signal(signal.SIGKILL)  # inside the second cell
        proc.wait(timeout=10)
        matrix_dir = only_matrix(tmp_path / "runs")
        had = {
            (cell.name, line["sample_id"])
            for cell in matrix_dir.iterdir()
            if (cell / "samples.jsonl").is_file()
            for line in sample_lines(cell)
        }
        assert 13 <= len(had) < 4 * N
        srv.reset()
        resumed = run_cli("run", "--resume", str(matrix_dir), "-q", cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stderr
        folder = {"alpha": {False: "alpha__terse", True: "alpha__verbose"},
                  "beta": {False: "beta__terse", True: "beta__verbose"}}  # fmt: skip
        asked = {
            (folder[b["model"]][b["messages"][-1]["content"].startswith("Please")],
             "q" + b["messages"][-1]["content"].split()[-3])
            for b in srv.requests
        }  # fmt: skip
        assert not asked & had  # nothing a cell had is asked again
        assert len(srv.requests) == 4 * N - len(had)
        assert figures(matrix_dir) == EXPECTED
        srv.reset()
        again = run_cli("run", "--resume", str(matrix_dir), "-q", cwd=tmp_path)  # a finished matrix: no request
        assert again.returncode == 0, again.stderr
        assert srv.requests == []


def test_resume_takes_models_again_by_their_names(tmp_path: Path, server: OpenAITestServer) -> None:
    task = write_task(tmp_path, variants=False)
    assert run_cli("run", str(task), *models(server.base_url), "-o", "runs", "-q", cwd=tmp_path).returncode == 0
    matrix_dir = only_matrix(tmp_path / "runs")
    server.reset()
    again = run_cli("run", "--resume", str(matrix_dir), "-m", "alpha=openai:alpha", "--base-url", server.base_url,
                    "-q", cwd=tmp_path)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert server.requests == []
    unknown = run_cli("run", "--resume", str(matrix_dir), "-m", "zeta=openai:alpha", "-q", cwd=tmp_path)
    assert unknown.returncode == 2
    assert "give each model by its name in it (alpha, beta)" in unknown.stderr and "Traceback" not in unknown.stderr
    other = run_cli("run", "--resume", str(matrix_dir), "-m", "alpha=openai:beta", "--base-url", server.base_url,
                    "-q", cwd=tmp_path)  # fmt: skip
    assert other.returncode == 2 and "would mix two models' answers" in other.stderr


def test_a_task_listing_models_runs_them_as_a_matrix_without_model(tmp_path: Path, server: OpenAITestServer) -> None:
    task = write_task(tmp_path)
    config = yaml.safe_load(task.read_text())
    config["models"] = {
        name: {"provider": "openai", "model": name, "base_url": server.base_url} for name in ("alpha", "beta")
    }
    task.write_text(yaml.safe_dump(config, sort_keys=False))
    env = {**os.environ, "OPENAI_API_KEY": "EMPTY"}
    proc = subprocess.run(assay_cmd("run", str(task), "-o", "runs", "-q"), cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    matrix_dir = only_matrix(tmp_path / "runs")
    assert json.loads((matrix_dir / "matrix.json").read_text())["models"] == ["alpha", "beta"]
    assert figures(matrix_dir) == EXPECTED
    # the Python API evaluates one model: it says so rather than picking one of the task's
    import assay
    from assay.errors import ConfigError

    with pytest.raises(ConfigError, match=r"lists 2 models: `assay run` runs them as a matrix"):
        assay.run(task, output_dir=tmp_path / "api", progress=False)
