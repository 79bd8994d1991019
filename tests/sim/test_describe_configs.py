"""DescribeConfigs (32) on simulated brokers: their own BROKER resource, the cluster default and
TOPIC resources, from the configs learned through change notifications. Every version through
the codec; each answer compared with the controller's ``handle_describe`` over the same
ZooKeeper (same fields, sources, synonyms, error codes). Twin, then real ZooKeeper over TCP.
"""

import asyncio
import json
import struct
from types import SimpleNamespace

import pytest

import protocol
from controller.shell.admin.configs import handle_describe
from protocol import ApiKey
from protocol.errors import ErrorCode
from protocol.kafka_configs import TOPIC_CONFIGS
from sim.clock import ManualClock
from sim.cluster import ClusterSettings, SimulatedCluster
from sim.inprocess import InProcessTransport
from sim.topics import parse_topic_spec
from sim.versions import served_versions
from tests.sim.zkcluster import real_zk_cluster, twin_cluster
from znodes import store as zstore

TOPIC, BROKER = 2, 4
RATE = "follower.replication.throttled.rate"
LEADER_RATE = "leader.replication.throttled.rate"
REPLICAS = "follower.replication.throttled.replicas"
SIM_STATIC = {"broker.id", "log.dirs", "replica.lag.time.max.ms"}


def _versions():
    lo, hi = served_versions()[ApiKey.DESCRIBE_CONFIGS]
    return range(lo, hi + 1)


@pytest.fixture
async def twin():
    """(transport, cluster, a separate store playing the controller or an admin tool)."""
    async with twin_cluster("orders:2:2:4KiB") as parts:
        yield parts


async def _set_config(store, entity: str, config: dict[str, str] | None, *, notify: bool = True):
    """Write (None: delete) /config/<entity> and, as Kafka tools do, a change notification."""
    path = f"/config/{entity}"
    if config is None:
        await store.delete(path)
    else:
        data = json.dumps({"version": 1, "config": config}).encode()
        if await store.exists(path) is None:
            await store.create(path, data, makepath=True)
        else:
            await store.set(path, data)
    if notify:
        await _notify(store, entity)


async def _notify(store, entity: str):
    note = json.dumps({"version": 2, "entity_path": entity}).encode()
    await store.create("/config/changes/config_change_", note, sequential=True, makepath=True)


def _resource(rtype: int, name: str, keys=None) -> dict:
    return {"resource_type": rtype, "resource_name": name, "configuration_keys": keys}


def _body(version: int, resources: list[dict], synonyms: bool = False) -> dict:
    body = {"resources": resources}
    if version >= 1:
        body["include_synonyms"] = synonyms
    if version >= 3:
        body["include_documentation"] = False
    return body


async def _describe(tr, broker: int, version: int, resources: list[dict], synonyms: bool = False) -> list[dict]:
    return (await tr.request(broker, ApiKey.DESCRIBE_CONFIGS, version, _body(version, resources, synonyms)))["results"]


async def _controller(store, version: int, resources: list[dict], synonyms: bool = False) -> list[dict]:
    """The controller's answer, through the codec as a client would see it."""
    body = _body(version, resources, synonyms)
    raw = await handle_describe(SimpleNamespace(store=store), version, body)
    frame = protocol.encode_response(ApiKey.DESCRIBE_CONFIGS, version, 1, raw)
    return protocol.decode_response(ApiKey.DESCRIBE_CONFIGS, version, frame)[1]["results"]


def _values(result: dict) -> dict[str, tuple[str, int]]:
    """The entries that are set somewhere (not at their defaults: DEFAULT_CONFIG, or v0's is_default),
    but for a broker's own static settings (the controller lists none of a broker's)."""
    return {c["name"]: (c["value"], c.get("config_source")) for c in result["configs"]
            if c.get("config_source") != 5 and not c.get("is_default") and c["name"] not in SIM_STATIC}


def _shared(results: list[dict]) -> list[dict]:
    """Results without a broker's own static settings: what the controller answers too."""
    return [r | {"configs": [c for c in r["configs"] if c["name"] not in SIM_STATIC]} for r in results]


async def test_api_versions_advertise_describe_configs(twin):
    tr, _, _ = twin
    answer = await tr.request(1, 18, 3, {"client_software_name": "t", "client_software_version": "1"})
    keys = {k["api_key"]: (k["min_version"], k["max_version"]) for k in answer["api_keys"]}
    assert keys[ApiKey.DESCRIBE_CONFIGS] == (0, 4)


@pytest.mark.parametrize("version", _versions())
async def test_every_version_answers_like_the_controller(twin, version):
    tr, cluster, other = twin
    await _set_config(other, "brokers/<default>", {RATE: "500", LEADER_RATE: "700"})
    await _set_config(other, "brokers/2", {RATE: "1000"})
    await _set_config(other, "topics/orders", {REPLICAS: "0:1,1:2"})
    await cluster.advance()
    resources = [
        _resource(BROKER, "2"),
        _resource(BROKER, ""),
        _resource(TOPIC, "orders"),
        _resource(TOPIC, "orders", [REPLICAS, "no.such.key", REPLICAS]),
        _resource(TOPIC, "missing"),
        _resource(TOPIC, "bad/name"),
        _resource(BROKER, "02"),
        _resource(BROKER, "two"),
        _resource(3, "group"),
    ]
    for synonyms in (False, True):
        ours = await _describe(tr, 2, version, resources, synonyms)
        theirs = await _controller(other, version, resources, synonyms)
        # The same but for the broker's own settings (the controller has none of a broker's).
        own = [c for c in ours[0]["configs"] if c["name"] in SIM_STATIC]
        assert {c["name"]: c["value"] for c in own} == {
            "broker.id": "2", "log.dirs": "/var/sim/kafka-logs-2", "replica.lag.time.max.ms": "10000"}
        assert all(c["read_only"] for c in own)
        assert _shared(ours) == _shared(theirs)
    by_name = {(r["resource_type"], r["resource_name"]): r for r in ours}
    assert _values(by_name[(BROKER, "2")])[RATE][0] == "1000"
    assert _values(by_name[(BROKER, "2")])[LEADER_RATE][0] == "700"  # inherited from <default>
    if version >= 1:
        assert _values(by_name[(BROKER, "2")]) == {RATE: ("1000", 2), LEADER_RATE: ("700", 3)}
        (rate,) = [c for c in by_name[(BROKER, "2")]["configs"] if c["name"] == RATE]
        assert [(s["value"], s["source"]) for s in rate["synonyms"]] == [("1000", 2), ("500", 3), (str(2**63 - 1), 5)]
    # Its own list, and the other throttled-replica list at its default.
    assert _values(ours[2])[REPLICAS][0] == "0:1,1:2"
    assert sorted(c["name"] for c in ours[2]["configs"]) == sorted(TOPIC_CONFIGS)
    assert [c["name"] for c in ours[3]["configs"]] == [REPLICAS]
    assert by_name[(TOPIC, "missing")]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert by_name[(TOPIC, "bad/name")]["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
    for bad in ((BROKER, "02"), (BROKER, "two"), (3, "group")):
        assert by_name[bad]["error_code"] == ErrorCode.INVALID_REQUEST and by_name[bad]["configs"] == []


async def test_another_brokers_resource_is_refused_as_kafka_does(twin):
    tr, cluster, other = twin
    await _set_config(other, "brokers/3", {RATE: "1000"})
    await cluster.advance()
    (result,) = await _describe(tr, 1, 4, [_resource(BROKER, "3")])
    assert result["error_code"] == ErrorCode.INVALID_REQUEST
    assert "broker 1" in result["error_message"] and "'3'" in result["error_message"]
    (own,) = await _describe(tr, 3, 4, [_resource(BROKER, "3")])
    assert own["error_code"] == 0 and _values(own) == {RATE: ("1000", 2)}


async def test_changes_follow_notifications_and_deleted_configs_go(twin):
    tr, cluster, other = twin
    (before,) = await _describe(tr, 1, 4, [_resource(BROKER, "1")])
    assert before["error_code"] == 0 and _values(before) == {}
    await _set_config(other, "brokers/1", {RATE: "10"})
    await cluster.advance()
    assert _values((await _describe(tr, 1, 4, [_resource(BROKER, "1")]))[0]) == {RATE: ("10", 2)}
    await _set_config(other, "brokers/1", {RATE: "20", LEADER_RATE: "30"})
    await cluster.advance()
    assert _values((await _describe(tr, 1, 4, [_resource(BROKER, "1")]))[0]) == {RATE: ("20", 2),
                                                                                 LEADER_RATE: ("30", 2)}
    await _set_config(other, "brokers/1", None)
    await cluster.advance()
    assert _values((await _describe(tr, 1, 4, [_resource(BROKER, "1")]))[0]) == {}


async def test_a_config_written_without_notification_is_not_seen_until_one_comes(twin):
    """Kafka brokers learn dynamic configs only from change notifications; so do these."""
    tr, cluster, other = twin
    await _set_config(other, "topics/orders", {REPLICAS: "*"}, notify=False)
    await cluster.advance()
    assert _values((await _describe(tr, 1, 4, [_resource(TOPIC, "orders")]))[0]) == {}
    await _notify(other, "topics/orders")
    await cluster.advance()
    assert _values((await _describe(tr, 1, 4, [_resource(TOPIC, "orders")]))[0]) == {REPLICAS: ("*", 1)}


async def test_an_unreadable_config_fails_its_resource_only(twin):
    tr, cluster, other = twin
    await other.set("/config/topics/orders", b"{broken")
    await _notify(other, "topics/orders")
    await other.create("/config/brokers/<default>", b"[]")  # unreadable default: ignored
    await _notify(other, "brokers/<default>")
    await _set_config(other, "brokers/1", {RATE: "5"})
    await cluster.advance()
    resources = [_resource(TOPIC, "orders"), _resource(BROKER, "1")]
    ours = await _describe(tr, 1, 4, resources)
    assert _shared(ours) == _shared(await _controller(other, 4, resources))
    assert ours[0]["error_code"] == ErrorCode.UNKNOWN_SERVER_ERROR and "/config/topics/orders" in ours[0]["error_message"]
    assert ours[1]["error_code"] == 0 and _values(ours[1]) == {RATE: ("5", 2)}
    # Repaired: the next notification brings it back.
    await _set_config(other, "topics/orders", {REPLICAS: "0:1"})
    await cluster.advance()
    assert _values((await _describe(tr, 1, 4, [_resource(TOPIC, "orders")]))[0]) == {REPLICAS: ("0:1", 1)}


async def test_topics_created_and_deleted_later_are_followed(twin):
    tr, cluster, other = twin
    (missing,) = await _describe(tr, 1, 4, [_resource(TOPIC, "later")])
    assert missing["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    await cluster.create_topics([parse_topic_spec("later:1:1:1KiB")])
    await cluster.advance()
    assert (await _describe(tr, 1, 4, [_resource(TOPIC, "later")]))[0]["error_code"] == 0


@pytest.mark.zk
async def test_no_resources_and_configs_loaded_at_start(zk_hosts):
    """Configs that exist before the simulation starts are read at start (real ZooKeeper)."""
    setup = await zstore.connect(zk_hosts)
    try:
        await _set_config(setup, "brokers/1", {RATE: "42"}, notify=False)
        cluster = SimulatedCluster(lambda: zstore.connect(zk_hosts), ClusterSettings(brokers=1), clock=ManualClock(), serve=False)
        await cluster.start()
        try:
            tr = InProcessTransport(cluster)
            assert (await tr.request(1, ApiKey.DESCRIBE_CONFIGS, 4, _body(4, [])))["results"] == []
            assert _values((await _describe(tr, 1, 4, [_resource(BROKER, "1")]))[0]) == {RATE: ("42", 2)}
        finally:
            await cluster.close()
    finally:
        await setup.close()


@pytest.mark.zk
async def test_over_tcp_on_real_zookeeper(zk_hosts):
    async with real_zk_cluster(zk_hosts, "orders:1:2:1KiB", brokers=2, serve=True) as (cluster, other):
        await _set_config(other, "topics/orders", {REPLICAS: "0:1,0:2"})
        resources = [_resource(TOPIC, "orders"), _resource(BROKER, "2")]
        request = protocol.encode_request(ApiKey.DESCRIBE_CONFIGS, 4, 9, "test", _body(4, resources, True))
        for _ in range(200):  # the notification arrives through kazoo's thread
            await cluster.advance()
            reader, writer = await asyncio.open_connection("127.0.0.1", cluster.broker(2).port)
            writer.write(request)
            await writer.drain()
            (size,) = struct.unpack(">i", await reader.readexactly(4))
            frame = struct.pack(">i", size) + await reader.readexactly(size)
            writer.close()
            _, body = protocol.decode_response(ApiKey.DESCRIBE_CONFIGS, 4, frame)
            # The defaults are always listed: wait for the dynamic config itself.
            if REPLICAS in _values(body["results"][0]):
                break
            await asyncio.sleep(0.02)
        assert _shared(body["results"]) == _shared(await _controller(other, 4, resources, True))
        assert _values(body["results"][0]) == {REPLICAS: ("0:1,0:2", 1)}
        assert body["results"][1]["error_code"] == 0
