"""Topic ids (KIP-516) of topics CreateTopics creates, over sockets on a real ZooKeeper: v7
answers the id written in the new topic znode (version 3), Metadata v10+ shows it and v12+
finds the topic by it, as Kafka 2.8+ brokers do."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from protocol.errors import ErrorCode
from tests.admin.cluster import AdminCluster
from znodes.values import topic_uuid

pytestmark = pytest.mark.zk

TOPICS = {"orders": {0: [1, 2], 1: [2, 3]}}
ZERO = uuid.UUID(int=0)


def new(name: str, partitions: int, rf: int) -> dict:
    return {"name": name, "num_partitions": partitions, "replication_factor": rf, "assignments": [], "configs": []}


async def test_create_topics_v7_answers_the_znodes_id_and_metadata_v12_finds_the_topic_by_it(zk_hosts):
    async with AdminCluster(zk_hosts, controllers=(101,), topics=TOPICS) as c:
        await c.wait_active()
        answer = await c.call(101, 19, 7, {"topics": [new("fresh", 3, 2), new("orders", 1, 1)], "timeout_ms": 10_000,
                                           "validate_only": False})
        fresh, orders = answer["topics"]
        assert (fresh["error_code"], orders["error_code"]) == (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS)
        assert fresh["topic_id"] != ZERO and orders["topic_id"] == ZERO
        doc = c.get_json("/brokers/topics/fresh")
        assert doc["version"] == 3 and topic_uuid(doc["topic_id"]) == fresh["topic_id"]

        by_id = await c.call(101, 3, 12, {"topics": [{"name": None, "topic_id": fresh["topic_id"]}],
                                          "allow_auto_topic_creation": False})
        [found] = by_id["topics"]
        assert (found["error_code"], found["name"], found["topic_id"]) == (ErrorCode.NONE, "fresh", fresh["topic_id"])
        assert sorted(p["partition_index"] for p in found["partitions"]) == [0, 1, 2]
        by_name = await c.call(101, 3, 10, {"topics": [{"name": "fresh", "topic_id": ZERO}],
                                            "allow_auto_topic_creation": False})
        assert by_name["topics"][0]["topic_id"] == fresh["topic_id"]


async def test_delete_topics_v6_by_id_marks_the_topic_and_answers_its_name(zk_hosts):
    """Kafka 2.8+ ZooKeeper mode resolves a DeleteTopics v6 id through its controller's topic ids:
    the topic is marked for deletion by its name and the answer names it; an id no topic has is
    UNKNOWN_TOPIC_ID with a null name, nothing marked."""
    async with AdminCluster(zk_hosts, controllers=(101,), topics=TOPICS) as c:
        await c.wait_active()
        created = await c.call(101, 19, 7, {"topics": [new("gone", 2, 2)], "timeout_ms": 10_000, "validate_only": False})
        gone_id = created["topics"][0]["topic_id"]
        unknown = uuid.UUID(int=12345)
        answer = await c.call(101, 20, 6, {"topics": [{"name": None, "topic_id": gone_id},
                                                      {"name": None, "topic_id": unknown}], "timeout_ms": 0})
        first, second = answer["responses"]
        # timeout_ms 0: marked, answered REQUEST_TIMED_OUT at once, as Kafka's ZooKeeper-mode brokers
        assert (first["name"], first["topic_id"], first["error_code"]) == ("gone", gone_id, ErrorCode.REQUEST_TIMED_OUT)
        assert (second["name"], second["topic_id"], second["error_code"]) == (None, unknown, ErrorCode.UNKNOWN_TOPIC_ID)
        assert c.kafka.zk.exists("/admin/delete_topics/gone") or not c.kafka.zk.exists("/brokers/topics/gone")
        assert c.kafka.zk.exists("/brokers/topics/orders")


async def test_a_topic_written_without_an_id_gets_one_at_the_election_and_is_found_by_it(zk_hosts):
    """Kafka 2.8+'s controller gives every topic znode without a topic_id one at its election
    (processTopicIds): a topic an older tool wrote (version 2) can then be named by id."""
    async with AdminCluster(zk_hosts, controllers=(101,), topics=TOPICS) as c:
        await c.wait_active()
        async with asyncio.timeout(10):
            while "topic_id" not in c.get_json("/brokers/topics/orders"):
                await asyncio.sleep(0.02)
        doc = c.get_json("/brokers/topics/orders")
        assert doc["version"] == 3 and doc["partitions"] == {"0": [1, 2], "1": [2, 3]}
        by_id = await c.call(101, 3, 12, {"topics": [{"name": None, "topic_id": topic_uuid(doc["topic_id"])}],
                                          "allow_auto_topic_creation": False})
        assert [(t["error_code"], t["name"]) for t in by_id["topics"]] == [(ErrorCode.NONE, "orders")]
