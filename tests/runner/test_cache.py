"""ResponseCache: keys, round trips, concurrency (threads and processes), info/clear, and the CLI."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assay.cli import main as assay_main
from assay.commands.cache import cache_group
from assay.errors import DataError
from assay.models.base import Request, Response, ToolCall, Usage
from assay.models.cache import ResponseCache, default_cache_dir, resolve_cache_path
from assay.models.openai_compat import OpenAIModel
from assay.models.python import PythonModel

MODEL = OpenAIModel("m1", base_url="http://localhost:1/v1", params={"temperature": 0})
REQUEST = Request(
    sample_id="s1",
    messages=[{"role": "user", "content": "What is 2+2?"}],
    params={"max_tokens": 5},
    tools=[{"type": "function", "function": {"name": "calc"}}],
    response_format={"type": "json_object"},
    repeat=0,
    doc={"q": "2+2"},
    metadata={"split": "test"},
)
RESPONSE = Response(
    text="4",
    tool_calls=[ToolCall(name="calc", arguments={"x": "2+2"}, id="c1", result=4)],
    usage=Usage(input_tokens=7, output_tokens=1),
    latency_s=0.25,
    finish_reason="stop",
    model="m1-2024",
    metadata={"reasoning": "add"},
)


@pytest.fixture
def cache(tmp_path: Path) -> Any:
    with ResponseCache(tmp_path / "responses.sqlite") as c:
        yield c


def test_round_trip_marks_cached(cache: ResponseCache) -> None:
    key = cache.key(MODEL, REQUEST)
    assert cache.get(key) is None
    cache.put(key, RESPONSE)
    hit = cache.get(key)
    assert hit is not None and hit.cached is True
    assert hit.model_dump(exclude={"cached", "cached_at"}) == RESPONSE.model_dump(exclude={"cached", "cached_at"})
    assert hit.cached_at is not None and abs(hit.cached_at - time.time()) < 60  # when the entry was written
    assert RESPONSE.cached is False


def test_key_is_a_stable_sha256(cache: ResponseCache) -> None:
    key = cache.key(MODEL, REQUEST)
    assert len(key) == 64 and int(key, 16) >= 0
    reordered = REQUEST.model_copy(update={"params": {"max_tokens": 5}})
    assert cache.key(MODEL, reordered) == key
    a = REQUEST.model_copy(update={"params": {"a": 1, "b": 2}})
    b = REQUEST.model_copy(update={"params": {"b": 2, "a": 1}})
    assert cache.key(MODEL, a) == cache.key(MODEL, b)


@pytest.mark.parametrize(
    "change",
    [
        {"messages": [{"role": "user", "content": "What is 2+3?"}]},
        {"messages": [{"role": "system", "content": "x"}, {"role": "user", "content": "What is 2+2?"}]},
        {"params": {"max_tokens": 6}},
        {"params": {}},
        {"tools": None},
        {"tools": [{"type": "function", "function": {"name": "other"}}]},
        {"response_format": None},
        {"response_format": {"type": "text"}},
        {"repeat": 1},
    ],
)
def test_key_changes_with_every_answer_changing_field(cache: ResponseCache, change: dict[str, Any]) -> None:
    assert cache.key(MODEL, REQUEST.model_copy(update=change)) != cache.key(MODEL, REQUEST)


@pytest.mark.parametrize(
    "model",
    [
        OpenAIModel("m2", base_url="http://localhost:1/v1", params={"temperature": 0}),
        OpenAIModel("m1", base_url="http://localhost:2/v1", params={"temperature": 0}),
        OpenAIModel("m1", base_url="http://localhost:1/v1", params={"temperature": 1}),
    ],
)
def test_key_changes_with_model_identity(cache: ResponseCache, model: OpenAIModel) -> None:
    assert cache.key(model, REQUEST) != cache.key(MODEL, REQUEST)


@pytest.mark.parametrize("change", [{"sample_id": "other"}, {"doc": {"q": "different"}}, {"metadata": {"x": 1}}])
def test_key_ignores_sample_id_doc_and_metadata(cache: ResponseCache, change: dict[str, Any]) -> None:
    assert cache.key(MODEL, REQUEST.model_copy(update=change)) == cache.key(MODEL, REQUEST)


def test_key_does_not_depend_on_timeouts_or_the_api_key(cache: ResponseCache) -> None:
    other = OpenAIModel("m1", base_url="http://localhost:1/v1", params={"temperature": 0}, timeout_s=5, api_key="sk-x")
    assert cache.key(other, REQUEST) == cache.key(MODEL, REQUEST)


def test_entries_persist_across_instances(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as first:
        key = first.key(MODEL, REQUEST)
        first.put(key, RESPONSE)
    with ResponseCache(tmp_path / "c.sqlite") as second:
        hit = second.get(key)
    assert hit is not None and hit.text == "4"


def test_wal_mode(cache: ResponseCache) -> None:
    with sqlite3.connect(cache.path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_info_and_clear_by_model(cache: ResponseCache) -> None:
    other = PythonModel(lambda request: "x", name="agent")
    for i in range(3):
        cache.put(cache.key(MODEL, REQUEST.model_copy(update={"repeat": i})), RESPONSE)
    cache.put(cache.key(other, REQUEST), RESPONSE)
    info = cache.info()
    assert info["path"] == str(cache.path)
    assert info["entries"] == 4 and info["size_bytes"] > 0
    assert info["models"] == {"openai:m1": 3, "python:agent": 1}
    assert info["oldest"] <= info["newest"] <= time.time()  # when the entries were written
    assert cache.clear("nobody") == 0
    assert cache.clear("m1") == 3
    assert cache.info()["models"] == {"python:agent": 1}
    assert cache.clear("python:agent") == 1
    assert cache.info()["entries"] == 0


def test_clear_all(cache: ResponseCache) -> None:
    for i in range(5):
        cache.put(cache.key(MODEL, REQUEST.model_copy(update={"repeat": i})), RESPONSE)
    assert cache.clear() == 5
    assert cache.get(cache.key(MODEL, REQUEST)) is None


def test_put_labels(cache: ResponseCache) -> None:
    cache.put("k-explicit", RESPONSE, model=PythonModel(lambda request: "x", name="named"))
    cache.put("k-unlabelled", RESPONSE)  # no key() call for it: labelled by the response's model
    assert cache.info()["models"] == {"python:named": 1, "unknown:m1-2024": 1}


def test_concurrent_threads(cache: ResponseCache) -> None:
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            for i in range(150):
                key = cache.key(MODEL, REQUEST.model_copy(update={"repeat": t * 1000 + i + 1}))
                cache.put(key, RESPONSE)
                hit = cache.get(key)
                assert hit is not None and hit.text == "4"
                cache.put(cache.key(MODEL, REQUEST), RESPONSE)  # everyone also rewrites one shared key
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert cache.info()["entries"] == 6 * 150 + 1


WRITER = """
import sys
from assay.models.base import Request, Response
from assay.models.openai_compat import OpenAIModel
from assay.models.cache import ResponseCache
path, offset = sys.argv[1], int(sys.argv[2])
cache = ResponseCache(path)
model = OpenAIModel("m1", base_url="http://localhost:1/v1")
print("ready", flush=True)
sys.stdin.readline()
for i in range(300):
    request = Request(sample_id="s", messages=[{"role": "user", "content": str(offset + i)}])
    cache.put(cache.key(model, request), Response(text=str(offset + i)))
    cache.put("shared", Response(text="shared"))
cache.close()
"""


def test_concurrent_processes(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(offset)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for offset in (0, 10_000)
    ]
    for proc in procs:  # both have opened the cache: start writing at the same moment
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    with ResponseCache(path) as cache:
        assert cache.info()["entries"] == 601
        model = OpenAIModel("m1", base_url="http://localhost:1/v1")
        request = Request(sample_id="other", messages=[{"role": "user", "content": "10299"}])
        hit = cache.get(cache.key(model, request))
        assert hit is not None and hit.text == "10299"


def test_default_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "env"))
    assert resolve_cache_path() == tmp_path / "env" / "responses.sqlite"
    monkeypatch.delenv("ASSAY_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "assay"
    assert resolve_cache_path(tmp_path) == tmp_path / "responses.sqlite"  # an existing directory
    assert resolve_cache_path(tmp_path / "x.db") == tmp_path / "x.db"


def test_default_location_is_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "new" / "dir"))
    with ResponseCache() as cache:
        cache.put(cache.key(MODEL, REQUEST), RESPONSE)
    assert (tmp_path / "new" / "dir" / "responses.sqlite").exists()


def test_not_a_database_names_the_path(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(DataError, match=r"response cache .*bad\.sqlite cannot be used"):
        ResponseCache(bad)


def test_closed_cache_refuses_use(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.close()
    with pytest.raises(RuntimeError, match="closed"):
        cache.get("k")


# -- the CLI --------------------------------------------------------------------------------------------------------


def fill(directory: Path) -> None:
    with ResponseCache(directory / "responses.sqlite") as cache:
        for i in range(3):
            cache.put(cache.key(MODEL, REQUEST.model_copy(update={"repeat": i})), RESPONSE)
        cache.put(cache.key(PythonModel(lambda request: "x", name="agent"), REQUEST), RESPONSE)


def test_cli_info(tmp_path: Path) -> None:
    fill(tmp_path)
    result = CliRunner().invoke(cache_group, ["info", "--cache-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert f"cache:   {tmp_path / 'responses.sqlite'}" in result.output
    assert "entries: 4" in result.output
    assert "openai:m1     3" in result.output and "python:agent  1" in result.output
    as_json = CliRunner().invoke(cache_group, ["info", "--json"], env={"ASSAY_CACHE_DIR": str(tmp_path)})
    assert json.loads(as_json.output)["models"] == {"openai:m1": 3, "python:agent": 1}


def test_cli_info_without_a_cache(tmp_path: Path) -> None:
    result = CliRunner().invoke(cache_group, ["info", "--cache-dir", str(tmp_path / "none")])
    assert result.exit_code == 0 and "(not created yet)" in result.output and "entries: 0" in result.output
    assert not (tmp_path / "none").exists()


def test_cli_clear_model_with_yes(tmp_path: Path) -> None:
    fill(tmp_path)
    result = CliRunner().invoke(
        cache_group, ["clear", "--model", "m1", "--yes"], env={"ASSAY_CACHE_DIR": str(tmp_path)}
    )
    assert result.exit_code == 0, result.output
    assert "deleted 3 cached response(s)" in result.output
    with ResponseCache(tmp_path) as cache:
        assert cache.info()["models"] == {"python:agent": 1}


def test_cli_clear_asks_first(tmp_path: Path) -> None:
    fill(tmp_path)
    refused = CliRunner().invoke(cache_group, ["clear", "--cache-dir", str(tmp_path)], input="n\n")
    assert refused.exit_code == 1 and "Delete 4 cached response(s)" in refused.output
    with ResponseCache(tmp_path) as cache:
        assert cache.info()["entries"] == 4
    accepted = CliRunner().invoke(cache_group, ["clear", "--cache-dir", str(tmp_path)], input="y\n")
    assert accepted.exit_code == 0 and "deleted 4 cached response(s)" in accepted.output
    with ResponseCache(tmp_path) as cache:
        assert cache.info()["entries"] == 0


def test_cli_clear_nothing(tmp_path: Path) -> None:
    fill(tmp_path)
    result = CliRunner().invoke(cache_group, ["clear", "--cache-dir", str(tmp_path), "--model", "nobody"])
    assert result.exit_code == 0 and "0 cached response(s) of model 'nobody'" in result.output
    missing = CliRunner().invoke(cache_group, ["clear", "--cache-dir", str(tmp_path / "none"), "--yes"])
    assert missing.exit_code == 0 and "nothing to clear" in missing.output


def test_cli_through_the_assay_command(tmp_path: Path) -> None:
    fill(tmp_path)
    result = CliRunner().invoke(assay_main, ["cache", "info", "--cache-dir", str(tmp_path)])
    assert result.exit_code == 0 and "entries: 4" in result.output


def test_unreadable_entry_is_a_miss_and_is_overwritten(cache: ResponseCache) -> None:
    key = cache.key(MODEL, REQUEST)
    with sqlite3.connect(cache.path) as conn:
        conn.execute(
            "INSERT INTO responses (key, provider, model, created, response) VALUES (?, 'openai', 'm1', 0, ?)",
            (key, '{"text": ["not", "a", "string"]}'),
        )
    assert cache.get(key) is None
    cache.put(key, RESPONSE)
    hit = cache.get(key)
    assert hit is not None and hit.text == "4"


def test_forked_child_uses_its_own_connection(cache: ResponseCache) -> None:
    import multiprocessing

    key = cache.key(MODEL, REQUEST)
    cache.put(key, RESPONSE)  # the parent's connection exists before the fork
    ctx = multiprocessing.get_context("fork")
    child = ctx.Process(target=_child_writes, args=(cache,))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0
    hit = cache.get("from-child")
    assert hit is not None and hit.text == "child"
    assert cache.get(key) is not None


def _child_writes(cache: ResponseCache) -> None:
    parent_conn = cache._local.conn
    cache.put("from-child", Response(text="child"))
    assert cache._local.conn is not parent_conn
    assert cache.get("from-child") is not None
