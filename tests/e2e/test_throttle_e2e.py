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
import time

import pytest

from client.admin import AdminClient
from tests.e2e.processes import RunningCluster, running_cluster, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(90)]

CONTROLLER_IDS = (101, 102)
SIZE = 160 * 1024  # bytes in each partition
THROTTLE = 40 * 1024  # bytes/s: a move takes at least SIZE / THROTTLE = 4 s
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
RATE_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
SIM_ARGS = ["--brokers", "4", "--topics", "orders:2:1:160KiB", "--bandwidth", "100MiB", "--produce-rate", "0",
            "--tick-ms", "50"]


@pytest.fixture
def cluster(zk_hosts, tmp_path):
    with running_cluster(zk_hosts, tmp_path, sim_args=SIM_ARGS, controller_ids=CONTROLLER_IDS) as c:
        yield c


async def _reassign(bootstrap: str, moves: dict, throttle: int) -> dict:
    async with AdminClient(bootstrap, request_timeout_ms=20000) as admin:
        result = await admin.reassign_partitions(moves, throttle=throttle, auto_remove_throttle=True)
    return dict(result)


def _start_throttled_move(c: RunningCluster, standby_bootstrap: bool) -> tuple[int, int, float]:
    (source,) = c.replicas("orders", 0)
    target = next(b for b in (1, 2, 3, 4) if b != source and b not in c.replicas("orders", 1))
    active = c.active_controller()
    cid = next(i for i in CONTROLLER_IDS if (i != active) == standby_bootstrap)
    began = time.monotonic()
    assert asyncio.run(_reassign(c.listeners[cid], {("orders", 0): [target]}, THROTTLE)) == {("orders", 0): None}
    # While the move runs: the throttle configs and the removal znodes are in ZooKeeper.
    throttles = c.throttle_configs()
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
    wait_for(c.reassignments_done, 60, "the move to complete", interval=0.05)
    took = time.monotonic() - began
    assert c.replicas("orders", 0) == [target]
    assert took >= SIZE / THROTTLE, took
    wait_for(lambda: c.throttle_configs() == {}, 10, "the throttles to be removed")
    assert c.zk.exists("/admin/throttled_replicas_removal") is None
    assert c.zk.exists("/admin/throttled_rates_removal") is None


def test_throttles_go_after_the_active_controller_is_killed_mid_move(cluster):
    c = cluster
    source, target, began = _start_throttled_move(c, standby_bootstrap=False)
    time.sleep(1.0)  # well inside the 4 s the move takes
    assert not c.reassignments_done() and c.throttle_configs()
    killed = c.active_controller()
    c.kill_controller(killed)
    wait_for(lambda: c.new_active_controller(killed), 20, "a new active controller")
    wait_for(c.reassignments_done, 60, "the move to complete after failover", interval=0.05)
    assert c.replicas("orders", 0) == [target]
    assert time.monotonic() - began >= SIZE / THROTTLE
    wait_for(lambda: c.throttle_configs() == {}, 10, "the throttles to be removed after failover")
    assert c.zk.exists("/admin/throttled_replicas_removal") is None
    assert c.zk.exists("/admin/throttled_rates_removal") is None
