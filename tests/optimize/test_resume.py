"""An optimisation killed with SIGKILL resumes where it stopped: it replays its journal without model calls, resumes
the half-finished candidate run, and reaches the same trials and verdict as one that was never interrupted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from assay.optimize.demo import reflect_text, respond
from assay.testing.server import OpenAITestServer, last_user_text
from tests.optimize.optimize_support import journal, task_config
from tests.support import wait_for


def _cli(task: Path | None, out: Path, task_url: str, opt_url: str, *extra: str) -> list[str]:
    args = [sys.executable, "-m", "assay", "optimize"]
    if task is not None:
        args += [str(task), "--budget", "120", "--output", str(out)]
    args += ["--model", "openai:assay-test", "--base-url", task_url]
    args += ["--optimizer-model", "openai:assay-test", "--optimizer-base-url", opt_url]
    return [*args, "--no-cache", "--concurrency", "2", *extra]


def _trials(folder: Path) -> list[tuple[str, str, float]]:
    return [(e["cid"], e["split"], round(e["mean"], 6)) for e in journal(folder) if e["kind"] == "trial"]


def _folder(out: Path) -> Path:
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return folder


def test_resume_after_sigkill_reaches_the_same_result(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "200"}
    task = task_config(tmp_path)
    task_srv = OpenAITestServer(lambda b: respond(last_user_text(b)), latency_s=0.03)
    opt_srv = OpenAITestServer(lambda b: reflect_text(last_user_text(b)))
    with task_srv, opt_srv:
        ref = subprocess.run(
            _cli(task, tmp_path / "ref", task_srv.base_url, opt_srv.base_url), env=env, capture_output=True, text=True,
            timeout=120, cwd=tmp_path,
        )  # fmt: skip
        assert ref.returncode == 0, ref.stderr
        ref_requests = task_srv.requests_total
        task_srv.reset()
        opt_srv.reset()
        out = tmp_path / "killed"
        proc = subprocess.Popen(
            _cli(task, out, task_srv.base_url, opt_srv.base_url), env=env, cwd=tmp_path,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_for(  # kill mid-way: after the optimiser was asked, inside a candidate run
            lambda: opt_srv.requests_total >= 1 and task_srv.requests_total >= 42, 60,
            "the optimiser asked once and 42 task requests (mid-way through a candidate's run)", interval=0.005,
            proc=proc,
        )  # fmt: skip
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        folder = _folder(out)
        assert not (folder / "summary.json").exists()  # it really was cut short, inside a candidate's run
        statuses = [json.loads(p.read_text())["status"] for p in folder.glob("runs/*/*/run.json")]
        assert "running" in statuses
        before = len(journal(folder))
        killed_task, killed_opt = task_srv.requests_total, opt_srv.requests_total
        resumed = subprocess.run(
            [sys.executable, "-m", "assay", "optimize", "--resume", str(folder), "-q"], env=env,
            capture_output=True, text=True, timeout=120, cwd=tmp_path,
        )  # fmt: skip
        assert resumed.returncode == 0, resumed.stderr
    ref_folder = _folder(tmp_path / "ref")
    assert _trials(folder) == _trials(ref_folder)
    summary = json.loads((folder / "summary.json").read_text())
    ref_summary = json.loads((ref_folder / "summary.json").read_text())
    assert summary["best"] == ref_summary["best"] and summary["improved"] and ref_summary["improved"]
    assert len(journal(folder)) > before
    # nothing that finished was asked again: only requests in flight at the kill (concurrency 2) are paid twice
    twice = task_srv.requests_total - ref_requests
    assert 0 <= twice <= 2
    # and those are counted: every call the two sessions sent, those cut off by the kill too (each was logged
    # before it went out), is in the count, which is the uninterrupted run's plus the calls made twice. A call
    # logged an instant before the kill may never have reached the server: it is counted all the same (the count
    # is never below what was sent, and exceeds it by at most the calls in flight)
    calls, ref_calls = summary["calls"], ref_summary["calls"]
    extra = calls["task_model"] - ref_calls["task_model"]
    assert twice <= extra <= 2 and calls["used"] == ref_calls["used"] + extra
    assert task_srv.requests_total + extra - twice == calls["task_model"] + calls["final_test"]
    assert opt_srv.requests_total == calls["optimizer"] == ref_calls["optimizer"]
    assert killed_task > 0 and killed_opt >= 1


async def test_resume_refuses_a_changed_dataset(tmp_path: Path) -> None:
    import pytest

    from assay.errors import ConfigError
    from assay.optimize import aoptimize
    from tests.optimize.optimize_support import NO_CACHE

    task = task_config(tmp_path)
    result = await aoptimize(
        str(task), {"provider": "python", "target": "assay.optimize.demo:answer"},
        optimizer_model="python:assay.optimize.demo:reflect", budget=100, output_dir=tmp_path / "out",
        run_settings=NO_CACHE,
    )  # fmt: skip
    data = tmp_path / "questions.jsonl"
    data.write_text(data.read_text().replace('"answer": "yes"', '"answer": "no"', 1))
    with pytest.raises(ConfigError, match="changed since the optimisation started"):
        await aoptimize(resume=result.folder)


def test_calls_in_flight_at_a_kill_are_counted_by_the_resumed_session(tmp_path: Path) -> None:
    """Killed while the optimiser's reply was on its way, then while the child's minibatch requests were: the resumed
    sessions sent those requests again, and paid for them twice. The calls cut off used to be counted by no one (the
    count took finished steps only); each was logged before it went out, so now it is counted."""
    import asyncio

    from assay.optimize.demo import RULE_CONCISE

    env = {**os.environ, "COLUMNS": "200"}
    task = task_config(tmp_path)
    hold = {"child": False}

    async def task_reply(body: dict) -> str:
        prompt = last_user_text(body)
        if hold["child"] and RULE_CONCISE in prompt:
            await asyncio.sleep(60)  # never answered before the kill
        return respond(prompt)

    task_srv = OpenAITestServer(task_reply)
    opt_srv = OpenAITestServer(lambda b: reflect_text(last_user_text(b)), latency_s=60.0)

    def logged() -> int:
        """The calls the sessions logged in calls.log (each before it was sent)."""
        found = list((tmp_path / "out").glob("*/calls.log"))
        return len(found[0].read_bytes().splitlines()) if found else -1

    def killed(until: Callable[[], bool], what: str, *args: str) -> None:
        proc = subprocess.Popen(args, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(until, 60, what, interval=0.005, proc=proc)
        # the process waits for the requests on the wire: every call it logged has reached a server (none is
        # logged and still on its way), so the counts below are those of a kill while calls are in flight
        sent = lambda: task_srv.requests_total + opt_srv.requests_total  # noqa: E731
        wait_for(lambda: logged() == sent(), 60, "every call in calls.log to have reached the servers", proc=proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)

    with task_srv, opt_srv:
        start = _cli(task, tmp_path / "out", task_srv.base_url, opt_srv.base_url)
        killed(lambda: opt_srv.requests_total >= 1, "the first reflection in flight", *start)
        folder = _folder(tmp_path / "out")
        assert opt_srv.requests_total == 1 and not any(e["kind"] == "propose" for e in journal(folder))
        opt_srv.latency_s = 0.0
        hold["child"] = True
        resume = [sys.executable, "-m", "assay", "optimize", "--resume", str(folder), "-q"]
        in_flight = lambda: sum(RULE_CONCISE in last_user_text(b) for b in task_srv.requests) >= 2  # noqa: E731
        killed(in_flight, "two of the child's minibatch requests (concurrency 2) in flight", *resume)
        cut_off = sum(RULE_CONCISE in last_user_text(b) for b in task_srv.requests)
        assert cut_off == 2
        hold["child"] = False
        done = subprocess.run(resume, env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    calls = json.loads((folder / "summary.json").read_text())["calls"]
    assert opt_srv.requests_total == calls["optimizer"] >= 2  # the cut-off reflection, and its repeat
    assert task_srv.requests_total == calls["task_model"] + calls["final_test"]  # the two cut off requests too
    assert calls["used"] == calls["task_model"] + calls["optimizer"] <= calls["budget"]
