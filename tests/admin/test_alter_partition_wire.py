"""AlterPartition (56) over real sockets: in-process controllers on a real ZooKeeper
(tests.admin.cluster), each version as a Kafka 2.7+ leader sends it: by topic name (v0-1), by
topic id (v2), with member epochs (v3) (controller.shell.admin.alter_partition,
controller.core.alter_partition)."""

from __future__ import annotations

import base64
import json
import uuid

import pytest

from protocol import ApiKey
from protocol.errors import ErrorCode
from tests.admin.cluster import AdminCluster

pytestmark = pytest.mark.zk

TOPICS = {"orders": {0: [1, 2, 3], 1: [2, 3, 1]}}
KEY = ApiKey.ALTER_PARTITION


def _znode(c: AdminCluster, p: int) -> tuple[dict, int]:
    data, stat = c.kafka.zk.get(f"/brokers/topics/orders/partitions/{p}/state")
    return json.loads(data), stat.version


def _v1(broker: int, epoch: int, p: int, le: int, isr: list[int], pe: int, topic="orders") -> dict:
    return {"broker_id": broker, "broker_epoch": epoch, "topics": [{"topic_name": topic, "partitions": [
        {"partition_index": p, "leader_epoch": le, "new_isr": isr, "leader_recovery_state": 0, "partition_epoch": pe}]}]}


async def test_a_leader_shrinks_and_grows_its_isr_through_the_controller(zk_hosts):
    async with AdminCluster(zk_hosts, topics=TOPICS) as c:
        active = await c.wait_active()
        standby = c.standby(active)
        epochs = {b: c.kafka.zk.get(f"/brokers/ids/{b}")[1].czxid for b in (1, 2, 3)}
        # A state the controller has not heard of (no notification): the request's read counts.
        c.set_json("/brokers/topics/orders/partitions/0/state",
                   {"version": 1, "leader": 1, "leader_epoch": 3, "controller_epoch": 1, "isr": [1, 2, 3]})
        state, version = _znode(c, 0)
        le = 3

        # A standby: NOT_CONTROLLER, nothing written; an old broker epoch: STALE_BROKER_EPOCH.
        shrink = _v1(1, epochs[1], 0, le, [1, 2], version)
        assert (await c.call(standby, KEY, 1, shrink)) == {"throttle_time_ms": 0, "error_code": ErrorCode.NOT_CONTROLLER,
                                                           "topics": []}
        assert (await c.call(active, KEY, 1, _v1(1, epochs[1] - 1, 0, le, [1, 2], version)))["error_code"] == \
            ErrorCode.STALE_BROKER_EPOCH
        assert _znode(c, 0) == (state, version)

        # v0 (AlterIsr): the shrink is written by the controller, its epoch on it, the leader kept.
        answer = await c.call(active, KEY, 0, shrink)
        [part] = answer["topics"][0]["partitions"]
        assert answer["error_code"] == ErrorCode.NONE and answer["topics"][0]["topic_name"] == "orders"
        assert (part["error_code"], part["leader_id"], part["leader_epoch"], part["isr"], part["partition_epoch"]) == \
            (ErrorCode.NONE, 1, le, [1, 2], version + 1)
        after, after_version = _znode(c, 0)
        assert after_version == version + 1 and after["isr"] == [1, 2] and after["leader"] == 1
        assert after["leader_epoch"] == le and after["controller_epoch"] == c.get_json("/controller_epoch")

        # The same again (a leader's retry): the same answer, nothing written.
        again = await c.call(active, KEY, 1, shrink)
        assert again["topics"][0]["partitions"][0]["partition_epoch"] == version + 1
        assert _znode(c, 0)[1] == version + 1

        # From the old zkVersion: INVALID_UPDATE_VERSION; an old leader epoch: FENCED_LEADER_EPOCH;
        # a follower asking: NOT_LEADER_OR_FOLLOWER; an unknown partition.
        codes = [(await c.call(active, KEY, 1, req))["topics"][0]["partitions"][0]["error_code"] for req in (
            _v1(1, epochs[1], 0, le, [1], version),
            _v1(1, epochs[1], 0, le - 1, [1], version + 1),
            _v1(2, epochs[2], 0, le, [2, 1], version + 1),
            _v1(1, epochs[1], 0, le, [1], version + 1, topic="nope"),
        )]
        assert codes[0] == ErrorCode.INVALID_UPDATE_VERSION
        assert codes[1:] == [ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                             ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
        assert _znode(c, 0)[1] == version + 1

        # v2, by topic id: grows back; an unknown id: UNKNOWN_TOPIC_ID.
        topic_id = uuid.UUID(bytes=base64.urlsafe_b64decode(c.get_json("/brokers/topics/orders")["topic_id"] + "=="))
        grow = {"broker_id": 1, "broker_epoch": epochs[1], "topics": [
            {"topic_id": topic_id, "partitions": [{"partition_index": 0, "leader_epoch": le, "new_isr": [1, 2, 3],
                                                   "leader_recovery_state": 0, "partition_epoch": version + 1}]},
            {"topic_id": uuid.uuid4(), "partitions": [{"partition_index": 0, "leader_epoch": 0, "new_isr": [1],
                                                       "leader_recovery_state": 0, "partition_epoch": 0}]}]}
        answer = await c.call(active, KEY, 2, grow)
        assert answer["topics"][0]["topic_id"] == topic_id
        assert answer["topics"][0]["partitions"][0]["isr"] == [1, 2, 3]
        assert answer["topics"][1]["partitions"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID
        assert _znode(c, 0)[0]["isr"] == [1, 2, 3]

        # v3: a member given a broker epoch that is not its registration's is ineligible.
        c.set_json("/brokers/topics/orders/partitions/1/state",
                   {"version": 1, "leader": 2, "leader_epoch": 5, "controller_epoch": 1, "isr": [2, 3, 1]})
        state1, version1 = _znode(c, 1)
        members = [{"broker_id": 2, "broker_epoch": epochs[2]}, {"broker_id": 3, "broker_epoch": epochs[3] - 1}]
        shrink1 = {"broker_id": 2, "broker_epoch": epochs[2], "topics": [
            {"topic_id": topic_id, "partitions": [{"partition_index": 1, "leader_epoch": 5, "new_isr_with_epochs": members,
                                                   "leader_recovery_state": 0, "partition_epoch": version1}]}]}
        answer = await c.call(active, KEY, 3, shrink1)
        assert answer["topics"][0]["partitions"][0]["error_code"] == ErrorCode.INELIGIBLE_REPLICA
        assert _znode(c, 1) == (state1, version1)
        members[1]["broker_epoch"] = epochs[3]
        answer = await c.call(active, KEY, 3, shrink1)
        assert answer["topics"][0]["partitions"][0]["isr"] == [2, 3]
        assert _znode(c, 1)[0]["isr"] == [2, 3]
