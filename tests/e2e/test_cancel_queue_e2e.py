"""End to end: KIP-236 cancel and queue on real processes.

ZooKeeper (the session fixture), ``python -m reassignd sim`` (4 brokers speaking the Kafka wire
protocol, copying no faster than the bandwidth and throttle configs allow) and a
``python -m reassignd controller``. Reassignments are written to ``/admin/reassign_partitions``
in Kafka's plain format, as a third-party tool does (the throttled one goes through KIP-179's
ReassignPartitions, the door that sets auto-removable throttles); cancels go through this project's
AdminClient (CancelReassignments, 10005) or the ``/admin/cancel_reassignment_in_progress``
znode; the queue is ``/admin/reassign_partitions_queue`` written with kazoo.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time

import pytest
from kazoo.exceptions import NodeExistsError

from client.admin import AdminClient
from tests.e2e.processes import RunningCluster, plain_reassignment, running_cluster, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(60)]

BROKERS = (1, 2, 3, 4)
CONTROLLER_ID = 101
SIZE = 400 * 1024  # bytes per partition
# bytes/s: a throttled move would take SIZE / THROTTLE = 40 s, far beyond what the rollback
# takes even on a loaded machine (the test never waits for the copy itself)
THROTTLE = 10 * 1024
BANDWIDTH = 200 * 1024  # bytes/s per copy without throttle: 2 s per move
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
RATE_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
NO_REASSIGNMENT_IN_PROGRESS = 85
INVALID_REPLICA_ASSIGNMENT = 39  # KIP-236 skip: no original_replicas
SIM_ARGS = ["--brokers", str(len(BROKERS)), "--topics", f"orders:3:2:{SIZE}", "--bandwidth", str(BANDWIDTH),
            "--produce-rate", "0", "--tick-ms", "50"]


class Orders:
    """The ``orders`` topic of a running cluster, and the KIP-236 doors onto it."""

    def __init__(self, cluster: RunningCluster):
        self.cluster = cluster
        self.zk = cluster.zk
        self.log = cluster.controller_log(CONTROLLER_ID)
        self.json = cluster.json
        self.done = cluster.reassignments_done
        self.set_config = cluster.set_dynamic_config
        self.throttles = cluster.throttle_configs

    def replicas(self, partition: int) -> list[int]:
        return self.cluster.replicas("orders", partition)

    def topic(self) -> dict:
        return self.cluster.topic("orders")

    def moving(self, partition: int) -> bool:
        return self.cluster.moving("orders", partition)

    def hosted(self, partition: int) -> set[int]:
        """Brokers that hold a replica of orders-P on disk (the simulator's status)."""
        return self.cluster.hosted().get(("orders", partition), set())

    def submit(self, targets: dict[int, list[int]]) -> None:
        self.cluster.submit({("orders", p): r for p, r in targets.items()})

    def reassign(self, targets: dict[int, list[int]], throttle: int) -> dict:
        """KIP-179 ReassignPartitions through this project's AdminClient, throttles auto-removed."""

        async def go():
            async with AdminClient(self.cluster.listeners[CONTROLLER_ID], request_timeout_ms=20000) as admin:
                moves = {("orders", p): r for p, r in targets.items()}
                return dict(await admin.reassign_partitions(moves, throttle=throttle, auto_remove_throttle=True))

        return asyncio.run(go())

    def cancel(self, partitions) -> dict:
        async def go():
            async with AdminClient(self.cluster.listeners[CONTROLLER_ID], request_timeout_ms=20000) as admin:
                return dict(await admin.cancel_reassignments(partitions))

        return asyncio.run(go())


@pytest.fixture
def cluster_factory(zk_hosts, tmp_path):
    """make(**controller config) -> Orders on sim brokers and one controller, stopped after the test."""
    with contextlib.ExitStack() as stack:

        def make(**config) -> Orders:
            return Orders(stack.enter_context(running_cluster(
                zk_hosts, tmp_path, sim_args=SIM_ARGS, controller_ids=(CONTROLLER_ID,), controller_config=config)))

        yield make


def _pairs(partition: int, brokers) -> str:
    """A throttled-replicas value as the controller writes it ("P:B,P:B", sorted)."""
    return ",".join(f"{partition}:{b}" for b in sorted(brokers))


def _away(c: Orders, partition: int) -> list[int]:
    """A target on the two brokers that do not hold the partition."""
    return [b for b in BROKERS if b not in c.replicas(partition)]


def test_cancel_during_a_throttled_move_rolls_back_and_removes_its_throttles(cluster_factory):
    c = cluster_factory()
    original = c.replicas(0)
    target = _away(c, 0)
    # The move goes through KIP-179's ReassignPartitions with a throttle marked for automatic
    # removal, not written into ZooKeeper by the test: the API writes the removal znodes, the
    # configs and /admin/reassign_partitions under the controller's throttle lock. Written one
    # by one with kazoo, the throttles sat listed for removal with no reassignment in ZooKeeper,
    # and the KIP-179 removal the controller runs when it becomes active (no reassignment ->
    # remove the listed throttles) could take the removal znodes and the configs written so
    # far, leaving the configs written after them set for ever.
    began = time.monotonic()
    assert c.reassign({0: target}, throttle=THROTTLE) == {("orders", 0): None}
    # Throttles as Kafka's ReassignPartitionsCommand sets them: the current replicas leader-
    # throttled, the new ones follower-throttled, the rate on every broker involved.
    assert c.throttles() == {
        "topics/orders": {LEADER_REPLICAS: _pairs(0, original), FOLLOWER_REPLICAS: _pairs(0, target)},
        **{f"brokers/{b}": {k: str(THROTTLE) for k in RATE_KEYS} for b in BROKERS},
    }
    assert c.json("/admin/throttled_replicas_removal")["topics"] == ["orders"]
    assert sorted(c.json("/admin/throttled_rates_removal")["brokers"]) == list(BROKERS)
    wait_for(lambda: c.moving(0) and c.hosted(0) == set(original) | set(target), 10, "the move to start")
    time.sleep(1.0)  # well inside the 40 s the throttled copy takes
    assert not c.done()

    results = c.cancel([("orders", 0), ("orders", 1)])
    assert results[("orders", 0)] is None
    assert getattr(results[("orders", 1)], "code", None) == NO_REASSIGNMENT_IN_PROGRESS, results
    wait_for(c.done, 15, "the rollback to finish")
    assert time.monotonic() - began < SIZE / THROTTLE, "the throttled copy was not interrupted"
    # Replicas back to the original, nothing adding or removing, leader and ISR inside ORS.
    znode = c.topic()
    assert znode["partitions"]["0"] == original and znode["adding_replicas"] == {} and znode["removing_replicas"] == {}
    state = c.json("/brokers/topics/orders/partitions/0/state")
    assert state["leader"] in original and set(state["isr"]) <= set(original)
    # The new replicas are deleted on the brokers; the throttles are gone.
    wait_for(lambda: c.hosted(0) == set(original), 10, "the added replicas to be deleted")
    wait_for(lambda: c.throttles() == {}, 10, "the throttles to be removed")
    assert c.zk.exists("/admin/throttled_replicas_removal") is None
    assert c.zk.exists("/admin/throttled_rates_removal") is None


def test_cancel_of_an_entry_without_original_replicas_is_skipped_and_reported(cluster_factory):
    # One move at a time: orders-1 waits, un-started, as its writer left it (no original_replicas).
    c = cluster_factory(max_cluster_moves=1)
    original = {p: c.replicas(p) for p in (0, 1)}
    targets = {0: _away(c, 0), 1: _away(c, 1)}
    c.submit(targets)
    wait_for(lambda: c.moving(0), 10, "orders-0 to start")
    entries = {e["partition"]: e for e in c.json("/admin/reassign_partitions")["partitions"]}
    assert "original_replicas" in entries[0] and "original_replicas" not in entries[1]

    results = c.cancel([("orders", 0), ("orders", 1)])
    assert results[("orders", 0)] is None
    skipped = results[("orders", 1)]
    assert getattr(skipped, "code", None) == INVALID_REPLICA_ASSIGNMENT and "original_replicas" in str(skipped), skipped
    # orders-0 is rolled back; orders-1 was left alone and runs once the slot is free.
    wait_for(c.done, 25, "orders-0 rolled back and orders-1 moved")
    assert c.replicas(0) == original[0] and c.replicas(1) == targets[1]

    # The znode door reports a skip in the controller's log: make another un-started entry.
    c.submit({0: targets[0], 1: original[1][::-1]})
    wait_for(lambda: c.moving(0), 10, "orders-0 to start again")
    c.zk.create("/admin/cancel_reassignment_in_progress", b"")
    wait_for(lambda: c.zk.exists("/admin/cancel_reassignment_in_progress") is None, 10, "the cancel znode to go")
    wait_for(lambda: "skipped orders-1" in c.log.read_text(), 5, "the skip to be logged")
    wait_for(c.done, 25, "the rest to settle")
    assert c.replicas(0) == original[0] and c.replicas(1) == original[1][::-1]


def test_queue_with_a_conflicting_partition_cancels_then_reassigns(cluster_factory):
    c = cluster_factory()
    first = _away(c, 0)
    c.submit({0: first})
    wait_for(lambda: c.moving(0), 10, "orders-0 to start")
    original = c.topic()["partitions"]["0"][len(first):]  # RS = TRS + ORS - TRS
    queued = {0: [original[0], first[0]], 2: _away(c, 2)}
    data = plain_reassignment({("orders", p): r for p, r in queued.items()})
    # The controller takes a queued batch within milliseconds: held stopped (for far less than its
    # session timeout) it cannot take the first before the second is tried, which a fresh clone's
    # run once let it do.
    controller = c.cluster.controller(CONTROLLER_ID)
    os.kill(controller.pid, signal.SIGSTOP)
    try:
        c.zk.create("/admin/reassign_partitions_queue", data)
        with pytest.raises(NodeExistsError):  # a second batch while one waits is refused (KIP-236)
            c.zk.create("/admin/reassign_partitions_queue", data)
    finally:
        os.kill(controller.pid, signal.SIGCONT)
    wait_for(lambda: c.zk.exists("/admin/reassign_partitions_queue") is None, 10, "the queue to be taken")
    wait_for(c.done, 25, "the queued targets")
    assert c.replicas(0) == queued[0] and c.replicas(2) == queued[2]
    wait_for(lambda: c.hosted(0) == set(queued[0]), 10, "orders-0's replicas to settle")
    log = c.log.read_text()
    assert "cancelling its move" in log and "rolled back orders-0" in log
