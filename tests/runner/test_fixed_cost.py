"""The per-run fixed costs cut for many small runs keep their guarantees: samples never become durable before
their run.json, derived writes may skip fsync only when asked, and the git hash is asked of git once per state."""

import os
import subprocess
import threading
import time

import pytest

from assay.record import SampleRecord
from assay.runner import gitinfo
from assay.runner.gitinfo import GitHash
from assay.store import rundir
from assay.store.rundir import SAMPLES, SampleWriter, atomic_write_text


def record(i: int) -> SampleRecord:
    return SampleRecord(task="t", task_hash="h", doc_id=i, sample_id=f"s{i}", doc={}, prompt="p", messages=[])


def _fsync_spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    synced: list[str] = []
    real = os.fsync

    def spy(fd: int) -> None:
        real(fd)
        synced.append(os.path.basename(os.readlink(f"/proc/self/fd/{fd}")))

    monkeypatch.setattr(rundir.os, "fsync", spy)
    return synced


def test_samples_become_durable_only_after_the_manifest_named_first(tmp_path, monkeypatch):
    synced = _fsync_spy(monkeypatch)
    manifest = tmp_path / "run.json"
    atomic_write_text(manifest, "{}", durable=False)
    assert synced == []  # not on the request path
    release = threading.Event()
    real_sync = rundir.sync_file

    def slow_sync(path):
        release.wait(5)
        real_sync(path)

    monkeypatch.setattr(rundir, "sync_file", slow_sync)
    writer = SampleWriter(tmp_path / SAMPLES, fsync_every=1, sync_first=manifest)
    threading.Timer(0.2, release.set).start()
    t0 = time.perf_counter()
    writer.write(record(0))  # a checkpoint: must wait for run.json's fsync
    assert time.perf_counter() - t0 >= 0.15
    assert synced[:2] == ["run.json", SAMPLES]
    writer.write(record(1))
    writer.close()
    assert synced.count("run.json") == 1


def test_a_manifest_that_cannot_be_synced_fails_the_checkpoint(tmp_path):
    writer = SampleWriter(tmp_path / SAMPLES, sync_first=tmp_path / "missing.json")
    writer.write(record(0))  # the line itself is written (a kill keeps it)
    with pytest.raises(FileNotFoundError):
        writer.close()
    assert (tmp_path / SAMPLES).read_text().count("\n") == 1


def test_atomic_write_fsyncs_unless_told_not_to(tmp_path, monkeypatch):
    synced = _fsync_spy(monkeypatch)
    atomic_write_text(tmp_path / "a.json", "1")
    assert len(synced) == 1
    atomic_write_text(tmp_path / "a.json", "2", durable=False)
    assert len(synced) == 1 and (tmp_path / "a.json").read_text() == "2"


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def _head(repo) -> str:
    out = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip()


def test_git_hash_is_asked_once_per_directory_and_follows_new_commits(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "one")
    monkeypatch.chdir(repo)
    monkeypatch.setattr(gitinfo, "_CACHE", {})
    spawned: list[list[str]] = []
    real_popen = subprocess.Popen

    def counting_popen(args, **kwargs):
        if args[:2] == ["git", "rev-parse"]:  # the runner's own call (not this test's ``git -C``)
            spawned.append(args)
        return real_popen(args, **kwargs)

    monkeypatch.setattr(gitinfo.subprocess, "Popen", counting_popen)
    first = _head(repo)
    assert GitHash().result() == first and len(spawned) == 1
    assert GitHash().result() == first and len(spawned) == 1  # the same state: no git child
    time.sleep(0.01)
    _git(repo, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "two")
    second = _head(repo)
    assert second != first
    assert GitHash().result() == second and len(spawned) == 2  # a new commit is seen
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.chdir(plain)
    assert GitHash().result() is None and len(spawned) == 3  # another directory: asked for itself
