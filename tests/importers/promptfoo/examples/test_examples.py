"""promptfoo's own examples, unchanged (upstream blob ids in sources.json), run by ``assay run`` against the scripted
server, each test's pass/fail and score compared with real promptfoo 0.123.1's on the same server (expected/*.json,
written by record.py; how each follows from promptfoo's rules: replies.py ``why``). One pytest item per verdict, so a
verdict assay gets wrong is marked alone (strict xfail, its reason naming the difference and the code at fault); one
item per example for the set of verdicts and for the requests sent to the model (their messages, model and tools)."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.importers.promptfoo.examples.replies import EXAMPLES
from tests.importers.promptfoo.examples.support import (
    HERE,
    Example,
    ExampleServer,
    assay_verdicts,
    copy_example,
    grader_models,
    load_expected,
    run_assay,
    sent_requests,
)

BY_ID = {e.id: e for e in EXAMPLES}
WORKERS = 3  # assay runs at once (each a process of its own with its own server)


@dataclass
class Ran:
    proc: subprocess.CompletedProcess[str]
    verdicts: dict[str, dict[str, Any]] | None
    problem: str | None
    requests: list[str]
    graders: list[str]
    seconds: float


def _run(example: Example, tmp: Path) -> Ran:
    started = time.monotonic()
    expected = load_expected(example)
    work = copy_example(example, tmp / example.name)
    with ExampleServer(example.reply) as server:
        proc = run_assay(example, work, server)
        requests = sent_requests(example, server.requests)
        graders = grader_models(example, server.requests)
    try:
        verdicts = assay_verdicts(work / "runs", expected["providers"])
        problem = None
    except (AssertionError, FileNotFoundError, ValueError) as exc:
        verdicts, problem = None, f"{exc}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return Ran(proc, verdicts, problem, requests, graders, time.monotonic() - started)


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Future[Ran]]]:
    """Every selected example's assay run, started at once (WORKERS at a time) on first use."""
    wanted = []
    for item in request.session.items:
        spec = getattr(item, "callspec", None)
        if spec is not None and "example_id" in spec.params and spec.params["example_id"] not in wanted:
            wanted.append(spec.params["example_id"])
    wanted.sort(key=lambda i: not BY_ID[i].slow)  # the runs that load assay's embedding model first
    root = tmp_path_factory.mktemp("examples")
    with ThreadPoolExecutor(WORKERS) as pool:
        yield {i: pool.submit(_run, BY_ID[i], root / i.replace(":", "--")) for i in wanted}


def _ran(runs: dict[str, Future[Ran]], example_id: str) -> Ran:
    ran = runs[example_id].result()
    if ran.verdicts is None:
        pytest.fail(f"assay gave no verdicts for {example_id}: {ran.problem}")
    return ran


def _marked(example: Example, key: str, *args: Any) -> Any:
    reason = example.xfail.get(key) or example.xfail.get("*")
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(example.id, *args, id=f"{example.id}|{key}" if args else example.id, marks=marks)


VERDICTS = [_marked(e, k, k) for e in EXAMPLES for k in load_expected(e)["results"]]


@pytest.mark.parametrize(("example_id", "key"), VERDICTS)
def test_verdict_is_promptfoos(runs: dict[str, Future[Ran]], example_id: str, key: str) -> None:
    theirs = load_expected(BY_ID[example_id])["results"][key]
    verdicts = _ran(runs, example_id).verdicts
    assert verdicts is not None
    assert key in verdicts, f"assay has no verdict {key}; it has {sorted(verdicts)}"
    mine = verdicts[key]
    limit = BY_ID[example_id].latency_ms
    took = 1000 * float((mine.get("record") or {}).get("responses", [{}])[0].get("latency_s") or 0)
    if limit is not None and took >= limit:
        pytest.skip(f"the model call took {took:.0f} ms, past the config's latency threshold {limit} ms: too busy")
    assert (mine["pass"], mine["score"]) == (theirs["pass"], pytest.approx(theirs["score"], abs=1e-9)), (
        f"promptfoo: pass={theirs['pass']} score={theirs['score']} {theirs['components']} ({theirs['reason']}); "
        f"assay: pass={mine['pass']} score={mine['score']} error={mine.get('error')} "
        f"{json.dumps((mine.get('record') or {}).get('filters', {}).get('none', {}).get('verdicts'))[:1500]}"
    )
    if key.startswith("echo|"):  # echo's output is the rendered prompt: the same text in both tools
        assert mine["record"]["responses"][0]["text"] == theirs["output"]


@pytest.mark.parametrize("example_id", [_marked(e, "rows") for e in EXAMPLES])
def test_rows_are_promptfoos(runs: dict[str, Future[Ran]], example_id: str) -> None:
    """assay judges the same prompt x provider x test cells as promptfoo, no more, no fewer."""
    verdicts = _ran(runs, example_id).verdicts
    assert verdicts is not None
    assert sorted(verdicts) == sorted(load_expected(BY_ID[example_id])["results"])


@pytest.mark.parametrize("example_id", [_marked(e, "requests") for e in EXAMPLES])
def test_requests_are_promptfoos(runs: dict[str, Future[Ran]], example_id: str) -> None:
    """The model under test is sent what promptfoo sends it: the same messages, model, tools (hashes; distinct ones,
    since a retried request under load is logged twice)."""
    assert set(_ran(runs, example_id).requests) == set(load_expected(BY_ID[example_id])["requests"])


@pytest.mark.parametrize("example_id", [_marked(e, "graders") for e in EXAMPLES])
def test_graders_are_promptfoos(runs: dict[str, Future[Ran]], example_id: str) -> None:
    """The model-graded checks are graded by the models promptfoo grades them with (distinct: a retried request
    under load is logged twice)."""
    assert set(_ran(runs, example_id).graders) == set(load_expected(BY_ID[example_id])["graders"])


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.id for e in EXAMPLES])
def test_every_verdict_is_worked_out_by_hand(example: Example) -> None:
    """replies.py says for every verdict promptfoo gave how its pass and score follow from promptfoo's rules."""
    assert sorted(example.why) == sorted(load_expected(example)["results"])
    unknown = set(example.xfail) - set(example.why) - {"*", "rows", "requests", "graders"}
    assert not unknown, f"xfail marks for verdicts promptfoo did not give: {unknown}"


def test_examples_are_upstream_files_unchanged() -> None:
    """Every file of every example folder is an upstream file at the blob id sources.json records (the folder holds
    nothing else), and there are at least 20 examples run against promptfoo's verdicts."""
    sources = json.loads((HERE / "sources.json").read_text())
    assert len({e.id for e in EXAMPLES}) >= 20
    assert {e.name for e in EXAMPLES} <= set(sources)
    for name, entry in sources.items():
        folder = HERE / name
        on_disk = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
        on_disk = [p for p in on_disk if "__pycache__" not in p]
        assert on_disk == sorted(entry["files"]), name
        for rel, meta in entry["files"].items():
            blob = subprocess.run(["git", "hash-object", str(folder / rel)], capture_output=True, text=True)
            assert blob.stdout.strip() == meta["blob"], f"{name}/{rel} differs from upstream {meta['path']}"
            assert meta["path"] == f"{entry['upstream'].split(':', 1)[1]}/{rel}"
