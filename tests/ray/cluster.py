"""A real Ray cluster on 127.0.0.1 for tests: a head node and worker nodes, each a separate ``ray start --block``
process with its own ports and temp dir, stopped (with every process they started) even when a test fails.

Every process of the cluster listens on 127.0.0.1 only (the project's rule for servers that tests start: a Ray
cluster takes no credentials). Ray's own switch for that is its single-machine mode,
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``: without it Ray turns a loopback ``--node-ip-address`` into the machine's
network address, and its GCS, raylets, agents and workers listen there (or on every address). The mode is set in the
environment of every node and of the drivers (``LocalCluster.env()``), so each process Ray starts reads it. But
``ray start --address`` (a worker node) refuses to run in that mode ("Multi-node Ray clusters are not supported on
Windows and OSX"), so a node is started through this file run as a script (see the end): Ray's CLI with that one
check let through and the node's address kept at 127.0.0.1."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

SINGLE_MACHINE = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}  # Ray's loopback-only mode, for nodes and drivers


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


WORKER_PORTS = 200  # ports in a node's private range for its workers


def _ports(taken: set[int]) -> list[str]:
    """Every port a node opens, chosen free now, plus a private range for its workers that holds none of them nor
    any in ``taken`` (the cluster's other ports: Ray refuses a node whose worker range holds a port of its own, and
    a free port may fall anywhere in the range the kernel hands out). The node's ports are added to ``taken``."""
    names = ["--node-manager-port", "--object-manager-port", "--metrics-export-port", "--dashboard-agent-listen-port",
             "--dashboard-agent-grpc-port", "--runtime-env-agent-port"]  # fmt: skip
    ports = [free_port() for _ in names]
    taken.update(ports)
    while True:  # clear of 23000+, where Ray Client starts its servers
        base = random.randrange(30_000, 60_000, WORKER_PORTS)
        if not any(base <= port < base + WORKER_PORTS for port in taken):
            break
    taken.update(range(base, base + WORKER_PORTS))
    args = [arg for name, port in zip(names, ports, strict=True) for arg in (name, str(port))]
    return [*args, "--min-worker-port", str(base), "--max-worker-port", str(base + WORKER_PORTS - 1)]


class Node:
    """One ``ray start --block`` process (in its own session, so its children can be found and ended)."""

    def __init__(self, args: list[str], temp_dir: Path, log: Path) -> None:
        self.temp_dir = temp_dir
        self.log = log
        self._log = open(log, "ab")  # noqa: SIM115 - closed in stop()
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled", **SINGLE_MACHINE}
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "start", "--block", "--disable-usage-stats", *args],  # `ray start`, see the end
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def port(self, flag: str) -> int:
        """The port this node was started with for ``flag`` (e.g. ``--node-manager-port``)."""
        args = [str(arg) for arg in self.proc.args]  # type: ignore[union-attr]
        return int(args[args.index(flag) + 1])

    def processes(self) -> list[int]:
        """PIDs of this node's live processes (not zombies): its session, and any process whose command line names
        its temp dir."""
        found = []
        mark = str(self.temp_dir).encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            pid = int(entry.name)
            try:
                if (entry / "stat").read_bytes().rsplit(b") ", 1)[1][:1] == b"Z":
                    continue  # ended, not yet reaped: nothing runs
                cmd = (entry / "cmdline").read_bytes()
                if mark in cmd or os.getsid(pid) == self.proc.pid:
                    found.append(pid)
            except (OSError, IndexError):
                continue
        return found

    def kill(self) -> None:
        """SIGKILL the node and everything it started (a machine that disappears), and wait until none of its
        processes runs (one may start another while we are killing: it is killed in turn)."""
        from tests.support import wait_for  # here: this file also runs as a script, where tests is not importable

        def gone() -> bool:
            for pid in self.processes():
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            self.proc.poll()  # reap the node's own process
            return not self.processes()

        wait_for(gone, 30, f"every process of the Ray node {self.temp_dir.name} to end", interval=0.05)
        self.proc.wait(timeout=10)
        self._log.close()


class LocalCluster:
    """A head node and ``workers`` worker nodes on 127.0.0.1, each with ``cpus`` CPUs."""

    def __init__(self, *, workers: int = 1, cpus: int = 2) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="ar", dir="/tmp"))  # short: Ray's socket paths are limited
        self.cpus = cpus
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        client_port = free_port()
        self.client_address = f"ray://127.0.0.1:{client_port}"  # Ray Client
        self.taken = {self.port, client_port}  # every port of the cluster's nodes, and their workers' ranges
        self.workers: list[Node] = []
        self.head = self._node("head", ["--head", "--port", str(self.port), "--include-dashboard", "false",
                                        "--ray-client-server-port", self.client_address.rsplit(":", 1)[1]])  # fmt: skip
        try:
            self._wait_started(self.head, timeout=90)
            for _ in range(workers):
                self.add_worker()
        except BaseException:
            self.stop()  # a cluster that did not come up is not left behind either
            raise

    def _node(self, name: str, extra: list[str]) -> Node:
        temp = self.root / f"{name}{len(list(self.root.iterdir()))}"
        temp.mkdir()
        args = ["--node-ip-address", "127.0.0.1", "--num-cpus", str(self.cpus), "--temp-dir", str(temp)]
        args += _ports(self.taken)
        return Node([*args, *extra], temp, self.root / f"{temp.name}.log")

    def add_worker(self, attempts: int = 3) -> Node:
        """Start a worker node and wait until it has joined; a node that fails to start (a port taken meanwhile by
        another process) is ended and started again on fresh ports."""
        for attempt in range(attempts):
            node = self._node("w", ["--address", self.address])
            self.workers.append(node)
            try:
                self._wait_started(node, timeout=45)
                return node
            except RuntimeError:
                self.workers.remove(node)
                node.kill()
                if attempt == attempts - 1:
                    raise
        raise AssertionError("unreachable")

    def _wait_started(self, node: Node, timeout: float) -> None:
        """Wait until ``node``'s ``ray start --block`` says its raylet runs (it then has joined the cluster)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if node.proc.poll() is not None:
                raise RuntimeError(f"a Ray node exited:\n{node.log_text()[-2000:]}")
            if "Ray runtime started" in node.log_text():
                return
            time.sleep(0.1)
        raise RuntimeError(f"a Ray node did not start in {timeout:.0f}s:\n{node.log_text()[-2000:]}")

    def env(self) -> dict[str, str]:
        """Environment for a driver process of this cluster."""
        return {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0", **SINGLE_MACHINE}

    def stop(self) -> None:
        for node in [*self.workers, self.head]:
            if node.proc.poll() is None or node.processes():
                node.kill()
        shutil.rmtree(self.root, ignore_errors=True)


_HOLD = """
import sys, ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

ray.init(address=sys.argv[1], logging_level="WARNING")
wait_s = float(sys.argv[2])
ports = {int(p) for p in sys.argv[3:]}
nodes = [n for n in ray.nodes() if n["Alive"] and n["NodeManagerPort"] in ports]


@ray.remote
class Hold:
    def ready(self):
        return True


holds = [
    Hold.options(
        num_cpus=n["Resources"].get("CPU", 0),
        scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False),
    ).remote()
    for n in nodes
]
# every hold runs, so every CPU is taken (slow on a loaded machine: each is a worker process to start)
ready = ray.wait([h.ready.remote() for h in holds], num_returns=len(holds), timeout=wait_s)[0] if holds else []
print("held" if len(ready) == len(ports) else f"{len(ready)} of {len(ports)} nodes held", flush=True)
sys.stdin.readline()  # until the test closes it: then this driver ends and Ray frees what it held
"""


HOLD_S = 120  # how long the holds may take to start


@contextlib.contextmanager
def holding_cpus(cluster: LocalCluster, *nodes: Node) -> Iterator[None]:
    """Another job holding every CPU of ``nodes`` (default: the cluster's running nodes; not one killed moments
    ago, which the cluster may still count alive but which will never run anything) while the block runs. The
    block starts once every CPU is held."""
    ports = [node.port("--node-manager-port") for node in nodes or (cluster.head, *cluster.workers)]
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD, cluster.address, str(HOLD_S), *map(str, ports)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=cluster.env(),
        text=True,
    )
    try:
        assert proc.stdout is not None
        said = proc.stdout.readline().strip()
        assert said == "held", f"the CPUs could not be held within {HOLD_S} s: {said or 'the holding job ended'}"
        yield
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _ray_start() -> int:
    """``ray start`` for a node of a ``LocalCluster`` (this file run as a script, with ``SINGLE_MACHINE`` set).

    Ray reads its single-machine mode into ``ray_constants.ENABLE_RAY_CLUSTER`` at import, and in this process the
    flag decides two things: what ``services.get_node_ip_address`` answers (127.0.0.1 in the mode; else the
    machine's network address, which Ray puts in place of a loopback ``--node-ip-address`` and ``--address``), and
    whether ``ray start --address`` (a worker node) aborts. Here the flag is turned back on, which lets a worker
    node start, and ``get_node_ip_address`` is pinned to the mode's answer, which keeps every address at 127.0.0.1.
    The processes the node starts inherit the mode from the environment, unchanged."""
    del sys.path[0]  # this file's folder: nothing in it is for Ray to import
    from ray._private import ray_constants, services
    from ray.scripts.scripts import main

    assert not ray_constants.ENABLE_RAY_CLUSTER, "start nodes with SINGLE_MACHINE in the environment"
    ray_constants.ENABLE_RAY_CLUSTER = True
    services.get_node_ip_address = lambda address=None: services.get_localhost_ip()
    sys.argv[0] = "ray"
    return main()


if __name__ == "__main__":
    sys.exit(_ray_start())
