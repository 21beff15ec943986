"""The per-run fixed costs cut for many small runs keep their guarantees: derived writes may skip fsync only when
asked, and the git hash is asked of git once per state."""

import os
import subprocess
import time

import pytest

from assay.atomicfile import atomic_write_text
from assay.record import SampleRecord
from assay.runner import gitinfo
from assay.runner.gitinfo import GitHash
from assay.store import rundir


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
