"""The response cache: SQLite (WAL, busy timeout), shared safely by threads and processes.

A response is keyed by everything that changes it — the model's identity, messages, params, tools,
response_format and the repeat index — and by nothing that does not (sample id, dataset row, metadata), so the
same prompt in two tasks or two runs is asked once.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from assay.errors import DataError
from assay.models.base import Model, Request, Response

CACHE_FILE = "responses.sqlite"
KEY_VERSION = 1  # bump when the key's recipe changes, so old entries are never served for new keys
BUSY_TIMEOUT_MS = 30_000
_MAX_PENDING_LABELS = 100_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    created REAL NOT NULL,
    response TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS responses_model ON responses(model);
"""
_GET = "SELECT response, created FROM responses WHERE key = ?"
_PUT = "INSERT OR REPLACE INTO responses (key, provider, model, created, response) VALUES (?, ?, ?, ?, ?)"
_canonical = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode


def default_cache_dir() -> Path:
    """``$ASSAY_CACHE_DIR``, else ``~/.cache/assay``."""
    configured = os.environ.get("ASSAY_CACHE_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "assay"


def resolve_cache_path(path: str | Path | None = None) -> Path:
    """The cache file for ``path``: a file path as given, a directory's ``responses.sqlite``, or the default."""
    if path is None:
        return default_cache_dir() / CACHE_FILE
    resolved = Path(path).expanduser()
    return resolved / CACHE_FILE if resolved.is_dir() else resolved


class ResponseCache:
    """Responses by request key in one SQLite file; each thread uses its own connection.

    ``path`` is the database file, or a directory holding ``responses.sqlite``; by default
    ``$ASSAY_CACHE_DIR/responses.sqlite`` or ``~/.cache/assay/responses.sqlite``. Writes are single autocommit
    statements in WAL mode, so concurrent writers (threads or processes) wait on the busy timeout instead of failing.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = resolve_cache_path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._labels: dict[str, tuple[str, str]] = {}  # key -> (provider, model name), from key() until put()
        self._closed = False
        self._connection()  # create the schema now, so a bad path fails here and not mid-run

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            return conn
        if self._closed:
            raise RuntimeError(f"{self!r} is closed")
        conn = self._open()
        with self._lock:
            self._connections.append(conn)
        self._local.conn, self._local.pid = conn, os.getpid()  # a forked child opens its own connection
        return conn

    def _open(self) -> sqlite3.Connection:
        """A new connection in WAL mode with the schema in place.

        Switching a new database to WAL can fail with "database is locked" without waiting on the busy timeout when
        another process is setting the same file up at that moment; that is retried until the busy timeout passes.
        """
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        delay = 0.005
        while True:
            conn = None
            try:
                conn = sqlite3.connect(
                    self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
                )
                conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.executescript(_SCHEMA)
                return conn
            except sqlite3.OperationalError as err:
                if conn is not None:
                    conn.close()
                if "locked" not in str(err) or time.monotonic() >= deadline:
                    raise DataError(f"response cache {self.path} cannot be used ({err})") from err
                time.sleep(delay)
                delay = min(delay * 2, 0.2)
            except sqlite3.DatabaseError as err:
                if conn is not None:
                    conn.close()
                raise DataError(
                    f"response cache {self.path} cannot be used ({err}); delete it or choose another cache directory"
                ) from err

    def key(self, model: Model, request: Request) -> str:
        """sha256 of the canonical JSON of everything that changes the answer (not sample_id, doc or metadata)."""
        payload = {
            "v": KEY_VERSION,
            "model": model.identity(),
            "messages": request.messages,
            "params": request.params,
            "tools": request.tools,
            "response_format": request.response_format,
            "repeat": request.repeat,
        }
        if request.loglikelihood is not None:  # the texts scored: two queries after one prompt differ here alone
            payload["loglikelihood"] = request.loglikelihood.model_dump(exclude_none=True)
        key = hashlib.sha256(_canonical(payload).encode()).hexdigest()
        if len(self._labels) >= _MAX_PENDING_LABELS:
            self._labels.clear()
        self._labels[key] = (model.provider, str(getattr(model, "name", model.provider)))
        return key

    def get(self, key: str) -> Response | None:
        """The cached response for ``key`` (with ``cached=True`` and ``cached_at``, when the entry was written), or
        None (also for an entry that no longer parses)."""
        row = self._connection().execute(_GET, (key,)).fetchone()
        if row is None:
            return None
        try:
            response = Response.model_validate_json(row[0])
        except ValueError:  # written by an incompatible version: a miss, overwritten by the next put
            return None
        self._labels.pop(key, None)
        response.cached = True
        response.cached_at = float(row[1])
        return response

    def put(self, key: str, response: Response, *, model: Model | None = None) -> None:
        """Store ``response`` under ``key``; labelled with the model given, or the one ``key()`` was computed for."""
        pending = self._labels.pop(key, None)
        if model is not None:
            label = (model.provider, str(getattr(model, "name", model.provider)))
        else:
            label = pending or ("unknown", response.model or "unknown")
        data = response.model_dump_json(exclude={"cached", "cached_at", "truncated_from"})
        self._connection().execute(_PUT, (key, label[0], label[1], time.time(), data))

    def info(self) -> dict[str, Any]:
        """Path, number of entries, size on disk (with the WAL), entries per model ("provider:name") and when the
        oldest and newest entries were written (epoch seconds, None when empty)."""
        conn = self._connection()
        rows = conn.execute("SELECT provider, model, COUNT(*) FROM responses GROUP BY provider, model").fetchall()
        models = {f"{provider}:{name}": count for provider, name, count in sorted(rows)}
        oldest, newest = conn.execute("SELECT MIN(created), MAX(created) FROM responses").fetchone()
        size = sum(p.stat().st_size for p in self._files() if p.exists())
        return {
            "path": str(self.path),
            "entries": sum(models.values()),
            "size_bytes": size,
            "models": models,
            "oldest": oldest,
            "newest": newest,
        }

    def clear(self, model: str | None = None) -> int:
        """Delete every entry, or those of one model (its name, or "provider:name"); return how many."""
        conn = self._connection()
        if model is None:
            deleted = conn.execute("DELETE FROM responses").rowcount
        else:
            deleted = conn.execute(
                "DELETE FROM responses WHERE model = ? OR provider || ':' || model = ?", (model, model)
            ).rowcount
        if deleted:
            try:  # give the space back; skipped when another process is using the cache
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                conn.execute("VACUUM")
            except sqlite3.OperationalError:
                pass
        return deleted

    def close(self) -> None:
        """Close every thread's connection; the cache cannot be used afterwards."""
        self._closed = True
        with self._lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            conn.close()
        self._local = threading.local()

    def _files(self) -> list[Path]:
        return [self.path, self.path.with_name(self.path.name + "-wal"), self.path.with_name(self.path.name + "-shm")]
