"""KIP-179's three APIs and KIP-455's Alter over real sockets: in-process controllers on a real
ZooKeeper (tests.admin.cluster), raw frames and this project's AdminClient."""

from __future__ import annotations

import json

import pytest

from client.admin import AdminClient
from client.errors import KafkaApiError
from protocol.errors import ErrorCode
from tests.admin.cluster import AdminCluster

pytestmark = pytest.mark.zk

TOPICS = {"orders": {0: [1, 2], 1: [2, 3], 2: [3, 1]}}
RATE_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


def _bootstrap(c: AdminCluster, cid: int) -> str:
    host, port = c.addr(cid)
    return f"{host}:{port}"


async def test_throttle_apis_through_the_standby_and_raw_frames(zk_hosts):
    async with AdminCluster(zk_hosts, topics=TOPICS) as c:
        active = await c.wait_active()
        standby = c.standby(active)
        # Raw frames to the standby: NOT_CONTROLLER for every entity, nothing written.
        body = {"broker_throttles": [{"broker_id": 1, "leader_rate": 5, "follower_rate": 6}],
                "remove_throttle": True, "timeout": 1000, "validate_only": False}
        answer = await c.call(standby, 10001, 1, body)
        assert answer["broker_error"] == [
            {"broker_id": 1, "error_code": ErrorCode.NOT_CONTROLLER, "error_message": answer["broker_error"][0]["error_message"]}]
        assert not c.kafka.zk.exists("/config/brokers/1")
        # The client finds the active controller from the standby.
        async with AdminClient(_bootstrap(c, standby)) as admin:
            rates = await admin.alter_interbroker_throttled_rates({1: (1000, 2000), 9: (1, 1)})
            assert rates[1] is None and rates[9].code == ErrorCode.UNKNOWN_MEMBER_ID
            replicas = await admin.alter_interbroker_throttled_replicas({("orders", 0): [1, 2], ("nope", 0): [1]})
            assert replicas[("orders", 0)] is None
            assert replicas[("nope", 0)].code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            with pytest.raises(KafkaApiError):
                (await admin.reassign_partitions({("orders", 1): [3, 9]}, throttle=100)).all()
        assert c.get_json("/config/brokers/1")["config"] == {RATE_KEYS[0]: "1000", RATE_KEYS[1]: "2000"}
        assert c.get_json("/config/topics/orders")["config"] == {
            "leader.replication.throttled.replicas": "0:1,0:2", "follower.replication.throttled.replicas": "0:1,0:2"}
        assert c.get_json("/admin/throttled_rates_removal") == {"version": 1, "brokers": [1]}
        assert c.get_json("/admin/throttled_replicas_removal") == {"version": 1, "topics": ["orders"]}
        notes = [json.loads(c.kafka.zk.get(f"/config/changes/{n}")[0]) for n in c.kafka.zk.get_children("/config/changes")]
        assert {"version": 2, "entity_path": "brokers/1"} in notes and {"version": 2, "entity_path": "topics/orders"} in notes


async def test_reassign_v0_v1_and_alter_over_the_wire(zk_hosts):
    async with AdminCluster(zk_hosts, controllers=(101,), topics=TOPICS) as c:
        await c.wait_active()
        async with AdminClient(_bootstrap(c, 101)) as admin:
            first = await admin.reassign_partitions({("orders", 0): [3, 4]}, throttle=10_000)
            assert first[("orders", 0)] is None
            # No broker copies anything here: the move keeps running, so v0 is refused ...
            refused = await admin.reassign_partitions({("orders", 1): [4, 1]})
            assert refused[("orders", 1)].code == ErrorCode.REASSIGNMENT_IN_PROGRESS
            # ... and v1 adds to it.
            added = await admin.reassign_partitions({("orders", 1): [4, 1]}, additional=True)
            assert added[("orders", 1)] is None
        # KIP-455 Alter, raw frames (a Kafka client's request).
        answer = await c.call(101, 45, 0, {"timeout_ms": 5000, "topics": [
            {"name": "orders", "partitions": [{"partition_index": 2, "replicas": [4, 2]},
                                              {"partition_index": 7, "replicas": [1, 2]}]}]})
        assert answer["error_code"] == 0
        assert [(p["partition_index"], p["error_code"]) for p in answer["responses"][0]["partitions"]] == [
            (2, 0), (7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
        entries = {e["partition"]: e for e in c.get_json("/admin/reassign_partitions")["partitions"]}
        assert {p: (e["replicas"], e["original_replicas"]) for p, e in entries.items()} == {
            0: ([3, 4], [1, 2]), 1: ([4, 1], [2, 3]), 2: ([4, 2], [3, 1])}
