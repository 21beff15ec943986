"""The run folder: ``run.json`` (written atomically) and ``samples.jsonl`` (append-only, resumable).

Writing lives here; reading ``samples.jsonl`` (index, streams, resume keys) in :mod:`assay.store.sampleindex`."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from assay.atomicfile import NEW_FILE_MODE, atomic_file, atomic_write_text, kernel_copy
from assay.errors import DataError
from assay.record import RunManifest, SampleRecord
from assay.store.growth import Growth
from assay.store.jsonlfiles import CALIBRATIONS, LABELS, append_jsonl, iter_jsonl  # labels, calibration records
from assay.store.sampleindex import SAMPLES

__all__ = [
    "CALIBRATIONS",
    "LABELS",
    "MANIFEST",
    "SampleWriter",
    "append_jsonl",
    "drop_samples",
    "iter_jsonl",
    "read_manifest",
    "remove_leftovers",
    "repair_torn_tail",
    "sync_file",
    "write_manifest",
]

MANIFEST = "run.json"


def sync_file(path: Path) -> None:
    """fsync a file already written (made durable against a power cut)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_manifest(run_dir: Path, manifest: RunManifest, *, durable: bool = True) -> None:
    """Replace ``run.json`` atomically (see :func:`atomic_write_text` for ``durable``); credentials in the task
    configs' URLs (a judge's ``base_url``) and in the judges' specs are never written, whoever built the manifest
    (a run, ``assay score``)."""
    from assay.secrets import redact_spec

    tasks = [info.without_credentials() for info in manifest.tasks]
    recorded = manifest.model_copy(update={"tasks": tasks, "judges": [redact_spec(j) for j in manifest.judges]})
    atomic_write_text(run_dir / MANIFEST, recorded.model_dump_json(indent=2) + "\n", durable=durable)


def read_manifest(run_dir: Path) -> RunManifest:
    """Parse ``run.json``; a missing or malformed file is a DataError naming it (and the bad key)."""
    path = run_dir / MANIFEST
    if not path.is_file():
        hint = "" if run_dir.is_dir() else " (no such folder)"
        raise DataError(f"{run_dir} is not a run folder: {path} not found{hint}")
    try:
        return RunManifest.model_validate_json(path.read_bytes())
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(document)"
        raise DataError(f"{path}: invalid run manifest at {where}: {first['msg']}") from None


def repair_torn_tail(path: Path) -> int:
    """Cut an unfinished last line (a crash mid-write) so it is redone; returns the bytes removed."""
    if not path.exists():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with open(path, "rb+") as fh:
        fh.seek(max(0, size - 1))
        if fh.read(1) == b"\n":
            return 0
        # find the last newline; everything after it is a torn line
        block = 1 << 16
        end = size
        cut = 0
        while end > 0:
            start = max(0, end - block)
            fh.seek(start)
            chunk = fh.read(end - start)
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                cut = start + nl + 1
                break
            end = start
        fh.truncate(cut)
        fh.flush()
        os.fsync(fh.fileno())
        return size - cut


CHUNKS_PREFIX = ".chunks-"  # a folder where offline workers leave encoded chunks for the writer to append
# files replaced whole (atomicfile, the sample logs' spools) are written as ".<name>.<random>.tmp" beside them
_TEMPORARY = re.compile(r"\.(?:run\.json|results\.json|samples_.+\.jsonl)\..+\.tmp")


def remove_leftovers(run_dir: Path) -> list[str]:
    """Remove what a writer killed mid-way (SIGKILL, out of memory) left in its run folder: the offline workers'
    chunk folders and the temporaries of files replaced whole (results.json, run.json, the sample logs' spools).
    Only the folder's writer, holding its lock, may call this: those files are never another process's then.
    Returns the names removed."""
    removed: list[str] = []
    with os.scandir(run_dir) as entries:
        for entry in entries:
            if entry.name.startswith(CHUNKS_PREFIX) and entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            elif _TEMPORARY.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
            else:
                continue
            removed.append(entry.name)
    return sorted(removed)


def drop_samples(run_dir: Path, keys: set[tuple[str, str]]) -> int:
    """Rewrite samples.jsonl (atomically, streamed: no list of its lines) without the samples ``keys``; returns how
    many lines were dropped."""
    path = run_dir / SAMPLES
    if not keys or not path.exists():
        return 0
    dropped = 0
    with atomic_file(path, binary=True) as out, open(path, "rb") as fh:
        for line in fh:
            if line.strip() and line.endswith(b"\n"):
                obj = json.loads(line)
                if (str(obj.get("task")), str(obj.get("sample_id"))) in keys:
                    dropped += 1
                    continue
            out.write(line)
    return dropped


class SampleWriter:
    """Appends one JSON line per finished sample: written whole at once, fsynced at checkpoints and on close.

    The guarantee: each line reaches the OS in the same call that finishes its sample (unbuffered writes), so it
    survives the process being killed (SIGKILL, OOM). Against a power cut or an OS crash, the file is durable as of
    its last checkpoint (every ``fsync_every`` lines or ``fsync_interval_s`` seconds, and on close).

    A write that fails part-way (a full disk) is cut back, so the file never holds half a line and the
    error reaches the caller at once, with every earlier sample intact.
    """

    def __init__(
        self, path: Path, *, fsync_every: int = 200, fsync_interval_s: float = 2.0, growth: Growth | None = None
    ) -> None:
        self.path = path
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, NEW_FILE_MODE)
        self.growth = growth  # told of each append: a results pass may follow the file while it is written
        if growth is not None:
            growth.opened(os.fstat(self._fd).st_size)  # a resumed run's lines are there already
        self._fsync_every = fsync_every
        self._fsync_interval_s = fsync_interval_s
        self._since_sync = 0
        self._last_sync = time.monotonic()
        self.written = 0

    def write(self, record: SampleRecord) -> None:
        self.write_line((record.model_dump_json() + "\n").encode())

    def write_line(self, data: bytes) -> None:
        """Append one encoded line (ending in a newline) whole, or not at all."""
        self._append(data, 1)

    def write_lines(self, lines: list[bytes]) -> None:
        """Append many records already serialised as UTF-8 JSON (one per item, no newline) in one write, whole or
        not at all: the offline scorer's bulk write. Fsynced on the same checkpoints as :meth:`write`."""
        if lines:
            self._append(b"\n".join(lines) + b"\n", len(lines))

    def append_file(self, src: str, count: int) -> None:
        """Append ``count`` records another process encoded into the file ``src`` (lines ending in newlines), whole
        or not at all, copied in the kernel (copy_file_range) where it can: the bytes never pass through here."""
        fd = self._fd
        if fd is None:
            raise ValueError(f"{self.path} is closed")
        with open(src, "rb") as fin:
            size = os.fstat(fin.fileno()).st_size
            if not size:
                return
            with _whole_or_cut_back(fd) as start:
                done = kernel_copy(fin.fileno(), self.path, size, start)
                if done < size:  # copy_file_range could not (all of it): the rest through a buffer
                    fin.seek(done)
                    while block := fin.read(1 << 22):
                        _write_all(fd, block)
        self._count(count, start + size)

    def _append(self, data: bytes, count: int) -> None:
        fd = self._fd
        if fd is None:
            raise ValueError(f"{self.path} is closed")
        with _whole_or_cut_back(fd) as start:
            _write_all(fd, data)
        self._count(count, start + len(data))

    def _count(self, count: int, end: int) -> None:
        self.written += count
        if self.growth is not None:
            self.growth.appended(end)
        self._since_sync += count
        if self._since_sync >= self._fsync_every or time.monotonic() - self._last_sync >= self._fsync_interval_s:
            self.checkpoint()

    def checkpoint(self) -> None:
        """Make everything written so far durable (survives a power cut, not just a process kill)."""
        if self._fd is not None:
            os.fsync(self._fd)
        self._since_sync = 0
        self._last_sync = time.monotonic()

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def __enter__(self) -> SampleWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def _whole_or_cut_back(fd: int) -> Iterator[int]:
    """Append at the end of ``fd`` (the offset is given), cutting the file back there if the block fails: a full
    disk leaves no partial record."""
    start = os.lseek(fd, 0, os.SEEK_END)
    try:
        yield start
    except BaseException:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, start)
        raise


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
