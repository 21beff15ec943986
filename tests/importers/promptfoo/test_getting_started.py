"""promptfoo's examples/getting-started config, unchanged (two prompts, two providers, contains / icontains), run by
`assay run` against the OpenAI test server: unchanged, both providers with both prompts as a matrix (promptfoo's
view); with one --model, that model alone; with named --model options, a matrix of those. The figures are computed
by hand from the scripted replies."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from assay.testing.server import OpenAITestServer
from tests.e2e.e2e_support import sample_lines
from tests.support import assay_in_process

FIXTURE = Path(__file__).parent / "getting_started"
# (model, prompt's first word, input) -> reply; icontains ignores case, contains does not
REPLIES = {
    ("gpt-4o-mini", "Convert", "Hello world"): "Bonjour le monde",
    ("gpt-4o-mini", "Convert", "Where is the library?"): "¿DÓNDE ESTÁ LA BIBLIOTECA?",  # icontains: passes
    ("gpt-4o-mini", "Translate", "Hello world"): "bonjour le monde",  # contains is case-sensitive: fails
    ("gpt-4o-mini", "Translate", "Where is the library?"): "¿Dónde está la biblioteca?",
    ("gpt-4o", "Convert", "Hello world"): "Bonjour le monde !",
    ("gpt-4o", "Convert", "Where is the library?"): "¿Dónde queda la biblioteca?",  # another wording: fails
    ("gpt-4o", "Translate", "Hello world"): "Salut le monde",  # fails
    ("gpt-4o", "Translate", "Where is the library?"): "Dónde está la biblioteca, por favor",
}


def reply(request: dict[str, Any]) -> str:
    text = request["messages"][-1]["content"]
    return REPLIES[(request["model"], text.split()[0], text.split(": ", 1)[1])]


def _run(tmp_path: Path, server: OpenAITestServer, *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    work = tmp_path / "getting-started"
    shutil.copytree(FIXTURE, work, dirs_exist_ok=True)
    env = {"OPENAI_BASE_URL": server.base_url, "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
    env["OPENAI_API_KEY"] = os.environ.get("OPENAI_API_KEY", "EMPTY")
    return assay_in_process("run", "promptfooconfig.yaml", "-o", "runs", *args, cwd=work, env=env), work / "runs"


def _means(run_dir: Path) -> dict[str, float]:
    tasks = json.loads((run_dir / "results.json").read_text())["assay"]["tasks"]
    return {name: tasks[name]["filters"]["none"]["row_checks"]["mean"] for name in sorted(tasks)}


def test_getting_started_runs_unchanged_as_a_matrix_of_its_providers(tmp_path: Path) -> None:
    with OpenAITestServer(reply, models=("gpt-4o-mini", "gpt-4o")) as server:
        proc, runs = _run(tmp_path, server)  # no --model: promptfoo's providers, every prompt with each
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr  # failed checks are scored failures, not errors
    assert sorted(r["model"] for r in requests) == ["gpt-4o"] * 4 + ["gpt-4o-mini"] * 4
    assert {r["messages"][-1]["content"] for r in requests} >= {
        "Convert this English to French: Hello world",
        "Translate to Spanish: Where is the library?",
    }
    (matrix_dir,) = [p for p in runs.iterdir() if p.is_dir()]
    matrix = json.loads((matrix_dir / "matrix.json").read_text())
    assert matrix["models"] == ["gpt-4o-mini", "gpt-4o"]  # named as promptfoo names its providers
    cells = {c["name"]: _means(matrix_dir / c["run_dir"]) for c in matrix["cells"]}
    assert cells == {
        "gpt-4o-mini": {"Getting-started.prompt-1": 1.0, "Getting-started.prompt-2": 0.5},
        "gpt-4o": {"Getting-started.prompt-1": 0.5, "Getting-started.prompt-2": 0.5},
    }
    mini = matrix_dir / next(c["run_dir"] for c in matrix["cells"] if c["name"] == "gpt-4o-mini")
    by_id = {(r["task"], r["sample_id"]): r["filters"]["none"] for r in sample_lines(mini)}
    failed = [key for key, f in by_id.items() if not f["passed"]["row_checks"]]
    assert len(by_id) == 4 and len(failed) == 1 and failed[0][0] == "Getting-started.prompt-2"
    (check,) = by_id[failed[0]]["verdicts"]["row_checks"][0]["details"]["checks"]
    assert check["type"] == "contains" and check["passed"] is False
    assert "Matrix of 2 cells" in proc.stdout + proc.stderr


def test_one_model_given_runs_that_model_alone(tmp_path: Path) -> None:
    with OpenAITestServer(reply, models=("gpt-4o-mini", "gpt-4o")) as server:
        proc, runs = _run(tmp_path, server, "--model", "openai:gpt-4o", "--base-url", server.base_url)
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {r["model"] for r in requests} == {"gpt-4o"} and len(requests) == 4
    (run_dir,) = [p for p in runs.iterdir() if p.is_dir()]
    assert not (run_dir / "matrix.json").exists()
    assert _means(run_dir) == {"Getting-started.prompt-1": 0.5, "Getting-started.prompt-2": 0.5}


def test_getting_started_with_both_providers_as_a_matrix(tmp_path: Path) -> None:
    with OpenAITestServer(reply, models=("gpt-4o-mini", "gpt-4o")) as server:
        models = ("--model", "mini=openai:gpt-4o-mini", "--model", "4o=openai:gpt-4o", "--base-url", server.base_url)
        proc, runs = _run(tmp_path, server, *models)
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(r["model"] for r in requests) == ["gpt-4o"] * 4 + ["gpt-4o-mini"] * 4
    (matrix_dir,) = [p for p in runs.iterdir() if p.is_dir()]
    matrix = json.loads((matrix_dir / "matrix.json").read_text())
    cells = {c["name"]: _means(matrix_dir / c["run_dir"]) for c in matrix["cells"]}
    assert cells == {
        "mini": {"Getting-started.prompt-1": 1.0, "Getting-started.prompt-2": 0.5},
        "4o": {"Getting-started.prompt-1": 0.5, "Getting-started.prompt-2": 0.5},
    }
