"""Issue 23 item 3: the simulated brokers apply the topic configs they can. Retention bounds a
log's size (whole segments, the active one kept, followers dropping the same prefix), topic
values fall back to the broker defaults (per broker, then the cluster default), a bad stored
value is not applied, and min.insync.replicas is reported per leader. Pure parts, then a twin
cluster fed through config change notifications."""

import json

from sim.logconfig import LogConfigs, Retention
from sim.replica import CopySettings, Replica, ReplicationModel, Role
from tests.sim.zkcluster import twin_cluster

KB = 1000


def test_retention_deletes_whole_closed_segments_only():
    r = Retention(bytes=1000, ms=None, segment_bytes=100, delete=True)
    assert r.deletable(1000, 0, 0) == 0  # at the bound
    assert r.deletable(1099, 0, 0) == 0  # less than a segment over
    assert r.deletable(1250, 0, 0) == 200
    # The active segment stays even when the bound is 0.
    assert Retention(0, None, 100, True).deletable(250, 0, 0) == 200
    assert Retention(0, None, 100, False).deletable(250, 0, 0) == 0  # compact only: no deletion
    assert Retention(None, None, 100, True).deletable(10**9, 0, 0) == 0  # no limit


def test_retention_by_time_counts_the_bytes_of_the_window():
    r = Retention(bytes=None, ms=10_000, segment_bytes=100, delete=True)
    assert r.deletable(5000, 100, 9.9) == 0  # nothing is older than 10 s yet
    assert r.deletable(5000, 100, 10.0) == 4000  # 1,000 bytes are younger (100 B/s x 10 s)


def test_topic_values_fall_back_to_the_broker_defaults():
    c = LogConfigs()
    # The copy model's fast path: nothing to delete until a retention is set or 7 days passed.
    assert not c.may_delete(604_799.9) and c.may_delete(604_800.0)
    c.update_topic("other", {"segment.bytes": "100"})
    assert not c.may_delete(0)
    c.update_broker("3", {"log.retention.minutes": "1"})
    assert c.may_delete(0)
    c.update_broker("3", None)
    assert c.retention("t", 1) == Retention(None, 604_800_000, 1_073_741_824, True)  # Kafka's defaults
    assert c.min_insync_replicas("t", 1) == 1
    c.update_broker("<default>", {"log.retention.hours": "2", "min.insync.replicas": "2"})
    assert c.retention("t", 1).ms == 7_200_000 and c.min_insync_replicas("t", 1) == 2
    c.update_broker("1", {"log.retention.ms": "1000", "log.retention.bytes": "500"})
    assert (c.retention("t", 1).ms, c.retention("t", 1).bytes) == (1000, 500)
    assert (c.retention("t", 2).ms, c.retention("t", 2).bytes) == (7_200_000, None)  # broker 2: the default
    c.update_topic("t", {"retention.ms": "-1", "cleanup.policy": "compact", "min.insync.replicas": "3"})
    assert c.retention("t", 1) == Retention(500, None, 1_073_741_824, False)
    assert c.min_insync_replicas("t", 1) == 3
    c.update_topic("t", {"min.insync.replicas": "none", "segment.bytes": "5"})  # refused by Kafka: not applied
    assert c.min_insync_replicas("t", 1) == 2 and c.retention("t", 1).segment_bytes == 1_073_741_824
    c.update_topic("t", None)
    c.update_broker("1", None)
    assert c.retention("t", 1).ms == 7_200_000


def test_the_copy_model_bounds_a_leader_and_its_followers():
    model = ReplicationModel(CopySettings(bandwidth=None, produce_bytes=1 * KB, produce_messages=1))
    model.log_configs.update_topic("t", {"retention.bytes": str(10 * KB), "segment.bytes": str(KB)})
    leader = model.add(Replica("t", 0, 1, size=50 * KB, leo=50))
    leader.become_leader(leader_epoch=1, isr=(1, 2), replicas=(1, 2), zk_version=0, now=0.0)
    follower = model.add(Replica("t", 0, 2, size=50 * KB, leo=50))
    follower.become_follower(leader=1, leader_epoch=1, replicas=(1, 2))
    model.advance(0.1)
    assert 10 * KB <= leader.size < 11 * KB and follower.size <= leader.size
    model.advance(30.0)  # 30 KB more produced: still bounded, offsets keep growing
    assert 10 * KB <= leader.size < 11 * KB and round(leader.leo) == 80
    assert follower.size == leader.size and follower.role is Role.FOLLOWER
    # Without retention configs nothing is deleted.
    other = ReplicationModel(CopySettings(bandwidth=None, produce_bytes=1 * KB, produce_messages=1))
    big = other.add(Replica("t", 0, 1, size=50 * KB, leo=50))
    big.become_leader(leader_epoch=1, isr=(1,), replicas=(1,), zk_version=0, now=0.0)
    other.advance(30.0)
    assert round(big.size) == 80 * KB


async def _configure(store, entity: str, config: dict[str, str]) -> None:
    path = f"/config/{entity}"
    data = json.dumps({"version": 1, "config": config}).encode()
    if await store.exists(path) is None:
        await store.create(path, data, makepath=True)
    else:
        await store.set(path, data)
    note = json.dumps({"version": 2, "entity_path": entity}).encode()
    await store.create("/config/changes/config_change_", note, sequential=True, makepath=True)


def _leaders(cluster, topic: str) -> list[dict]:
    return [r for b in cluster.status()["brokers"].values() for r in b["replicas"]
            if r["topic"] == topic and r["role"] == "leader"]


async def test_a_cluster_applies_configs_from_notifications():
    async with twin_cluster("orders:2:2:64KiB") as (_, cluster, other):
        await cluster.advance()
        assert all(r["size"] >= 64 * 1024 for r in _leaders(cluster, "orders"))
        assert not any(r["under_min_isr"] for r in _leaders(cluster, "orders"))
        # The cluster default sets min.insync.replicas above the ISR; the topic bounds its size.
        await _configure(other, "brokers/<default>", {"min.insync.replicas": "3"})
        await _configure(other, "topics/orders", {"retention.bytes": "16384", "segment.bytes": "4096"})
        await cluster.advance()  # the notifications
        cluster.clock.advance(0.2)
        await cluster.advance()  # a step of the copy model
        leaders = _leaders(cluster, "orders")
        assert leaders and all(16384 <= r["size"] < 16384 + 4096 for r in leaders)
        assert all(r["under_min_isr"] for r in leaders)  # ISR of 2 < 3
        followers = [r for b in cluster.status()["brokers"].values() for r in b["replicas"]
                     if r["topic"] == "orders" and r["role"] == "follower"]
        assert followers and all(r["size"] < 16384 + 4096 for r in followers)
