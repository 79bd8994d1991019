"""ControlledShutdown (7) over real sockets: in-process controllers on a real ZooKeeper
(tests.admin.cluster), raw frames as a Kafka broker sends them - v0's header without a client
id included (controller.shell.admin.controlled_shutdown, controller.core.controlled_shutdown)."""

from __future__ import annotations

import struct

import pytest

import protocol
from protocol import ApiKey
from protocol.errors import ErrorCode
from tests.admin.cluster import AdminCluster, Wire

pytestmark = pytest.mark.zk

# orders-0 led by 1 (moves to 2), orders-1 without 1, orders-2 followed by 1 (leaves the ISR),
# orders-3 one replica on 1 (left, not listed: Kafka's partitionLeadersOnBroker)
TOPICS = {"orders": {0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1]}}
KEY = ApiKey.CONTROLLED_SHUTDOWN


def _v0_frame(correlation_id: int, broker_id: int) -> bytes:
    """Version 0 as Kafka's brokers before 0.11 sent it: header v0 (key, version, correlation
    id: no client id), then the broker id."""
    payload = struct.pack(">hhii", KEY, 0, correlation_id, broker_id)
    return struct.pack(">i", len(payload)) + payload


def _state(c: AdminCluster, p: int) -> dict:
    return c.get_json(f"/brokers/topics/orders/partitions/{p}/state")


async def test_a_broker_shutting_down_hands_its_leaderships_over(zk_hosts):
    async with AdminCluster(zk_hosts, topics=TOPICS) as c:
        active = await c.wait_active()
        standby = c.standby(active)
        epoch = c.kafka.zk.get("/brokers/ids/1")[1].czxid
        before = {p: _state(c, p) for p in range(4)}

        # A standby: NOT_CONTROLLER (the broker asks the one /controller names), nothing written.
        assert await c.call(standby, KEY, 3, {"broker_id": 1, "broker_epoch": epoch}) == {
            "error_code": ErrorCode.NOT_CONTROLLER, "remaining_partitions": []}
        # An unknown broker, a request from before the broker's registration: refused, nothing written.
        assert (await c.call(active, KEY, 2, {"broker_id": 9, "broker_epoch": 5}))["error_code"] == \
            ErrorCode.BROKER_NOT_AVAILABLE
        assert (await c.call(active, KEY, 3, {"broker_id": 1, "broker_epoch": epoch - 1}))["error_code"] == \
            ErrorCode.STALE_BROKER_EPOCH
        assert {p: _state(c, p) for p in range(4)} == before

        # v0, header without a client id: answered in v0, the leaderships moved.
        wire = await Wire.open(c.addr(active))
        try:
            wire.send_raw(_v0_frame(77, 1))
            header, answer = protocol.decode_response(KEY, 0, await wire.read_frame())
        finally:
            await wire.close()
        assert header["correlation_id"] == 77
        assert answer == {"error_code": ErrorCode.NONE, "remaining_partitions": []}
        after = {p: _state(c, p) for p in range(4)}
        assert (after[0]["leader"], after[0]["isr"], after[0]["leader_epoch"]) == (2, [2], 1)
        assert after[1] == before[1] and after[3] == before[3]
        assert (after[2]["leader"], after[2]["isr"], after[2]["leader_epoch"]) == (3, [3], 1)
        assert {s["controller_epoch"] for s in (after[0], after[2])} == {c.get_json("/controller_epoch")}

        # Asked again (a broker's retry), v3 with its epoch: nothing left to do, nothing written.
        again = await c.call(active, KEY, 3, {"broker_id": 1, "broker_epoch": epoch})
        assert again == {"error_code": ErrorCode.NONE, "remaining_partitions": []}
        assert {p: _state(c, p) for p in range(4)} == after


async def test_a_partition_no_other_isr_member_can_lead_is_listed_and_its_leader_kept(zk_hosts):
    topics = {"orders": {0: [1, 2], 1: [2, 1]}}
    async with AdminCluster(zk_hosts, controllers=(101,), topics=topics) as c:
        await c.wait_active()
        c.set_json("/brokers/topics/orders/partitions/0/state",
                   {"version": 1, "leader": 1, "leader_epoch": 3, "controller_epoch": 1, "isr": [1]})
        # The controller reads the partition's state for the request: the ISR change counts
        # before its notification arrives.
        answer = await c.call(101, KEY, 1, {"broker_id": 1})
        assert answer == {"error_code": ErrorCode.NONE,
                          "remaining_partitions": [{"topic_name": "orders", "partition_index": 0}]}
        assert _state(c, 0)["leader"] == 1 and _state(c, 0)["leader_epoch"] == 3
        assert _state(c, 1)["isr"] == [2]  # it stopped following orders-1
