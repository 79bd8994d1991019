"""End to end: KIP-179 ReassignPartitions with a throttle, over the wire, on real processes.

ZooKeeper (the session fixture), ``python -m reassignd sim`` (brokers that copy no faster than
the throttle configs allow) and two ``python -m reassignd controller`` processes; the request
goes through this project's AdminClient to a controller's admin listener. While the move runs
the throttle configs and the removal znodes are in ZooKeeper; the move takes at least
size / throttle; once it completes every throttle config is gone - also when the active
controller is killed with SIGKILL in the middle of the move.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from client.admin import AdminClient

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(90)]

REPO = Path(__file__).resolve().parents[2]
CONTROLLER_IDS = (101, 102)
SIZE = 160 * 1024  # bytes in each partition
THROTTLE = 40 * 1024  # bytes/s: a move takes at least SIZE / THROTTLE = 4 s
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
RATE_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


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
    def __init__(self, zk: KazooClient, procs: dict, listeners: dict):
        self.zk = zk
        self.procs = procs
        self.listeners = listeners

    def json(self, path: str):
        return json.loads(self.zk.get(path)[0]) if self.zk.exists(path) else None

    def config(self, path: str) -> dict:
        doc = self.json(path)
        return doc["config"] if doc else {}

    def throttles(self) -> dict:
        """Every throttle key set on any topic or broker config."""
        out = {}
        for kind, keys in (("topics", (LEADER_REPLICAS, FOLLOWER_REPLICAS)), ("brokers", RATE_KEYS)):
            parent = f"/config/{kind}"
            for name in self.zk.get_children(parent) if self.zk.exists(parent) else []:
                found = {k: v for k, v in self.config(f"{parent}/{name}").items() if k in keys}
                if found:
                    out[f"{kind}/{name}"] = found
        return out

    def active(self) -> int:
        return self.json("/controller")["brokerid"]

    def replicas(self, topic: str, partition: int) -> list[int]:
        return self.json(f"/brokers/topics/{topic}")["partitions"][str(partition)]

    def done(self) -> bool:
        return self.zk.exists("/admin/reassign_partitions") is None and not (
            self.zk.exists("/admin/reassignments") and self.zk.get_children("/admin/reassignments")
        )


@pytest.fixture
def cluster(zk_hosts, tmp_path):
    config = tmp_path / "controller.json"
    config.write_text(json.dumps({"zk_session_timeout_s": 2.0, "request_timeout_s": 5.0}))
    procs = {"sim": _spawn(
        ["sim", "--zookeeper", zk_hosts, "--brokers", "4", "--topics", "orders:2:1:160KiB",
         "--bandwidth", "100MiB", "--produce-rate", "0", "--tick-ms", "50"],
        tmp_path / "sim.log")}
    zk = KazooClient(hosts=zk_hosts, timeout=10)
    zk.start(timeout=30)
    try:
        assert procs["sim"].stdout.readline(), (tmp_path / "sim.log").read_text()[-3000:]
        for cid in CONTROLLER_IDS:
            procs[cid] = _spawn(["controller", "--zookeeper", zk_hosts, "--id", str(cid), "--listen", "127.0.0.1:0",
                                 "--config", str(config)], tmp_path / f"controller-{cid}.log")
        _wait_for(lambda: zk.exists("/controller"), 30, "an active controller")
        _wait_for(lambda: len(zk.get_children("/reassignd/controllers")) == 2, 30, "2 registered controllers")
        listeners = {}
        for cid in CONTROLLER_IDS:
            doc = json.loads(zk.get(f"/reassignd/controllers/{cid}")[0])
            listeners[cid] = f"{doc['host']}:{doc['port']}"
        yield Cluster(zk, procs, listeners)
    finally:
        zk.stop()
        zk.close()
        for p in reversed(list(procs.values())):
            _stop(p)


async def _reassign(bootstrap: str, moves: dict, throttle: int) -> dict:
    async with AdminClient(bootstrap, request_timeout_ms=20000) as admin:
        result = await admin.reassign_partitions(moves, throttle=throttle, auto_remove_throttle=True)
    return dict(result)


def _start_throttled_move(c: Cluster, standby_bootstrap: bool) -> tuple[int, int, float]:
    (source,) = c.replicas("orders", 0)
    target = next(b for b in (1, 2, 3, 4) if b != source and b not in c.replicas("orders", 1))
    active = c.active()
    cid = next(i for i in CONTROLLER_IDS if (i != active) == standby_bootstrap)
    began = time.monotonic()
    assert asyncio.run(_reassign(c.listeners[cid], {("orders", 0): [target]}, THROTTLE)) == {("orders", 0): None}
    # While the move runs: the throttle configs and the removal znodes are in ZooKeeper.
    throttles = c.throttles()
    assert throttles["topics/orders"] == {LEADER_REPLICAS: f"0:{source}", FOLLOWER_REPLICAS: f"0:{target}"}
    for b in (source, target):
        assert throttles[f"brokers/{b}"] == {k: str(THROTTLE) for k in RATE_KEYS}
    assert set(throttles) == {"topics/orders", f"brokers/{source}", f"brokers/{target}"}
    assert c.json("/admin/throttled_replicas_removal")["topics"] == ["orders"]
    assert sorted(c.json("/admin/throttled_rates_removal")["brokers"]) == sorted({source, target})
    assert c.json("/admin/reassign_partitions")["partitions"] == [
        {"topic": "orders", "partition": 0, "replicas": [target], "original_replicas": [source]}
    ]
    return source, target, began


def test_throttled_reassignment_takes_size_over_throttle_and_its_throttles_go(cluster):
    c = cluster
    source, target, began = _start_throttled_move(c, standby_bootstrap=True)
    _wait_for(c.done, 60, "the move to complete", interval=0.05)
    took = time.monotonic() - began
    assert c.replicas("orders", 0) == [target]
    assert took >= SIZE / THROTTLE, took
    _wait_for(lambda: c.throttles() == {}, 10, "the throttles to be removed")
    assert c.zk.exists("/admin/throttled_replicas_removal") is None
    assert c.zk.exists("/admin/throttled_rates_removal") is None


def test_throttles_go_after_the_active_controller_is_killed_mid_move(cluster):
    c = cluster
    source, target, began = _start_throttled_move(c, standby_bootstrap=False)
    time.sleep(1.0)  # well inside the 4 s the move takes
    assert not c.done() and c.throttles()
    killed = c.active()
    c.procs[killed].send_signal(signal.SIGKILL)
    c.procs[killed].wait()
    _wait_for(lambda: c.zk.exists("/controller") and c.active() != killed, 20, "a new active controller")
    _wait_for(c.done, 60, "the move to complete after failover", interval=0.05)
    assert c.replicas("orders", 0) == [target]
    assert time.monotonic() - began >= SIZE / THROTTLE
    _wait_for(lambda: c.throttles() == {}, 10, "the throttles to be removed after failover")
    assert c.zk.exists("/admin/throttled_replicas_removal") is None
    assert c.zk.exists("/admin/throttled_rates_removal") is None
