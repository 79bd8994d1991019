"""ApiVersions and Metadata from in-process controllers on a real ZooKeeper, through sockets."""

from __future__ import annotations

import uuid

import pytest

import protocol
from tests.admin.cluster import AdminCluster

pytestmark = pytest.mark.zk

TOPICS = {"orders": {0: [1, 2], 1: [2, 3], 2: [3, 1]}, "__consumer_offsets": {0: [1, 2, 3]}}


async def test_api_versions_lists_the_table_within_the_codec(zk_hosts):
    async with AdminCluster(zk_hosts, controllers=(101,), topics=TOPICS) as c:
        await c.wait_active()
        body = await c.call(101, 18, 3, {"client_software_name": "t", "client_software_version": "1"})
        ranges = {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}
        codec = protocol.supported_apis()
        table = c.daemons[101].listener.handler.table
        assert set(ranges) == set(table) | {18}
        for key, (low, high) in ranges.items():
            assert codec[key][0] <= low <= high <= codec[key][1]
        assert ranges[3] == (0, 13)


async def test_metadata_names_every_node_the_active_controller_and_topics(zk_hosts):
    async with AdminCluster(zk_hosts, topics=TOPICS, racks={1: "r1", 2: "r2"}) as c:
        c.set_json("/cluster/id", {"version": "1", "id": "Zm9vYmFyYmF6cXV4"})
        active = await c.wait_active()
        standby = c.standby(active)
        for cid in (active, standby):  # a standby answers too, naming the active one
            body = await c.call(cid, 3, 12, {"topics": None, "allow_auto_topic_creation": False})
            nodes = {b["node_id"]: b for b in body["brokers"]}
            assert set(nodes) == {1, 2, 3, 4, 101, 102}
            assert (nodes[active]["host"], nodes[active]["port"]) == c.addr(active)
            assert (nodes[standby]["host"], nodes[standby]["port"]) == c.addr(standby)
            assert nodes[1]["rack"] == "r1" and nodes[3]["rack"] is None and nodes[1]["port"] == 9091
            assert body["controller_id"] == active
            assert body["cluster_id"] == "Zm9vYmFyYmF6cXV4"
            topics = {t["name"]: t for t in body["topics"]}
            assert set(topics) == {"orders", "__consumer_offsets"}
            assert topics["__consumer_offsets"]["is_internal"] and not topics["orders"]["is_internal"]
            parts = {p["partition_index"]: p for p in topics["orders"]["partitions"]}
            assert parts[1]["replica_nodes"] == [2, 3] and parts[1]["leader_id"] == 2
            assert parts[1]["isr_nodes"] == [2, 3] and parts[1]["leader_epoch"] == 0
            assert all(p["error_code"] == 0 and p["offline_replicas"] == [] for p in parts.values())


async def test_metadata_topic_list_semantics_per_version(zk_hosts):
    async with AdminCluster(zk_hosts, controllers=(101,), topics=TOPICS) as c:
        await c.wait_active()
        # v0: an empty list means every topic
        v0 = await c.call(101, 3, 0, {"topics": []})
        assert {t["name"] for t in v0["topics"]} == set(TOPICS)
        # v1+: empty means none, null means all
        assert (await c.call(101, 3, 1, {"topics": []}))["topics"] == []
        assert {t["name"] for t in (await c.call(101, 3, 1, {"topics": None}))["topics"]} == set(TOPICS)
        # unknown and illegal names get per-topic errors, the others their data
        body = await c.call(101, 3, 9, {"topics": [{"name": "orders"}, {"name": "nope"}, {"name": "bad/name"}],
                                        "allow_auto_topic_creation": True})
        codes = {t["name"]: t["error_code"] for t in body["topics"]}
        assert codes == {"orders": 0, "nope": 3, "bad/name": 17}
        assert not c.kafka.zk.exists("/brokers/topics/nope")  # nothing auto-created
        # v10+: a topic asked for by id only is unknown here
        body = await c.call(101, 3, 12, {"topics": [{"name": None, "topic_id": uuid.uuid4()}]})
        assert body["topics"][0]["error_code"] == 100 and body["topics"][0]["name"] is None


async def test_metadata_reports_unregistered_replicas_and_missing_leaders(zk_hosts):
    # orders-3 lives on broker 3 alone: once 3 is gone no live replica can lead it, whether or
    # not the controller's broker-failure election (DESIGN.md 4.7) has run yet. (orders-2,
    # led by 3 too, may already have a new leader from its ISR.)
    topics = {**TOPICS, "orders": {**TOPICS["orders"], 3: [3]}}
    async with AdminCluster(zk_hosts, controllers=(101,), topics=topics) as c:
        await c.wait_active()
        c.kafka.zk.delete("/brokers/ids/3")
        body = await c.call(101, 3, 5, {"topics": [{"name": "orders"}], "allow_auto_topic_creation": False})
        parts = {p["partition_index"]: p for p in body["topics"][0]["partitions"]}
        assert parts[1]["offline_replicas"] == [3] and parts[1]["error_code"] == 0 and parts[1]["leader_id"] == 2
        assert parts[3]["error_code"] == 5 and parts[3]["leader_id"] == -1  # its only replica is gone
        assert parts[2]["leader_id"] in (-1, 1) and parts[2]["error_code"] == (5 if parts[2]["leader_id"] == -1 else 0)
        assert 3 not in {b["node_id"] for b in body["brokers"]}
        # v0 clients see only live replicas, flagged REPLICA_NOT_AVAILABLE
        v0 = await c.call(101, 3, 0, {"topics": [{"name": "orders"}]})
        p1 = next(p for p in v0["topics"][0]["partitions"] if p["partition_index"] == 1)
        assert p1["error_code"] == 9 and p1["replica_nodes"] == [2]


async def test_metadata_without_a_controller_or_cluster_id_on_the_twin():
    """No /controller (an election under way): controller_id -1; no /cluster/id: null."""
    from controller.core.config import ControllerConfig
    from controller.shell.admin.base import AdminContext
    from controller.shell.admin.metadata import handle_metadata
    from controller.shell.role import Role
    from tests.client.cluster_zk import broker_payload
    from znodes.twin import TwinServer

    server = TwinServer()
    store = server.connect()
    await store.create("/brokers/ids/1", broker_payload(1), makepath=True)
    await store.create("/brokers/topics/t", b'{"version":2,"partitions":{"0":[1,2]}}', makepath=True)
    # partition 0 has no state znode yet: no leader
    role = Role(7)
    role.store = store
    body = await handle_metadata(AdminContext(role, ControllerConfig()), 12, {"topics": None})
    assert body["controller_id"] == -1 and body["cluster_id"] is None
    assert [b["node_id"] for b in body["brokers"]] == [1]
    (p0,) = body["topics"][0]["partitions"]
    assert p0["leader_id"] == -1 and p0["error_code"] == 5 and p0["offline_replicas"] == [2]
    # a malformed topic znode reads as an unknown topic, not a failure
    await store.set("/brokers/topics/t", b"{not json")
    body = await handle_metadata(AdminContext(role, ControllerConfig()), 12, {"topics": [{"name": "t"}]})
    assert body["topics"][0]["error_code"] == 3


async def test_metadata_of_many_partitions_reads_in_bulk(zk_hosts):
    """Hundreds of partition states in one bulk read (multiRead), an unreadable one among them."""
    big = {p: [p % 4 + 1, (p + 1) % 4 + 1] for p in range(600)}
    async with AdminCluster(zk_hosts, controllers=(101,), topics={"big": big}) as c:
        await c.wait_active()
        c.kafka.zk.set("/brokers/topics/big/partitions/7/state", b'{"version":1,"leader":"x"}')
        body = await c.call(101, 3, 12, {"topics": [{"name": "big"}]})
        parts = {p["partition_index"]: p for p in body["topics"][0]["partitions"]}
        assert len(parts) == len(big)
        for p, replicas in big.items():
            if p == 7:  # unreadable state: no leader known
                assert parts[p]["leader_id"] == -1 and parts[p]["error_code"] == 5
                continue
            assert (parts[p]["leader_id"], parts[p]["isr_nodes"], parts[p]["replica_nodes"]) == (replicas[0], replicas, replicas)
        # the controller's own session answers: a state it changes is seen at once
        c.kafka.zk.set("/brokers/topics/big/partitions/8/state",
                       b'{"version":1,"leader":3,"leader_epoch":1,"controller_epoch":1,"isr":[3]}')
        again = await c.call(101, 3, 12, {"topics": [{"name": "big"}]})
        moved = {p["partition_index"]: p for p in again["topics"][0]["partitions"]}[8]
        assert (moved["leader_id"], moved["isr_nodes"]) == (3, [3])
