"""Automatic topic creation on simulated brokers (sim.autocreate), over TCP on a real ZooKeeper:
off by default; on, a Metadata request that allows it creates the unknown topics it names, as a
ZooKeeper-mode Kafka broker does - the topic and config znodes alone, placed over the broker's
metadata cache (an UpdateMetadata's live brokers, whatever they are), LEADER_NOT_AVAILABLE in the
answer; v4+ without ``allow_auto_topic_creation`` creates nothing, nor do internal names."""

from __future__ import annotations

import json
from contextlib import asynccontextmanager

import pytest

from protocol import ApiKey
from protocol.errors import ErrorCode
from sim.clock import ManualClock
from sim.cluster import ClusterSettings, SimulatedCluster
from sim.metadata import BrokerInfo
from sim.topics import parse_topic_spec
from tests.sim.test_alter_configs import _call
from znodes import store as zstore

pytestmark = pytest.mark.zk


def _ask(topics: list[str], allow: bool) -> dict:
    return {"topics": [{"name": t} for t in topics], "allow_auto_topic_creation": allow,
            "include_cluster_authorized_operations": False, "include_topic_authorized_operations": False}


@asynccontextmanager
async def _cluster(zk_hosts: str, **settings):
    cluster = SimulatedCluster(lambda: zstore.connect(zk_hosts), ClusterSettings(brokers=3, **settings),
                               clock=ManualClock(), serve=True)
    await cluster.start([parse_topic_spec("orders:1:1:1KiB")])
    other = await zstore.connect(zk_hosts)
    try:
        yield cluster, other
    finally:
        await other.close()
        await cluster.close()


async def test_off_by_default(zk_hosts):
    async with _cluster(zk_hosts) as (cluster, other):
        [t] = (await _call(cluster.broker(1).port, ApiKey.METADATA, 9, _ask(["nope"], True)))["topics"]
        assert t["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert await other.exists("/brokers/topics/nope") is None


async def test_on_a_broker_creates_over_its_metadata_cache_as_kafkas_does(zk_hosts):
    async with _cluster(zk_hosts, auto_create_topics=True, num_partitions=8, default_replication_factor=1) as (
            cluster, other):
        port = cluster.broker(1).port
        # As after an UpdateMetadata from a reassignd controller: its instance 101 among the
        # live brokers, although no broker registered under that id.
        cache = cluster.broker(1).core.metadata
        cache.brokers = {**{b: BrokerInfo(b, "127.0.0.1", 0, None) for b in (1, 2, 3)},
                         101: BrokerInfo(101, "127.0.0.1", 0, None)}
        assert (await _call(port, ApiKey.METADATA, 9, _ask(["held"], False)))["topics"][0]["error_code"] == \
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        answer = await _call(port, ApiKey.METADATA, 9, _ask(["auto", "__consumer_offsets"], True))
        assert [(t["name"], t["error_code"]) for t in answer["topics"]] == [
            ("auto", ErrorCode.LEADER_NOT_AVAILABLE), ("__consumer_offsets", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
        topic = json.loads((await other.get("/brokers/topics/auto"))[0])
        placed = {int(p): rs for p, rs in topic["partitions"].items()}
        assert sorted(placed) == list(range(8)) and all(len(rs) == 1 for rs in placed.values())
        # Kafka's round robin over the cache: every node gets two, the instance too.
        assert sorted(rs[0] for rs in placed.values()) == [1, 1, 2, 2, 3, 3, 101, 101]
        assert json.loads((await other.get("/config/topics/auto"))[0]) == {"version": 1, "config": {}}
        assert await other.exists("/brokers/topics/auto/partitions") is None  # the states are the controller's
        assert await other.exists("/brokers/topics/held") is None
        # v0-3 have no flag: creation is allowed, as in Kafka.
        await _call(port, ApiKey.METADATA, 3, {"topics": [{"name": "old"}]})
        assert await other.exists("/brokers/topics/old") is not None
