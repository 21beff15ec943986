"""``assay view``: the report served on 127.0.0.1 only, with its security headers, re-rendered when a run changes."""

from __future__ import annotations

import http.client
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli import main
from assay.report.server import serve
from tests.browser.report_runs import make_record, make_run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("view") / "run", 10, tasks=("qa",))


@pytest.fixture
def server(run_dir: Path) -> Iterator[tuple[str, int]]:
    srv = serve([run_dir], port=0)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield srv.server_address[0], srv.server_address[1]
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(5)


def get(addr: tuple[str, int], path: str = "/", host: str | None = None) -> tuple[int, dict[str, str], str]:
    conn = http.client.HTTPConnection(addr[0], addr[1], timeout=10)
    headers = {"Host": host} if host is not None else {}
    conn.request("GET", path, headers=headers)
    resp = conn.getresponse()
    body = resp.read().decode("utf-8")
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body


def test_serves_the_page_on_loopback_only(server: tuple[str, int]) -> None:
    assert server[0] == "127.0.0.1"
    status, headers, body = get(server)
    assert status == 200
    assert headers["content-type"] == "text/html; charset=utf-8"
    assert headers["content-security-policy"].startswith("default-src 'none'; script-src 'sha256-")
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"
    assert 'id="assay-data"' in body and "<title>" in body
    assert get(server, "/index.html?x=1")[0] == 200
    assert get(server, "/etc/passwd")[0] == 404
    assert get(server, "/samples.jsonl")[0] == 404


def test_refuses_other_host_headers(server: tuple[str, int]) -> None:
    """A DNS-rebinding page reaches us with its own host name: refused."""
    status, _, body = get(server, host=f"evil.example:{server[1]}")
    assert status == 403 and "Host" in body
    assert get(server, host=f"localhost:{server[1]}")[0] == 200


def test_renders_again_when_the_run_changes(tmp_path: Path) -> None:
    run = make_run(tmp_path / "live", 4, tasks=("qa",))
    srv = serve([run], port=0)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        addr = srv.server_address[:2]
        first = get((str(addr[0]), int(addr[1])))[2]
        assert first.count('"i":"s') == 4
        with open(run / "samples.jsonl", "a", encoding="utf-8") as fh:
            fh.write(make_record("qa", 7, model="m").model_dump_json() + "\n")
        second = get((str(addr[0]), int(addr[1])))[2]
        assert second.count('"i":"s') == 5
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(5)


def test_cli_errors_are_clear(run_dir: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["view", str(tmp_path)])
    assert result.exit_code == 1 and "not a run folder" in result.output
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = runner.invoke(main, ["view", str(run_dir), "--port", str(port)])
    assert result.exit_code == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.output and "--port 0" in result.output
    help_text = runner.invoke(main, ["view", "--help"]).output
    assert "--port" in help_text and "--open" in help_text


def test_ctrl_c_stops_the_server(run_dir: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "assay", "view", str(run_dir), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # even where these tests run ignoring it
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert re.search(r"at http://127\.0\.0\.1:\d+/ ", line), line
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0
        assert proc.stdout.read().strip() == "stopped"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
