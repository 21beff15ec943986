"""Issue 40: one command runs a matrix of a Python agent and two OpenAI-compatible servers on different base URLs,
each model given by a JSON spec (the keys of a task's ``model:`` section) or a plain spec that takes ``--base-url``.
Each cell's requests reach its own server with its own credentials, the figures are right, and no header value or
API key given in a spec is written to any file or printed."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.results import load_run
from assay.testing.server import OpenAITestServer
from tests.e2e.e2e_support import run_cli
from tests.matrix.matrix_support import EXPECTED, N, reply, write_task

KEY = "sk-json-spec-key-31c07d"  # server A's API key, given as the spec's api_key
TOKEN = "hdr-json-spec-token-8be4a1"  # server B's bearer token, given as a header of the spec
TEAM = "hdr-json-spec-team-55d0f2"  # another header value: never written either

AGENT = '''
def answer(prompt):
    """Always right: the sum of the two numbers that end the question."""
    words = prompt.replace("?", "").split()
    return str(int(words[-3]) + int(words[-1]))
'''


@pytest.fixture
def servers() -> Iterator[tuple[OpenAITestServer, OpenAITestServer]]:
    """Server A answers as model alpha and needs KEY; server B answers as beta and needs TOKEN."""
    with (
        OpenAITestServer(reply, models=("alpha",), api_key=KEY) as a,
        OpenAITestServer(reply, models=("beta",), api_key=TOKEN) as b,
    ):
        yield a, b


def figures(matrix_dir: Path) -> dict[str, float | None]:
    index = json.loads((matrix_dir / "matrix.json").read_text())
    out = {}
    for cell in index["cells"]:
        row = load_run(matrix_dir / cell["run_dir"]).row("add", "exact_match")
        assert row is not None
        out[cell["name"]] = row.mean
    return out


def mixed_models(a: OpenAITestServer, b: OpenAITestServer) -> list[str]:
    """agent: a Python function (JSON spec, ``target``); alpha: server A by its spec's base_url and api_key, with
    params of its own; beta: server B by --base-url, authorised by its spec's headers. --base-url names a third
    address that must reach nobody but beta."""
    agent = {"provider": "python", "target": "mixed_agent:answer"}
    alpha = {"provider": "openai", "model": "alpha", "base_url": a.base_url, "api_key": KEY,
             "params": {"temperature": 0, "seed": 1}}  # fmt: skip
    beta = {"provider": "openai", "model": "beta", "headers": {"Authorization": f"Bearer {TOKEN}", "X-Team": TEAM}}
    return [
        "--model", f"agent={json.dumps(agent)}",
        "--model", f"alpha={json.dumps(alpha)}",
        "--model", f"beta={json.dumps(beta)}",
        "--base-url", b.base_url,
        "--param", "seed=7", "--param", "max_tokens=20",
    ]  # fmt: skip


def test_a_python_agent_and_two_servers_in_one_matrix(
    tmp_path: Path, servers: tuple[OpenAITestServer, OpenAITestServer]
) -> None:
    a, b = servers
    (tmp_path / "mixed_agent.py").write_text(AGENT)
    task = write_task(tmp_path)
    proc = run_cli("run", str(task), *mixed_models(a, b), "-o", "runs", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (matrix_dir,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    index = json.loads((matrix_dir / "matrix.json").read_text())
    assert index["models"] == ["agent", "alpha", "beta"] and index["variants"] == ["terse", "verbose"]
    # each server was asked by its own model only, every sample of both variants once; the agent asked nobody
    assert Counter(body["model"] for body in a.requests) == {"alpha": 2 * N}
    assert Counter(body["model"] for body in b.requests) == {"beta": 2 * N}
    assert a.status_counts == {200: 2 * N} and b.status_counts == {200: 2 * N}  # the spec's key and header let in
    assert a.last_authorization == f"Bearer {KEY}" and b.last_authorization == f"Bearer {TOKEN}"
    # alpha's own params, with --param added where alpha gives none (its seed wins); beta gets --param's alone
    assert {(body["temperature"], body["seed"], body["max_tokens"]) for body in a.requests} == {(0, 1, 20)}
    assert {("temperature" in body, body["seed"], body["max_tokens"]) for body in b.requests} == {(False, 7, 20)}
    assert figures(matrix_dir) == {"agent/terse": 1.0, "agent/verbose": 1.0, **EXPECTED}
    # each cell's run records the model it ran: the agent, alpha on A, beta on --base-url's B
    recorded = {}
    for cell in index["cells"]:
        manifest = json.loads((matrix_dir / cell["run_dir"] / "run.json").read_text())
        assert manifest["status"] == "finished" and manifest["name"] == cell["name"]
        recorded[cell["name"]] = (manifest["model"]["provider"], manifest["model"].get("base_url"))
    assert recorded["agent/terse"] == ("python", None)
    assert recorded["alpha/verbose"] == ("openai", a.base_url) and recorded["beta/terse"] == ("openai", b.base_url)
    # no key and no header value in any file the matrix wrote, nor in what it printed; the page neither
    page = tmp_path / "page.html"
    assert run_cli("report", str(matrix_dir), "--html", str(page), cwd=tmp_path).returncode == 0
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".py" and "cache" not in p.parts]
    assert any(p.name == "results.json" for p in written) and any(p.name == "matrix.json" for p in written)
    for secret in (KEY, TOKEN, TEAM):
        assert [str(p.relative_to(tmp_path)) for p in written if secret.encode() in p.read_bytes()] == []
        assert secret not in proc.stdout + proc.stderr


def test_resume_takes_a_json_spec_again_by_name(
    tmp_path: Path, servers: tuple[OpenAITestServer, OpenAITestServer]
) -> None:
    """beta without its header is refused by its server (the cell stops, resumable); resumed with beta's JSON spec
    again by name, the header reaches the server and only beta's cell asks anything."""
    a, b = servers
    (tmp_path / "mixed_agent.py").write_text(AGENT)
    task = write_task(tmp_path, variants=False)
    models = mixed_models(a, b)
    no_header = {"provider": "openai", "model": "beta"}
    first = [*models[:4], "--model", f"beta={json.dumps(no_header)}", *models[6:]]
    proc = run_cli("run", str(task), *first, "-o", "runs", "-q", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr  # key rejected: stopped, resumable
    assert "resume with: assay run --resume" in proc.stderr
    (matrix_dir,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    assert len(a.requests) == N and b.status_counts.get(401)
    a.reset()
    b.reset()
    again = run_cli("run", "--resume", str(matrix_dir), *models[4:], "-q", cwd=tmp_path)  # beta={...}, --base-url
    assert again.returncode == 0, again.stderr
    assert a.requests == [] and Counter(body["model"] for body in b.requests) == {"beta": N}
    assert b.last_authorization == f"Bearer {TOKEN}"
    assert figures(matrix_dir) == {"agent": 1.0, "alpha": 1.0, "beta": 0.5}
    written = [p for p in (tmp_path / "runs").rglob("*") if p.is_file()]
    assert not [p for p in written if TOKEN.encode() in p.read_bytes() or TEAM.encode() in p.read_bytes()]


def test_one_json_model_is_one_run(tmp_path: Path, servers: tuple[OpenAITestServer, OpenAITestServer]) -> None:
    """A single --model NAME={json} is one ordinary run, against the spec's own server, named NAME."""
    a, b = servers
    task = write_task(tmp_path, variants=False)
    spec = {
        "provider": "openai",
        "model": "beta",
        "base_url": b.base_url,
        "headers": {"Authorization": f"Bearer {TOKEN}"},
    }
    proc = run_cli("run", str(task), "--model", f"b={json.dumps(spec)}", "-o", "one", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = [p for p in (tmp_path / "one").iterdir() if p.is_dir()]
    assert not (run_dir / "matrix.json").exists()
    assert json.loads((run_dir / "run.json").read_text())["name"] == "b"
    assert len(b.requests) == N and a.requests == []
    row = load_run(run_dir).row("add", "exact_match")
    assert row is not None and row.mean == 0.5
    assert not [p for p in run_dir.rglob("*") if p.is_file() and TOKEN.encode() in p.read_bytes()]
