"""Process plumbing shared by the end-to-end tests: real ``python -m reassignd`` processes (the
simulated brokers and controller instances) on the session's ZooKeeper, started, waited for and
stopped the same way in every test, plus a kazoo view of the cluster they form.

Usage, in a test that has the ``zk_hosts`` and ``tmp_path`` fixtures::

    from tests.e2e.processes import running_cluster, wait_for

    SIM = ["--brokers", "3", "--topics", "orders:3:2:64MiB", "--bandwidth", "1KiB", "--produce-rate", "0"]

    def test_something(zk_hosts, tmp_path):
        with running_cluster(zk_hosts, tmp_path, sim_args=SIM, controller_ids=(101, 102)) as c:
            # here: an active controller is elected and both instances have registered
            c.kill_controller(c.active_controller())
            wait_for(lambda: c.zk.exists("/controller"), 20, "a new active controller")

Every process writes its stderr to ``<tmp_path>/<name>.log`` (``sim.log``, ``controller-101.log``);
on exit the ZooKeeper session closes and the processes still running get SIGTERM, then SIGKILL
after STOP_GRACE_S.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from controller.core.config import to_toml

REPO = Path(__file__).resolve().parents[2]
# A controller process stops within a few seconds of SIGTERM; longer means it hangs.
STOP_GRACE_S = 10.0
POLL_INTERVAL_S = 0.05
# How long an election and the instances' registrations may take on a loaded 2-core machine.
STARTUP_TIMEOUT_S = 30
# A short ZooKeeper session lets a standby take over soon after the active instance is killed.
CONTROLLER_CONFIG = {"zk_session_timeout_s": 2.0, "request_timeout_s": 5.0}
LOG_TAIL_CHARS = 3000
THROTTLE_KEYS = {
    "topics": ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas"),
    "brokers": ("leader.replication.throttled.rate", "follower.replication.throttled.rate"),
}


# ---- single processes --------------------------------------------------------------------------


def spawn_reassignd(args: list[str], log_path: Path) -> subprocess.Popen:
    """``python -m reassignd ARGS`` from the repository, stdout piped, stderr into ``log_path``."""
    with open(log_path, "wb") as log:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            [sys.executable, "-m", "reassignd", *args],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=log,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )


def stop_process(proc: subprocess.Popen, grace: float = STOP_GRACE_S) -> int | None:
    """SIGTERM, then SIGKILL if it is still running after ``grace`` seconds; its exit code."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def kill_process(proc: subprocess.Popen) -> None:
    """SIGKILL, as a crash: the process gets no chance to clean up."""
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def wait_for(predicate, timeout: float, what: str, interval: float = POLL_INTERVAL_S):
    """Poll ``predicate`` until it returns something truthy, and return that; fail the test
    with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@contextmanager
def kazoo_client(zk_hosts: str, auth: str | None = None) -> Iterator[KazooClient]:
    """A started kazoo session, stopped and closed on exit; ``auth`` ("user:password"): its
    digest identity (zkCli's ``addauth digest``), for a ZooKeeper that requires one."""
    zk = KazooClient(hosts=zk_hosts, timeout=10, auth_data=[("digest", auth)] if auth else None)
    zk.start(timeout=STARTUP_TIMEOUT_S)
    try:
        yield zk
    finally:
        zk.stop()
        zk.close()


def sim_status(control_port: int) -> dict:
    """The simulator's ``status`` over its control channel (brokers and the replicas on disk)."""
    with socket.create_connection(("127.0.0.1", control_port), timeout=5) as s:
        s.sendall(b"status\n")
        with s.makefile("rb") as answer:
            data = answer.readline()  # one line: "OK <json>" or "ERR <reason>"
    assert data.startswith(b"OK "), data[:200]
    return json.loads(data[3:])


def plain_reassignment(targets: dict[tuple[str, int], list[int]]) -> bytes:
    """A reassignment document in Kafka's plain format (no ``original_replicas``), as a
    third-party tool writes ``/admin/reassign_partitions``."""
    entries = [{"topic": t, "partition": p, "replicas": r} for (t, p), r in sorted(targets.items())]
    return json.dumps({"version": 1, "partitions": entries}).encode()


# ---- a group of processes ----------------------------------------------------------------------


class Processes:
    """The named processes of one test; on exit the ones still running are stopped, last
    started first."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.running: dict[str, subprocess.Popen] = {}

    def log(self, name: str) -> Path:
        return self.workdir / f"{name}.log"

    def spawn(self, name: str, args: list[str]) -> subprocess.Popen:
        proc = spawn_reassignd(args, self.log(name))
        self.running[name] = proc
        return proc

    def start_sim(self, zk_hosts: str, args: list[str]) -> dict:
        """``reassignd sim``; its ready line (brokers, control address, topics) once it is up."""
        proc = self.spawn("sim", ["sim", "--zookeeper", zk_hosts, *args])
        line = proc.stdout.readline()
        assert line, self.log("sim").read_text()[-LOG_TAIL_CHARS:]
        ready = json.loads(line)
        assert ready["event"] == "ready", ready
        return ready

    def start_controller(self, zk_hosts: str, cid: int, config: Path, listen: str = "127.0.0.1:0") -> subprocess.Popen:
        """``reassignd controller`` with an admin listener on a free port (``listen``: its
        ``--listen``, e.g. ``SECURE://127.0.0.1:0``)."""
        return self.spawn(controller_name(cid), ["controller", "--zookeeper", zk_hosts, "--id", str(cid),
                                                 "--listen", listen, "--config", str(config)])

    def stop_all(self) -> None:
        for proc in reversed(list(self.running.values())):
            stop_process(proc)

    def __enter__(self) -> "Processes":
        return self

    def __exit__(self, *exc) -> None:
        self.stop_all()


def controller_name(cid: int) -> str:
    return f"controller-{cid}"


# ---- a running cluster -------------------------------------------------------------------------


class RunningCluster:
    """Simulated brokers and controller instances, seen through a kazoo session."""

    def __init__(self, zk: KazooClient, processes: Processes, sim: dict, listeners: dict[int, str]):
        self.zk = zk
        self.processes = processes
        self.sim = sim  # the simulator's ready line
        self.listeners = listeners  # controller id -> admin listener "host:port"

    @property
    def brokers(self) -> dict[int, str]:
        """Simulated broker id -> "host:port"."""
        return {int(b): addr for b, addr in self.sim["brokers"].items()}

    @property
    def control_port(self) -> int:
        return int(self.sim["control"].rsplit(":", 1)[1])

    def controller(self, cid: int) -> subprocess.Popen:
        return self.processes.running[controller_name(cid)]

    def controller_log(self, cid: int) -> Path:
        return self.processes.log(controller_name(cid))

    def kill_controller(self, cid: int) -> None:
        kill_process(self.controller(cid))

    def json(self, path: str):
        """A znode's JSON document, or None when the znode does not exist."""
        return json.loads(self.zk.get(path)[0]) if self.zk.exists(path) else None

    def active_controller(self) -> int:
        return self.json("/controller")["brokerid"]

    def new_active_controller(self, killed: int) -> int | None:
        """The active controller if there is one and it is not ``killed``; else None."""
        try:
            current = json.loads(self.zk.get("/controller")[0])["brokerid"]
        except NoNodeError:  # between the killed one's session ending and the next election
            return None
        return current if current != killed else None

    def topic(self, name: str) -> dict:
        return self.json(f"/brokers/topics/{name}")

    def replicas(self, topic: str, partition: int) -> list[int]:
        return self.topic(topic)["partitions"][str(partition)]

    def moving(self, topic: str, partition: int) -> bool:
        """The partition is adding replicas: its move has started."""
        return bool(self.topic(topic).get("adding_replicas", {}).get(str(partition)))

    def reassignments_done(self) -> bool:
        """Nothing requested and nothing in flight."""
        return self.zk.exists("/admin/reassign_partitions") is None and not (
            self.zk.exists("/admin/reassignments") and self.zk.get_children("/admin/reassignments")
        )

    def submit(self, targets: dict[tuple[str, int], list[int]], path: str = "/admin/reassign_partitions") -> None:
        self.zk.create(path, plain_reassignment(targets))

    def set_dynamic_config(self, entity: str, config: dict[str, str]) -> None:
        """/config/<entity> with its change notification, as Kafka's tools write it."""
        path = f"/config/{entity}"
        data = json.dumps({"version": 1, "config": config}).encode()
        if self.zk.exists(path):
            self.zk.set(path, data)
        else:
            self.zk.create(path, data, makepath=True)
        note = json.dumps({"version": 2, "entity_path": entity}).encode()
        self.zk.create("/config/changes/config_change_", note, sequence=True, makepath=True)

    def throttle_configs(self) -> dict[str, dict[str, str]]:
        """"topics/T" or "brokers/B" -> the KIP-73 throttle keys set in that entity's config."""
        out = {}
        for kind, keys in THROTTLE_KEYS.items():
            parent = f"/config/{kind}"
            for name in self.zk.get_children(parent) if self.zk.exists(parent) else []:
                found = {k: v for k, v in (self.json(f"{parent}/{name}") or {}).get("config", {}).items() if k in keys}
                if found:
                    out[f"{kind}/{name}"] = found
        return out

    def hosted(self) -> dict[tuple[str, int], set[int]]:
        """(topic, partition) -> the brokers that hold a replica of it on disk."""
        out: dict[tuple[str, int], set[int]] = {}
        for broker, info in sim_status(self.control_port)["brokers"].items():
            for r in info["replicas"]:
                out.setdefault((r["topic"], r["partition"]), set()).add(int(broker))
        return out


@contextmanager
def running_cluster(zk_hosts: str, workdir: Path, *, sim_args: list[str], controller_ids: tuple[int, ...],
                    controller_config: dict | None = None, listen: str = "127.0.0.1:0",
                    zk_auth: str | None = None) -> Iterator[RunningCluster]:
    """``reassignd sim --zookeeper ZK SIM_ARGS`` and one ``reassignd controller`` per id, all
    sharing ``CONTROLLER_CONFIG`` updated with ``controller_config``; entered once a controller
    is active and every instance has registered its listener. ``zk_auth``: the digest identity
    of the test's own kazoo session (``RunningCluster.zk``)."""
    config = workdir / "controller.toml"
    config.write_text(to_toml({**CONTROLLER_CONFIG, **(controller_config or {})}))
    with Processes(workdir) as processes, kazoo_client(zk_hosts, zk_auth) as zk:
        sim = processes.start_sim(zk_hosts, sim_args)
        for cid in controller_ids:
            processes.start_controller(zk_hosts, cid, config, listen)
        wait_for(lambda: zk.exists("/controller"), STARTUP_TIMEOUT_S, "an active controller")
        wait_for(lambda: all(zk.exists(f"/reassignd/controllers/{cid}") for cid in controller_ids),
                 STARTUP_TIMEOUT_S, f"{len(controller_ids)} registered controllers")
        listeners = {}
        for cid in controller_ids:
            doc = json.loads(zk.get(f"/reassignd/controllers/{cid}")[0])
            listeners[cid] = f"{doc['host']}:{doc['port']}"
        yield RunningCluster(zk, processes, sim, listeners)
