"""A local Ray instance that ``--executor ray`` starts (no address given) listens on 127.0.0.1 only: its dashboard,
job API and GCS take no credentials, so none of them may be reachable from the machine's network address."""

from __future__ import annotations

import ipaddress
import os
import subprocess
from pathlib import Path

import pytest

from assay.testing.server import OpenAITestServer
from tests.e2e.e2e_support import arithmetic_reply, assay_cmd, write_task
from tests.ray.test_ray_executor import _wait_lines

psutil = pytest.importorskip("psutil")
pytest.importorskip("ray", reason="the Ray executor's tests need ray: pip install 'assay[ray]' (make test does)")

pytestmark = pytest.mark.timeout(300)


def _listening(pid: int) -> list[tuple[str, str, int]]:
    """(process name, address, port) of every TCP socket listening in ``pid`` and the processes it started."""
    root = psutil.Process(pid)
    found = []
    for proc in [root, *root.children(recursive=True)]:
        try:
            conns = proc.net_connections(kind="inet")
            name = proc.name()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        found += [(name, c.laddr.ip, c.laddr.port) for c in conns if c.status == psutil.CONN_LISTEN]
    return found


def _loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip.split("%")[0])
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1, a dual-stack socket's loopback
    return (mapped or address).is_loopback


def test_a_local_ray_instance_listens_on_loopback_only(tmp_path: Path) -> None:
    task = write_task(tmp_path, 400)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_ADDRESS")}
    env.update({"OPENAI_API_KEY": "test-key", "RAY_USAGE_STATS_ENABLED": "0", "COLUMNS": "200"})
    with OpenAITestServer(arithmetic_reply, latency_s=0.2) as server:
        cmd = assay_cmd("run", str(task), "--model", "openai:assay-test", "--base-url", server.base_url,
                        "--executor", "ray", "--concurrency", "2", "-o", "runs", "-q", "--no-cache")  # fmt: skip
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            _wait_lines(tmp_path / "runs", 5, proc, timeout=180)  # the instance is up and its workers answer
            sockets = _listening(proc.pid)
        finally:
            proc.kill()
            proc.communicate()
    assert sockets, "found no listening socket at all: the check would pass for nothing"
    exposed = [s for s in sockets if not _loopback(s[1])]
    assert exposed == [], exposed
