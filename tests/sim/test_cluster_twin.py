"""The cluster shell on the deterministic ZooKeeper twin, driven by a manual clock."""

import json

import pytest

from sim.clock import ManualClock
from sim.cluster import BrokerRegistrationError, ClusterSettings, SimulatedCluster
from sim.core import BrokerConfig
from sim.replica import CopySettings, Role
from sim.topics import TopicExistsError, parse_topic_spec
from tests.sim.bodies import leader_and_isr, partition_state
from znodes.twin import TwinServer

MB = 1_000_000


def _settings(**kw):
    base = dict(
        brokers=3,
        copy=CopySettings(bandwidth=MB, produce_bytes=0, produce_messages=0),
        broker=BrokerConfig(replica_lag_time_max=3.0, isr_notification_quiet=0.5, isr_notification_max_delay=5.0),
    )
    base.update(kw)
    return ClusterSettings(**base)


@pytest.fixture
async def twin_cluster():
    server = TwinServer()
    clock = ManualClock()
    cluster = SimulatedCluster(server.connect, _settings(), clock=clock, serve=False)
    await cluster.start()
    yield server, cluster, clock
    await cluster.close()


def _json(server, path):
    return json.loads(server.read(path)[0])


async def _tick(cluster, clock, seconds, step=0.25):
    end = clock() + seconds
    while clock() < end:
        clock.advance(step)
        await cluster.advance()


async def test_brokers_register_in_kafka_v4_format(twin_cluster):
    server, cluster, _ = twin_cluster
    assert server.children("/brokers/ids") == ["1", "2", "3"]
    reg = _json(server, "/brokers/ids/2")
    assert reg["version"] == 4 and reg["host"] == "127.0.0.1" and reg["jmx_port"] == -1
    assert reg["endpoints"] == [f"PLAINTEXT://127.0.0.1:{reg['port']}"]
    assert reg["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}
    assert "rack" not in reg and reg["timestamp"].isdigit()
    assert server.exists("/brokers/ids/2").ephemeral_owner != 0
    assert cluster.broker(2).core.broker_epoch == server.exists("/brokers/ids/2").czxid
    assert _json(server, "/cluster/id")["version"] == "1"


async def test_topic_creation_is_atomic_and_refuses_existing(twin_cluster):
    server, cluster, _ = twin_cluster
    assignments = await cluster.create_topics([parse_topic_spec("orders:4:2:1MiB")])
    topic = _json(server, "/brokers/topics/orders")
    assert topic == {
        "version": 2,
        "partitions": {str(p): r for p, r in assignments["orders"].items()},
        "adding_replicas": {},
        "removing_replicas": {},
    }
    state = _json(server, "/brokers/topics/orders/partitions/0/state")
    replicas = assignments["orders"][0]
    assert state == {"controller_epoch": 0, "leader": replicas[0], "version": 1, "leader_epoch": 0, "isr": replicas}
    assert _json(server, "/config/topics/orders") == {"version": 1, "config": {}}
    leader = cluster.model.get("orders", 0, replicas[0])
    assert leader.role is Role.LEADER and leader.size_bytes == 1024 * 1024 and leader.log_end_offset == 1024

    before = server.snapshot()
    with pytest.raises(TopicExistsError):
        await cluster.create_topics([parse_topic_spec("fresh:1:1"), parse_topic_spec("orders:1:1")])
    assert server.snapshot() == before


async def test_isr_expansion_writes_state_and_one_notification(twin_cluster):
    server, cluster, clock = twin_cluster
    await cluster.create_topics([parse_topic_spec("t:1:1:2MB")])
    (leader_id,) = json.loads(server.read("/brokers/topics/t")[0])["partitions"]["0"]
    new = next(b for b in (1, 2, 3) if b != leader_id)
    # The controller adds a replica: LeaderAndIsr with a bumped epoch to both.
    stat = server.exists("/brokers/topics/t/partitions/0/state")
    body = leader_and_isr("t", [partition_state(0, leader_id, [leader_id, new], isr=[leader_id], leader_epoch=1,
                                                zk_version=stat.version, adding=[new])])
    for b in (leader_id, new):
        assert cluster.broker(b).core.handle(4, 4, body)["error_code"] == 0
    await _tick(cluster, clock, 1.75)
    assert _json(server, "/brokers/topics/t/partitions/0/state")["isr"] == [leader_id]
    await _tick(cluster, clock, 0.5)  # 2 MB at 1 MB/s: caught up at t=2
    state = _json(server, "/brokers/topics/t/partitions/0/state")
    assert state == {"controller_epoch": 1, "leader": leader_id, "version": 1, "leader_epoch": 1,
                     "isr": [leader_id, new]}
    assert server.children("/isr_change_notification") == []  # batched
    await _tick(cluster, clock, 1.0)
    (note,) = server.children("/isr_change_notification")
    assert note.startswith("isr_change_")
    written = server.exists("/brokers/topics/t/partitions/0/state").version
    assert _json(server, f"/isr_change_notification/{note}") == {
        "version": 1, "partitions": [{"topic": "t", "partition": 0, "state": {
            "leader": leader_id, "leader_epoch": 1, "controller_epoch": 1, "isr": [leader_id, new],
            "zk_version": written}}]
    }


async def test_isr_shrinks_when_a_follower_broker_stops(twin_cluster):
    server, cluster, clock = twin_cluster
    await cluster.create_topics([parse_topic_spec("t:1:3")])
    replicas = _json(server, "/brokers/topics/t")["partitions"]["0"]
    await cluster.stop_broker(replicas[2])
    await _tick(cluster, clock, 2.5)
    assert _json(server, "/brokers/topics/t/partitions/0/state")["isr"] == replicas
    await _tick(cluster, clock, 1.0)
    assert _json(server, "/brokers/topics/t/partitions/0/state")["isr"] == replicas[:2]


async def test_bad_version_retry_keeps_the_epochs(twin_cluster):
    server, cluster, clock = twin_cluster
    await cluster.create_topics([parse_topic_spec("t:1:2")])
    replicas = _json(server, "/brokers/topics/t")["partitions"]["0"]
    await cluster.stop_broker(replicas[1])
    # Someone rewrites the znode (same leader and epoch, new controller epoch): the leader's
    # conditional set fails, it re-reads and retries on the new version.
    other = server.connect()
    await other.set("/brokers/topics/t/partitions/0/state",
                    json.dumps({"controller_epoch": 7, "leader": replicas[0], "version": 1,
                                "leader_epoch": 0, "isr": replicas}).encode())
    await _tick(cluster, clock, 3.5)
    state = _json(server, "/brokers/topics/t/partitions/0/state")
    assert state["isr"] == [replicas[0]] and state["controller_epoch"] == 7
    assert server.exists("/brokers/topics/t/partitions/0/state").version == 2


async def test_conflict_with_a_new_leader_epoch_gives_up(twin_cluster):
    server, cluster, clock = twin_cluster
    await cluster.create_topics([parse_topic_spec("t:1:2")])
    replicas = _json(server, "/brokers/topics/t")["partitions"]["0"]
    await cluster.stop_broker(replicas[1])
    other = server.connect()
    elected = {"controller_epoch": 2, "leader": replicas[0], "version": 1, "leader_epoch": 5, "isr": replicas}
    await other.set("/brokers/topics/t/partitions/0/state", json.dumps(elected).encode())
    await _tick(cluster, clock, 3.5)
    assert _json(server, "/brokers/topics/t/partitions/0/state") == elected


async def test_stop_and_restart_remove_and_recreate_the_ephemeral(twin_cluster):
    server, cluster, clock = twin_cluster
    await cluster.create_topics([parse_topic_spec("t:3:3:1MB")])
    czxid = server.exists("/brokers/ids/2").czxid
    await cluster.stop_broker(2)
    assert server.children("/brokers/ids") == ["1", "3"]
    assert cluster.broker(2).core.replicas()  # its logs stay
    await cluster.start_broker(2)
    assert server.children("/brokers/ids") == ["1", "2", "3"]
    assert server.exists("/brokers/ids/2").czxid > czxid
    assert cluster.broker(2).core.broker_epoch == server.exists("/brokers/ids/2").czxid
    replica = cluster.model.get("t", 0, 2)
    assert replica.role is Role.NONE and replica.size_bytes == MB
    with pytest.raises(ValueError):
        await cluster.start_broker(2)
    with pytest.raises(ValueError):
        await cluster.stop_broker(9)


async def test_duplicate_broker_id_is_refused_and_leaves_nothing():
    server = TwinServer()
    first = SimulatedCluster(server.connect, _settings(brokers=2), clock=ManualClock(), serve=False)
    await first.start()
    second = SimulatedCluster(server.connect, _settings(brokers=3, first_id=2), clock=ManualClock(), serve=False)
    with pytest.raises(BrokerRegistrationError):
        await second.start()
    assert server.children("/brokers/ids") == ["1", "2"]
    assert len(server.session_ids()) == 3  # first's admin + 2 brokers; second closed all its own
    await first.close()
    assert server.children("/brokers/ids") == []
    assert server.session_ids() == []


async def test_config_changes_reach_the_throttles(twin_cluster):
    server, cluster, clock = twin_cluster
    admin = server.connect()
    await admin.create("/config/topics/t", b'{"version":1,"config":{"follower.replication.throttled.replicas":"0:2"}}')
    await admin.create("/config/brokers/2", b'{"version":1,"config":{"follower.replication.throttled.rate":"1000"}}')
    await admin.create("/config/changes/config_change_", b'{"version":2,"entity_path":"topics/t"}', sequential=True)
    await admin.create("/config/changes/config_change_", b'{"version":2,"entity_path":"brokers/2"}', sequential=True)
    await _tick(cluster, clock, 0.25)
    assert cluster.throttles.follower_throttled("t", 0, 2)
    assert cluster.throttles.follower_rate(2) == 1000.0
    # A malformed config changes nothing; a deleted one clears.
    await admin.set("/config/brokers/2", b'{"version":1,"config":{"follower.replication.throttled.rate":"fast"}}')
    await admin.create("/config/changes/config_change_", b'{"version":2,"entity_path":"brokers/2"}', sequential=True)
    await admin.create("/config/changes/config_change_", b'not json', sequential=True)
    await admin.delete("/config/topics/t")
    await admin.create("/config/changes/config_change_", b'{"version":1,"entity_type":"topics","entity_name":"t"}',
                       sequential=True)
    await _tick(cluster, clock, 0.25)
    assert cluster.throttles.follower_rate(2) == 1000.0
    assert not cluster.throttles.follower_throttled("t", 0, 2)


async def test_racks_are_registered_and_used():
    server = TwinServer()
    cluster = SimulatedCluster(server.connect, _settings(brokers=4, racks=2), clock=ManualClock(), serve=False)
    await cluster.start()
    try:
        assert _json(server, "/brokers/ids/1")["rack"] == "rack-0"
        assert _json(server, "/brokers/ids/2")["rack"] == "rack-1"
        assignments = await cluster.create_topics([parse_topic_spec("r:8:2")])
        for replicas in assignments["r"].values():
            assert {cluster.settings.rack_of(b) for b in replicas} == {"rack-0", "rack-1"}
    finally:
        await cluster.close()


async def test_expired_broker_session_registers_again(twin_cluster):
    server, cluster, clock = twin_cluster
    old = cluster.broker(3).store.session_id
    server.expire_session(old)
    assert server.children("/brokers/ids") == ["1", "2"]
    await _tick(cluster, clock, 0.25)
    assert server.children("/brokers/ids") == ["1", "2", "3"]
    assert server.exists("/brokers/ids/3").ephemeral_owner == cluster.broker(3).store.session_id != old


async def test_expired_admin_session_renews_and_rereads_configs(twin_cluster):
    server, cluster, clock = twin_cluster
    server.expire_session(cluster.admin.session_id)
    other = server.connect()
    await other.create("/config/brokers/<default>", b'{"version":1,"config":{"leader.replication.throttled.rate":"5"}}')
    await _tick(cluster, clock, 0.25)
    assert cluster.throttles.leader_rate(1) == 5.0
    await other.create("/config/topics/x", b'{"version":1,"config":{"leader.replication.throttled.replicas":"*"}}')
    await other.create("/config/changes/config_change_", b'{"version":2,"entity_path":"topics/x"}', sequential=True)
    await _tick(cluster, clock, 0.25)
    assert cluster.throttles.leader_throttled("x", 3, 1)


async def _move_seconds(throttle: bool) -> float:
    """Simulated seconds until a new replica of a 10 MB partition joins the ISR."""
    server = TwinServer()
    clock = ManualClock()
    settings = _settings(brokers=2, copy=CopySettings(bandwidth=50 * MB, produce_bytes=0, produce_messages=0))
    cluster = SimulatedCluster(server.connect, settings, clock=clock, serve=False)
    await cluster.start([parse_topic_spec("big:1:1:10MB")])
    try:
        (leader,) = _json(server, "/brokers/topics/big")["partitions"]["0"]
        new = 3 - leader
        if throttle:  # what a KIP-179 controller writes for this move
            admin = server.connect()
            await admin.set("/config/topics/big", json.dumps({"version": 1, "config": {
                "leader.replication.throttled.replicas": f"0:{leader}",
                "follower.replication.throttled.replicas": f"0:{new}"}}).encode())
            for b in (1, 2):
                await admin.create(f"/config/brokers/{b}", json.dumps({"version": 1, "config": {
                    "leader.replication.throttled.rate": str(MB),
                    "follower.replication.throttled.rate": str(MB)}}).encode())
            for entity in ("topics/big", "brokers/1", "brokers/2"):
                await admin.create("/config/changes/config_change_",
                                   json.dumps({"version": 2, "entity_path": entity}).encode(), sequential=True)
        body = leader_and_isr("big", [partition_state(0, leader, [leader, new], isr=[leader], leader_epoch=1,
                                                      zk_version=0, adding=[new])])
        for b in (leader, new):
            cluster.broker(b).core.handle(4, 4, body)
        start = clock()
        while _json(server, "/brokers/topics/big/partitions/0/state")["isr"] != [leader, new]:
            assert clock() - start < 60
            clock.advance(0.25)
            await cluster.advance()
        return clock() - start
    finally:
        await cluster.close()


async def test_a_throttle_visibly_lengthens_a_move():
    fast = await _move_seconds(throttle=False)
    slow = await _move_seconds(throttle=True)
    assert fast <= 0.5
    assert 10.0 <= slow <= 10.5
