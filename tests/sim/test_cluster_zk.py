"""The cluster shell on a real ZooKeeper (one chroot per test): registration, topic format,
ISR expansion with its notification, stop/restart of one broker."""

import json

import pytest

from sim.clock import ManualClock
from sim.cluster import ClusterSettings, SimulatedCluster
from sim.core import BrokerConfig
from sim.replica import CopySettings
from sim.topics import parse_topic_spec
from tests.sim.bodies import leader_and_isr, partition_state
from znodes import store as zstore

pytestmark = pytest.mark.zk

MB = 1_000_000


@pytest.fixture
async def zk_cluster(zk_hosts):
    clock = ManualClock()
    settings = ClusterSettings(
        brokers=3,
        copy=CopySettings(bandwidth=MB, produce_bytes=0, produce_messages=0),
        broker=BrokerConfig(replica_lag_time_max=3.0, isr_notification_quiet=0.5),
    )
    cluster = SimulatedCluster(lambda: zstore.connect(zk_hosts), settings, clock=clock, serve=False)
    await cluster.start()
    reader = await zstore.connect(zk_hosts)
    yield cluster, clock, reader
    await cluster.close()
    await reader.close()


async def _json(store, path):
    data, _ = await store.get(path)
    return json.loads(data)


async def _tick(cluster, clock, seconds, step=0.25):
    end = clock() + seconds
    while clock() < end:
        clock.advance(step)
        await cluster.advance()


async def test_isr_expansion_on_real_zookeeper(zk_cluster):
    cluster, clock, zk = zk_cluster
    assignments = await cluster.create_topics([parse_topic_spec("t:1:1:2MB")])
    (leader,) = assignments["t"][0]
    new = 1 if leader != 1 else 2
    stat = await zk.exists("/brokers/topics/t/partitions/0/state")
    body = leader_and_isr(
        "t", [partition_state(0, leader, [leader, new], isr=[leader], leader_epoch=1, zk_version=stat.version)]
    )
    for b in (leader, new):
        assert cluster.broker(b).core.handle(4, 4, body)["error_code"] == 0
    await _tick(cluster, clock, 1.5)
    assert (await _json(zk, "/brokers/topics/t/partitions/0/state"))["isr"] == [leader]
    await _tick(cluster, clock, 0.75)
    state = await _json(zk, "/brokers/topics/t/partitions/0/state")
    assert state == {"controller_epoch": 1, "leader": leader, "version": 1, "leader_epoch": 1, "isr": [leader, new]}
    assert (await zk.exists("/brokers/topics/t/partitions/0/state")).version == stat.version + 1
    await _tick(cluster, clock, 1.0)
    (note,) = await zk.children("/isr_change_notification")
    assert note.startswith("isr_change_") and len(note) == len("isr_change_") + 10
    assert await _json(zk, f"/isr_change_notification/{note}") == {
        "version": 1, "partitions": [{"topic": "t", "partition": 0, "state": {
            "leader": leader, "leader_epoch": 1, "controller_epoch": 1, "isr": [leader, new],
            "zk_version": stat.version + 1}}]
    }


async def test_stop_restart_one_broker_on_real_zookeeper(zk_cluster):
    cluster, clock, zk = zk_cluster
    await cluster.create_topics([parse_topic_spec("t:2:3")])
    assert sorted(await zk.children("/brokers/ids")) == ["1", "2", "3"]
    epoch_before = cluster.broker(2).core.broker_epoch
    await cluster.stop_broker(2)
    assert sorted(await zk.children("/brokers/ids")) == ["1", "3"]
    await _tick(cluster, clock, 1.0)  # the others keep working
    await cluster.start_broker(2)
    assert sorted(await zk.children("/brokers/ids")) == ["1", "2", "3"]
    stat = await zk.exists("/brokers/ids/2")
    assert stat.ephemeral_owner != 0 and stat.czxid == cluster.broker(2).core.broker_epoch > epoch_before


async def test_topic_znodes_parse_with_the_project_models(zk_cluster):
    cluster, _, zk = zk_cluster
    assignments = await cluster.create_topics([parse_topic_spec("orders:3:2:10KiB")])
    from znodes import models

    data, _ = await zk.get("/brokers/topics/orders")
    topic = models.parse("/brokers/topics/orders", data)
    assert {int(p): list(r) for p, r in topic.partitions.items()} == assignments["orders"]
    for p, replicas in assignments["orders"].items():
        path = f"/brokers/topics/orders/partitions/{p}/state"
        data, _ = await zk.get(path)
        state = models.parse(path, data)
        assert state.leader == replicas[0] and list(state.isr) == replicas and state.leader_epoch == 0
    data, _ = await zk.get("/brokers/ids/1")
    broker = models.parse("/brokers/ids/1", data)
    assert broker.port == json.loads(data)["port"]
