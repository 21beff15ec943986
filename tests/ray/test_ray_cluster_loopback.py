"""The Ray cluster the tests start (``tests.ray.cluster.LocalCluster``) listens on 127.0.0.1 only, every process of
it: the head's GCS and Ray Client server, each node's raylet, agents and workers, and the drivers the tests start
with ``cluster.env()``, directly or through Ray Client. Its GCS and raylets take no credentials: none of it may be
reachable from the machine's network address (the project's rule for servers that tests start)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.ray.cluster import LocalCluster
from tests.ray.test_ray_local_loopback import _listening, _loopback

pytest.importorskip("psutil")
pytest.importorskip("ray", reason="the Ray executor's tests need ray: pip install 'assay[ray]' (make test does)")

pytestmark = pytest.mark.timeout(300)

# A driver with an actor on every node (so each node runs a worker), which says on how many nodes they answered
# and stays connected until its stdin closes.
_DRIVER = """
import sys, ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

ray.init(address=sys.argv[1], logging_level="WARNING")


@ray.remote(num_cpus=1)
class Where:
    def node(self):
        return ray.get_runtime_context().get_node_id()


nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
actors = [Where.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n, soft=False)).remote() for n in nodes]
print(len(set(ray.get([a.node.remote() for a in actors], timeout=120))), flush=True)
sys.stdin.readline()
"""


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    """A cluster of its own (a head and one worker node): the package's shared one is changed by other tests."""
    started = LocalCluster(workers=1, cpus=2)
    try:
        yield started
    finally:
        started.stop()


def _driver(cluster: LocalCluster, address: str, tries: int = 3) -> subprocess.Popen[str]:
    """A driver joined to the cluster at ``address`` whose actors ran on both nodes. A Ray Client connection can be
    refused while the head's client server starts a server for it ("Initialization failure from server", seen on a
    loaded machine): the driver is started again then, up to ``tries`` times."""
    for attempt in range(tries):
        driver = subprocess.Popen(
            [sys.executable, "-c", _DRIVER, address],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=cluster.env(),
            text=True,
        )
        assert driver.stdout is not None
        line = driver.stdout.readline().strip()
        if line == "2":
            return driver
        driver.kill()
        driver.wait(timeout=30)
        assert line == "" and attempt < tries - 1, f"a driver's actors did not run on both nodes ({line or 'none'})"
    raise AssertionError("unreachable")


def test_every_process_of_the_test_cluster_listens_on_loopback_only(cluster: LocalCluster) -> None:
    nodes = [cluster.head, *cluster.workers]
    drivers: list[subprocess.Popen[str]] = []
    try:
        for address in (cluster.address, cluster.client_address):  # one joins by the GCS address, one by Ray Client
            drivers.append(_driver(cluster, address))
        pids = {pid for node in nodes for pid in node.processes()}
        pids |= {driver.pid for driver in drivers}
        sockets = sorted({socket for pid in pids for socket in _listening(pid)})
    finally:
        for driver in drivers:
            if driver.stdin is not None:
                driver.stdin.close()
        for driver in drivers:
            try:
                driver.wait(timeout=30)
            except subprocess.TimeoutExpired:
                driver.kill()
                driver.wait()

    assert sockets, "found no listening socket at all: the check would pass for nothing"
    ports = {port for _, _, port in sockets}
    expected = {
        "the GCS": cluster.port,
        "the Ray Client server": int(cluster.client_address.rsplit(":", 1)[1]),
        **{f"the raylet of {node.temp_dir.name}": node.port("--node-manager-port") for node in nodes},
    }
    unseen = [name for name, port in expected.items() if port not in ports]
    assert unseen == [], f"the check did not see {unseen} listening: {sockets}"
    assert {"ray::Where"} <= {name for name, _, _ in sockets}, f"the check saw no worker listening: {sockets}"
    exposed = [socket for socket in sockets if not _loopback(socket[1])]
    assert exposed == [], exposed
