"""A topic a Kafka broker auto-creates (``auto.create.topics.enable``, Kafka's default) is placed
over the broker's metadata cache, whose live brokers include the controller instances (engine
step 8 lists them so that Kafka 3.x brokers find the controller): the active controller places
such partitions again over the registered brokers before giving them states (engine step 10a),
on real ZooKeeper with real controller daemons; the topic znode is rewritten, no instance ever
leads or hosts a replica."""

from __future__ import annotations

import asyncio

import pytest

from tests.admin.cluster import AdminCluster

pytestmark = pytest.mark.zk

BROKERS = {1, 2, 3, 4}


async def test_an_auto_created_topic_on_controller_instances_is_placed_on_brokers(zk_hosts):
    async with AdminCluster(zk_hosts, controllers=(101, 102), topics={"t": {0: [1, 2]}}) as c:
        active = await c.wait_active()
        standby = c.standby(active)
        # As ZkAdminManager.createTopics writes it: the topic znode alone, no states.
        c.set_json("/brokers/topics/auto", {"version": 2, "partitions": {
            "0": [active, 1], "1": [2, standby], "2": [3, 4]}, "adding_replicas": {}, "removing_replicas": {}})
        async with asyncio.timeout(20):
            while not all(c.kafka.zk.exists(f"/brokers/topics/auto/partitions/{p}/state") for p in range(3)):
                await asyncio.sleep(0.05)
        placed = c.get_json("/brokers/topics/auto")["partitions"]
        assert all(len(rs) == 2 and set(rs) <= BROKERS for rs in placed.values()), placed
        assert placed["2"] == [3, 4]
        for p in range(3):
            state = c.get_json(f"/brokers/topics/auto/partitions/{p}/state")
            assert state["leader"] in BROKERS and set(state["isr"]) <= BROKERS, state
        # Metadata from either instance agrees with the znode.
        body = await c.call(standby, 3, 9, {"topics": [{"name": "auto"}], "allow_auto_topic_creation": False,
                                            "include_topic_authorized_operations": False})
        [topic] = body["topics"]
        assert {p["partition_index"]: p["replica_nodes"] for p in topic["partitions"]} == {
            int(p): rs for p, rs in placed.items()}
