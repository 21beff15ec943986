"""``assay optimize`` given bad input, from the command line (a real process each): a clear message naming the key,
file or line and a non-zero exit, never a traceback; settings that would switch a guard off are refused; nothing
it writes holds a credential; and its candidate runs do not cache unless asked to."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.testing.server import OpenAITestServer

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "optimize_format" / "task.yaml"
REFLECT = ["--optimizer-model", "python:assay.optimize.demo:reflect"]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASSAY_CACHE_DIR": str(cwd / "cache"), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "assay", "optimize", *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


def refused(out: subprocess.CompletedProcess[str], *needles: str, code: int = 2) -> None:
    """Exit ``code`` with a message holding every needle, and no traceback."""
    text = out.stderr + out.stdout
    assert out.returncode == code, text
    assert "Traceback" not in text, text
    for needle in needles:
        assert needle in text, text


def search(space: str, *extra: str) -> list[str]:
    return [str(DEMO), "-s", "search", "--space", space, "-b", "100", "--output", "out", *extra]


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (search('{"temperature":{"type":"float","low":NaN,"high":1}}'), ["--space", "NaN is not a number"]),
        (search('{"temperature":{"type":"float","low":-1e309,"high":1}}'), ["space.temperature.low", "finite"]),
        (search('{"seed":{"type":"int","low":0,"high":1000000000000}}', "--sampler", "grid"),
         ["space: the grid has 1,000,000,000,001 points", "seed: 1000000000001"]),
        (search('{"temperature":{"type":"float","low":0,"high":1,"step":0}}', "--sampler", "grid"),
         ["space.temperature.step", "greater than 0"]),
        (search('{"temprature":{"type":"float","low":0,"high":1}}'),
         ["space.temprature: not a generation parameter (did you mean 'temperature'?)"]),
        (search('{"temperature":{"type":"float","low":-1,"high":1}}'),
         ["space.temperature.low: -1.0 is not a valid temperature"]),
        ([str(DEMO), *REFLECT, "-b", "100", "--budget-usd", "nan"], ["--budget-usd", "finite amount"]),
        ([str(DEMO), *REFLECT, "-b", "100", "--budget-usd", "inf"], ["--budget-usd", "finite amount"]),
    ],
)  # fmt: skip
def test_bad_input_is_refused_with_a_message_before_anything_runs(
    tmp_path: Path, args: list[str], needles: list[str]
) -> None:
    (tmp_path / "questions.jsonl").write_text((DEMO.parent / "questions.jsonl").read_text())
    refused(cli(*args, cwd=tmp_path), *needles)
    assert not (tmp_path / "out").exists() and not (tmp_path / "runs").exists()


def test_a_non_number_in_prices_names_the_file_and_key(tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"assay-test": {"input": "cheap", "output": 1}}))
    out = cli(str(DEMO), *REFLECT, "-b", "100", "--prices", str(prices), "--output", "out", cwd=tmp_path)
    refused(out, "--prices", "prices.json", "prices.assay-test.input: expected a non-negative number")
    prices.write_text('{"assay-test": {"input": NaN}}')
    out = cli(str(DEMO), *REFLECT, "-b", "100", "--prices", str(prices), "--output", "out", cwd=tmp_path)
    refused(out, "prices.json", "NaN is not a number")
    assert not (tmp_path / "out").exists()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_optimiser_model_fails_with_a_message_and_counts_its_calls(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    from assay.runner.settings import RunSettings

    out = cli(str(DEMO), "--optimizer-model", "openai:reflector", "--optimizer-base-url", url, "-b", "100",
              "--output", "out", cwd=tmp_path)  # fmt: skip
    refused(out, "the optimiser model 'reflector' did not answer", "127.0.0.1", "Resume with", code=1)
    (folder,) = (tmp_path / "out").iterdir()
    assert json.loads((folder / "optimization.json").read_text())["status"] == "failed"
    calls = (folder / "calls.log").read_text().splitlines()
    attempts = RunSettings.model_fields["max_attempts"].default
    assert sum(line.startswith("propose ") for line in calls) == attempts  # every attempt was counted
    out = cli("--resume", str(folder), "--max-attempts", "1", cwd=tmp_path)  # still unreachable: one more attempt
    refused(out, "did not answer", code=1)
    calls = (folder / "calls.log").read_text().splitlines()
    assert sum(line.startswith("propose ") for line in calls) == attempts + 1


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small finished optimisation of the demo (offline models)."""
    cwd = tmp_path_factory.mktemp("finished")
    out = cli(str(DEMO), *REFLECT, "-b", "80", "--output", "opt", "-q", cwd=cwd)
    assert out.returncode == 0, out.stderr
    (folder,) = (cwd / "opt").iterdir()
    return folder


def _copy(folder: Path, tmp_path: Path) -> Path:
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    return copy


def test_a_garbage_line_in_the_journal_names_the_file_and_line(finished: Path, tmp_path: Path) -> None:
    folder = _copy(finished, tmp_path)
    lines = (folder / "journal.jsonl").read_text().splitlines(keepends=True)
    lines.insert(2, "this is not json\n")
    (folder / "journal.jsonl").write_text("".join(lines))
    refused(cli("--resume", str(folder), cwd=tmp_path), "journal.jsonl:3: not a journal entry")
    lines[2] = '{"kind": "eval", "key": "abc", "cid": 1}\n'
    (folder / "journal.jsonl").write_text("".join(lines))
    refused(cli("--resume", str(folder), cwd=tmp_path), "journal.jsonl:3: a eval entry without a valid 'cid'")
    del lines[2]
    (folder / "journal.jsonl").write_text("".join(lines))
    (folder / "calls.log").write_text("eval 0123456789abcdef0123\nrubbish\n")
    refused(cli("--resume", str(folder), cwd=tmp_path), "calls.log:2: not a call record")


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda text, m: text.replace('"budget":', '"budget": ,', 1), "optimization.json:"),
        (lambda text, m: json.dumps({**m, "budget": "lots"}), "optimization.json: budget: Input should be a valid"),
        (lambda text, m: json.dumps({**m, "budget_usd": -1}), "optimization.json: budget_usd: Input should be greater"),
        (lambda text, m: json.dumps({k: v for k, v in m.items() if k != "splits"}), "optimization.json: splits:"),
        (lambda text, m: json.dumps({**m, "splits": {**m["splits"], "val": [10_000]}}),
         "splits.val[0]: row 10000 is not in the dataset (90 rows)"),
        (lambda text, m: json.dumps({**m, "spec": {**m["spec"], "minibatch": 0}}),
         "optimization.json: spec.minibatch: Input should be greater than or equal to 1"),
        (lambda text, m: json.dumps({**m, "run_settings": {"concurrency": "many"}}),
         "optimization.json: run_settings: concurrency"),
        (lambda text, m: json.dumps([m]), "optimization.json: expected a JSON object"),
    ],
)  # fmt: skip
def test_a_hand_edited_manifest_names_the_file_and_key(
    finished: Path, tmp_path: Path, edit: Callable[[str, dict[str, Any]], str], needle: str
) -> None:
    folder = _copy(finished, tmp_path)
    path = folder / "optimization.json"
    text = path.read_text()
    path.write_text(edit(text, json.loads(text)))
    refused(cli("--resume", str(folder), cwd=tmp_path), needle)
    if "not in the dataset" in needle:
        return  # the report reads no dataset rows through the splits
    env = {**os.environ, "COLUMNS": "200"}
    report = subprocess.run([sys.executable, "-m", "assay", "report", str(folder)], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    refused(report, needle)  # `assay report OPT_DIR` reads the same file the same way


def test_an_unknown_space_parameter_of_the_tasks_own_is_allowed(tmp_path: Path) -> None:
    """A server-specific parameter is searched once the task's generation: section sets it (no typo then)."""
    from assay.optimize.spec import parse_spec
    from assay.tasks import load_task
    from tests.optimize.optimize_support import task_config

    task = task_config(tmp_path, strategy="search", space={"min_p": {"type": "float", "low": 0, "high": 0.2}})
    task.write_text(task.read_text() + "generation: {min_p: 0.1}\n")
    assert "min_p" in parse_spec(load_task(task)).space


@pytest.fixture
def keyed_server() -> Iterator[OpenAITestServer]:
    from assay.optimize.demo import reply_text
    from assay.testing.server import last_user_text

    with OpenAITestServer(lambda request: reply_text(last_user_text(request))) as srv:
        yield srv


def test_credentials_in_base_urls_reach_no_file_and_no_output(tmp_path: Path, keyed_server: OpenAITestServer) -> None:
    base = keyed_server.base_url.replace("http://", "http://u:SECRET@") + "?api_key=S2"
    task = tmp_path / "task.yaml"
    task.write_text(DEMO.read_text().replace("model: {provider: python, target: assay.optimize.demo:answer}\n", ""))
    (tmp_path / "questions.jsonl").write_text((DEMO.parent / "questions.jsonl").read_text())
    models = ["--model", "openai:assay-test", "--base-url", base,
              "--optimizer-model", "openai:assay-test", "--optimizer-base-url", base]  # fmt: skip
    out = cli(str(task), *models, "-b", "100", "--output", "out", "--cache", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert keyed_server.last_authorization is not None and keyed_server.last_authorization.startswith("Basic ")
    (folder,) = (tmp_path / "out").iterdir()
    manifest = json.loads((folder / "optimization.json").read_text())
    assert manifest["model"]["base_url"].startswith("http://u:***@127.0.0.1")

    def leaks(text: str) -> bool:
        return "SECRET" in text or "S2" in text

    def written() -> list[Path]:
        return [p for p in tmp_path.rglob("*") if p.is_file() and p.name not in ("task.yaml", "questions.jsonl")]

    assert len(written()) > 20 and any(p.suffix == ".sqlite" for p in written())  # runs, journal, cache, ...
    assert not [str(p) for p in written() if leaks(p.read_bytes().decode("utf-8", "replace"))]
    assert not leaks(out.stdout + out.stderr)
    # the folder cannot rebuild such a model: a resume asks for it again, then finishes without a leak either
    refused(cli("--resume", str(folder), cwd=tmp_path), "give it again (--model / --base-url)")
    again = cli("--resume", str(folder), *models, "-q", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert not [str(p) for p in written() if leaks(p.read_bytes().decode("utf-8", "replace"))]


def test_candidate_runs_do_not_cache_unless_asked(tmp_path: Path) -> None:
    """The response cache is opt-in (README): `assay optimize` wrote every candidate's answers to the user's cache
    folder unless given --no-cache."""
    out = cli(str(DEMO), *REFLECT, "-b", "27", "--output", "out", "-q", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert not list((tmp_path / "cache").glob("*.sqlite"))
    out = cli(str(DEMO), *REFLECT, "-b", "27", "--output", "out2", "-q", "--cache", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert list((tmp_path / "cache").glob("*.sqlite"))


def test_a_bootstrap_with_no_passing_row_says_so(tmp_path: Path) -> None:
    """Nothing passed, so the bootstrap had no outputs of the model's own to show: it silently used labelled rows."""
    with OpenAITestServer("banana") as srv:
        model = ["--model", "openai:assay-test", "--base-url", srv.base_url]
        fewshot = ["-s", "fewshot", "--fewshot-method", "bootstrap", "--demos", "2"]
        out = cli(str(DEMO), *model, *fewshot, "-b", "120", "--output", "out", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "warning: fewshot bootstrap: none of the 32 training rows it ran passed exact_match" in out.stderr
    (folder,) = (tmp_path / "out").iterdir()
    for name in ("optimization.json", "summary.json"):
        (warning,) = json.loads((folder / name).read_text())["warnings"]
        assert "demos are training rows as labelled instead (method random)" in warning
    lineage = json.loads((folder / "lineage.json").read_text())
    assert {c["origin"] for c in lineage if c["candidate"]["demos"]} == {"random"}
