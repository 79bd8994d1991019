"""End to end: KIP-236 cancel and queue on real processes.

ZooKeeper (the session fixture), ``python -m reassignd sim`` (4 brokers speaking the Kafka wire
protocol, copying no faster than the bandwidth and throttle configs allow) and a
``python -m reassignd controller``. Reassignments are written to ``/admin/reassign_partitions``
in Kafka's plain format, as a third-party tool does; cancels go through this project's
AdminClient (CancelReassignments, 10005) or the ``/admin/cancel_reassignment_in_progress``
znode; the queue is ``/admin/reassign_partitions_queue`` written with kazoo.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError

from client.admin import AdminClient

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(60)]

REPO = Path(__file__).resolve().parents[2]
BROKERS = (1, 2, 3, 4)
SIZE = 400 * 1024  # bytes per partition
THROTTLE = 40 * 1024  # bytes/s: a throttled move would take SIZE / THROTTLE = 10 s
BANDWIDTH = 200 * 1024  # bytes/s per copy without throttle: 2 s per move
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
RATE_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
NO_REASSIGNMENT_IN_PROGRESS = 85
INVALID_REPLICA_ASSIGNMENT = 39  # KIP-236 skip: no original_replicas


def _spawn(args: list[str], log_path: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "reassignd", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=open(log_path, "wb"),
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_for(predicate, timeout: float, what: str, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class Cluster:
    def __init__(self, zk: KazooClient, control_port: int, bootstrap: str, log: Path):
        self.zk = zk
        self.control_port = control_port
        self.bootstrap = bootstrap
        self.log = log

    def json(self, path: str):
        return json.loads(self.zk.get(path)[0]) if self.zk.exists(path) else None

    def replicas(self, partition: int) -> list[int]:
        return self.json("/brokers/topics/orders")["partitions"][str(partition)]

    def topic(self) -> dict:
        return self.json("/brokers/topics/orders")

    def done(self) -> bool:
        return self.zk.exists("/admin/reassign_partitions") is None and not (
            self.zk.exists("/admin/reassignments") and self.zk.get_children("/admin/reassignments")
        )

    def hosted(self, partition: int) -> set[int]:
        """Brokers that hold a replica of orders-P on disk (the simulator's status)."""
        with socket.create_connection(("127.0.0.1", self.control_port), timeout=5) as s:
            s.sendall(b"status\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(1 << 20)
                if not chunk:
                    break
                data += chunk
        status = json.loads(data[3:])
        return {
            int(b) for b, info in status["brokers"].items()
            for r in info["replicas"] if (r["topic"], r["partition"]) == ("orders", partition)
        }

    def submit(self, targets: dict[int, list[int]]) -> None:
        entries = [{"topic": "orders", "partition": p, "replicas": r} for p, r in sorted(targets.items())]
        self.zk.create("/admin/reassign_partitions", json.dumps({"version": 1, "partitions": entries}).encode())

    def set_config(self, entity: str, config: dict) -> None:
        path = f"/config/{entity}"
        data = json.dumps({"version": 1, "config": config}).encode()
        if self.zk.exists(path):
            self.zk.set(path, data)
        else:
            self.zk.create(path, data, makepath=True)
        note = json.dumps({"version": 2, "entity_path": entity}).encode()
        self.zk.create("/config/changes/config_change_", note, sequence=True, makepath=True)

    def throttles(self) -> dict:
        out = {}
        for kind, keys in (("topics", (LEADER_REPLICAS, FOLLOWER_REPLICAS)), ("brokers", RATE_KEYS)):
            parent = f"/config/{kind}"
            for name in self.zk.get_children(parent) if self.zk.exists(parent) else []:
                found = {k: v for k, v in (self.json(f"{parent}/{name}") or {}).get("config", {}).items() if k in keys}
                if found:
                    out[f"{kind}/{name}"] = found
        return out

    def moving(self, partition: int) -> bool:
        return bool(self.topic().get("adding_replicas", {}).get(str(partition)))

    def cancel(self, partitions) -> dict:
        async def go():
            async with AdminClient(self.bootstrap, request_timeout_ms=20000) as admin:
                return dict(await admin.cancel_reassignments(partitions))

        return asyncio.run(go())


def _cluster(zk_hosts: str, tmp_path: Path, config: dict):
    """(Cluster, processes) with sim brokers and one controller, or raise."""
    (tmp_path / "controller.json").write_text(json.dumps({"zk_session_timeout_s": 2.0, "request_timeout_s": 5.0, **config}))
    procs = [_spawn(
        ["sim", "--zookeeper", zk_hosts, "--brokers", str(len(BROKERS)), "--topics", f"orders:3:2:{SIZE}",
         "--bandwidth", str(BANDWIDTH), "--produce-rate", "0", "--tick-ms", "50"],
        tmp_path / "sim.log")]
    line = procs[0].stdout.readline()
    assert line, (tmp_path / "sim.log").read_text()[-3000:]
    control_port = int(json.loads(line)["control"].rsplit(":", 1)[1])
    procs.append(_spawn(["controller", "--zookeeper", zk_hosts, "--id", "101", "--listen", "127.0.0.1:0",
                         "--config", str(tmp_path / "controller.json")], tmp_path / "controller.log"))
    return control_port, procs


@pytest.fixture
def cluster_factory(zk_hosts, tmp_path):
    made: list = []

    def make(**config) -> Cluster:
        zk = KazooClient(hosts=zk_hosts, timeout=10)
        zk.start(timeout=30)
        made.append(zk)
        control_port, procs = _cluster(zk_hosts, tmp_path, config)
        made.extend(procs)
        _wait_for(lambda: zk.exists("/controller"), 30, "an active controller")
        _wait_for(lambda: zk.exists("/reassignd/controllers/101"), 30, "the controller's listener")
        doc = json.loads(zk.get("/reassignd/controllers/101")[0])
        return Cluster(zk, control_port, f"{doc['host']}:{doc['port']}", tmp_path / "controller.log")

    yield make
    for item in reversed(made):
        if isinstance(item, KazooClient):
            item.stop()
            item.close()
        else:
            _stop(item)


def _away(c: Cluster, partition: int) -> list[int]:
    """A target on the two brokers that do not hold the partition."""
    return [b for b in BROKERS if b not in c.replicas(partition)]


def test_cancel_during_a_throttled_move_rolls_back_and_removes_its_throttles(cluster_factory):
    c = cluster_factory()
    original = c.replicas(0)
    target = _away(c, 0)
    # Throttles as KIP-179's ReassignPartitions sets them, marked for automatic removal.
    c.zk.create("/admin/throttled_replicas_removal", json.dumps({"version": 1, "topics": ["orders"]}).encode(), makepath=True)
    c.zk.create("/admin/throttled_rates_removal", json.dumps({"version": 1, "brokers": list(BROKERS)}).encode())
    c.set_config("topics/orders", {
        LEADER_REPLICAS: ",".join(f"0:{b}" for b in original),
        FOLLOWER_REPLICAS: ",".join(f"0:{b}" for b in target),
    })
    for b in BROKERS:
        c.set_config(f"brokers/{b}", {k: str(THROTTLE) for k in RATE_KEYS})
    began = time.monotonic()
    c.submit({0: target})
    _wait_for(lambda: c.moving(0) and c.hosted(0) == set(original) | set(target), 10, "the move to start")
    time.sleep(1.0)  # well inside the 10 s the throttled copy takes
    assert not c.done()

    results = c.cancel([("orders", 0), ("orders", 1)])
    assert results[("orders", 0)] is None
    assert getattr(results[("orders", 1)], "code", None) == NO_REASSIGNMENT_IN_PROGRESS, results
    _wait_for(c.done, 15, "the rollback to finish")
    assert time.monotonic() - began < SIZE / THROTTLE, "the throttled copy was not interrupted"
    # Replicas back to the original, nothing adding or removing, leader and ISR inside ORS.
    znode = c.topic()
    assert znode["partitions"]["0"] == original and znode["adding_replicas"] == {} and znode["removing_replicas"] == {}
    state = c.json("/brokers/topics/orders/partitions/0/state")
    assert state["leader"] in original and set(state["isr"]) <= set(original)
    # The new replicas are deleted on the brokers; the throttles are gone.
    _wait_for(lambda: c.hosted(0) == set(original), 10, "the added replicas to be deleted")
    _wait_for(lambda: c.throttles() == {}, 10, "the throttles to be removed")
    assert c.zk.exists("/admin/throttled_replicas_removal") is None
    assert c.zk.exists("/admin/throttled_rates_removal") is None


def test_cancel_of_an_entry_without_original_replicas_is_skipped_and_reported(cluster_factory):
    # One move at a time: orders-1 waits, un-started, as its writer left it (no original_replicas).
    c = cluster_factory(max_cluster_moves=1)
    original = {p: c.replicas(p) for p in (0, 1)}
    targets = {0: _away(c, 0), 1: _away(c, 1)}
    c.submit(targets)
    _wait_for(lambda: c.moving(0), 10, "orders-0 to start")
    entries = {e["partition"]: e for e in c.json("/admin/reassign_partitions")["partitions"]}
    assert "original_replicas" in entries[0] and "original_replicas" not in entries[1]

    results = c.cancel([("orders", 0), ("orders", 1)])
    assert results[("orders", 0)] is None
    skipped = results[("orders", 1)]
    assert getattr(skipped, "code", None) == INVALID_REPLICA_ASSIGNMENT and "original_replicas" in str(skipped), skipped
    # orders-0 is rolled back; orders-1 was left alone and runs once the slot is free.
    _wait_for(c.done, 25, "orders-0 rolled back and orders-1 moved")
    assert c.replicas(0) == original[0] and c.replicas(1) == targets[1]

    # The znode door reports a skip in the controller's log: make another un-started entry.
    c.submit({0: targets[0], 1: original[1][::-1]})
    _wait_for(lambda: c.moving(0), 10, "orders-0 to start again")
    c.zk.create("/admin/cancel_reassignment_in_progress", b"")
    _wait_for(lambda: c.zk.exists("/admin/cancel_reassignment_in_progress") is None, 10, "the cancel znode to go")
    _wait_for(lambda: "skipped orders-1" in c.log.read_text(), 5, "the skip to be logged")
    _wait_for(c.done, 25, "the rest to settle")
    assert c.replicas(0) == original[0] and c.replicas(1) == original[1][::-1]


def test_queue_with_a_conflicting_partition_cancels_then_reassigns(cluster_factory):
    c = cluster_factory()
    first = _away(c, 0)
    c.submit({0: first})
    _wait_for(lambda: c.moving(0), 10, "orders-0 to start")
    original = c.topic()["partitions"]["0"][len(first):]  # RS = TRS + ORS - TRS
    queued = {0: [original[0], first[0]], 2: _away(c, 2)}
    data = json.dumps({"version": 1, "partitions": [
        {"topic": "orders", "partition": p, "replicas": r} for p, r in sorted(queued.items())
    ]}).encode()
    c.zk.create("/admin/reassign_partitions_queue", data)
    with pytest.raises(NodeExistsError):  # a second batch while one waits is refused (KIP-236)
        c.zk.create("/admin/reassign_partitions_queue", data)
    _wait_for(lambda: c.zk.exists("/admin/reassign_partitions_queue") is None, 10, "the queue to be taken")
    _wait_for(c.done, 25, "the queued targets")
    assert c.replicas(0) == queued[0] and c.replicas(2) == queued[2]
    _wait_for(lambda: c.hosted(0) == set(queued[0]), 10, "orders-0's replicas to settle")
    log = c.log.read_text()
    assert "cancelling its move" in log and "rolled back orders-0" in log
