"""Simulated brokers' Metadata names the reassignd controller instances, as the controller's
own listener does: nodes = controller instances (admin listeners) + brokers, controller_id =
the active instance. Brokers themselves come from UpdateMetadata, or from /brokers/ids before
the first one. On the deterministic twin (each answer also compared with the controller's
``handle_metadata`` over the same ZooKeeper) and on a real ZooKeeper.
"""

import asyncio
import json
from types import SimpleNamespace

import pytest

from controller.shell.admin.metadata import handle_metadata
from protocol.errors import ErrorCode
from sim.clock import ManualClock
from sim.inprocess import InProcessTransport
from sim.versions import served_versions
from tests.sim.bodies import update_metadata
from tests.sim.zkcluster import real_zk_cluster, twin_cluster

CONTROLLERS = "/reassignd/controllers"


def _listener(host: str, port: int) -> bytes:
    return json.dumps({"version": 1, "host": host, "port": port}).encode()


def _controller(cid: int) -> bytes:
    return json.dumps({"version": 1, "brokerid": cid, "timestamp": "1"}).encode()


@pytest.fixture
async def twin():
    """(transport, cluster, a separate store playing the controller instances)."""
    async with twin_cluster("t:2:2:4KiB") as parts:
        yield parts


async def _register_controllers(store, listeners: dict[int, tuple[str, int]], active: int | None):
    for cid, (host, port) in listeners.items():
        await store.create(f"{CONTROLLERS}/{cid}", _listener(host, port), ephemeral=True, makepath=True)
    if active is not None:
        await store.create("/controller", _controller(active), ephemeral=True)


def _nodes(meta: dict) -> dict[int, tuple[str, int]]:
    return {b["node_id"]: (b["host"], b["port"]) for b in meta["brokers"]}


async def _controller_answer(store, version: int) -> dict:
    return await handle_metadata(SimpleNamespace(store=store), version, {"topics": []})


async def test_before_any_update_metadata_brokers_list_the_registered_brokers(twin):
    tr, cluster, _ = twin
    meta = await tr.request(1, 3, 9, {"topics": None})
    registered = {b: ("127.0.0.1", cluster.broker(b).port) for b in (1, 2, 3)}
    assert _nodes(meta) == registered
    assert meta["controller_id"] == -1
    assert meta["topics"] == []  # topics come from UpdateMetadata only (Kafka's semantics)


async def test_controller_instances_listed_and_active_named_like_the_controller_listener(twin):
    tr, cluster, other = twin
    await _register_controllers(other, {101: ("10.0.0.1", 9901), 102: ("10.0.0.2", 9902)}, active=102)
    await cluster.advance()
    for broker in (1, 2, 3):
        for version in (1, 4, 9, 12):
            meta = await tr.request(broker, 3, version, {"topics": []})
            ours = await _controller_answer(other, version)
            assert meta["controller_id"] == ours["controller_id"] == 102
            assert _nodes(meta) == _nodes(ours)
            assert {101, 102} <= set(_nodes(meta))
            assert _nodes(meta)[101] == ("10.0.0.1", 9901)


async def test_every_metadata_version_carries_the_controllers_through_the_codec(twin):
    tr, cluster, other = twin
    await _register_controllers(other, {101: ("127.0.0.1", 9901)}, active=101)
    await cluster.advance()
    lo, hi = served_versions()[3]
    for version in range(lo, hi + 1):
        meta = await tr.request(2, 3, version, {"topics": []})
        assert 101 in _nodes(meta), version
        if version >= 1:  # v0 has no controller_id
            assert meta["controller_id"] == 101, version


async def test_after_update_metadata_brokers_come_from_it_controllers_still_merged(twin):
    tr, cluster, other = twin
    await _register_controllers(other, {101: ("10.0.0.1", 9901)}, active=101)
    await cluster.advance()
    # The controller says only brokers 1 and 2 are alive (broker 3 still registered).
    body = update_metadata({1: (9001, None), 2: (9002, "r1")}, {"t": {0: [1, 2], 1: [3, 1]}}, controller_id=101)
    assert (await tr.request(1, 6, 6, body))["error_code"] == 0
    meta = await tr.request(1, 3, 9, {"topics": None})
    assert _nodes(meta) == {1: ("127.0.0.1", 9001), 2: ("127.0.0.1", 9002), 101: ("10.0.0.1", 9901)}
    assert meta["controller_id"] == 101
    partitions = {p["partition_index"]: p for p in meta["topics"][0]["partitions"]}
    # A leader is checked against live brokers only: broker 3 leads partition 1 but is not live.
    assert partitions[0]["error_code"] == 0 and partitions[0]["leader_id"] == 1
    assert partitions[1]["error_code"] == ErrorCode.LEADER_NOT_AVAILABLE
    # Broker 2 got no UpdateMetadata: it still lists the registrations, and the controller.
    meta2 = await tr.request(2, 3, 9, {"topics": None})
    assert set(_nodes(meta2)) == {1, 2, 3, 101}


async def test_failover_and_deregistration_are_followed(twin):
    tr, cluster, other = twin
    await _register_controllers(other, {101: ("10.0.0.1", 9901), 102: ("10.0.0.2", 9902)}, active=101)
    await cluster.advance()
    assert (await tr.request(1, 3, 9, {"topics": []}))["controller_id"] == 101

    # 101 dies: its registration and /controller go; no UpdateMetadata yet: -1, as the listener.
    await other.delete(f"{CONTROLLERS}/101")
    await other.delete("/controller")
    await cluster.advance()
    meta = await tr.request(1, 3, 9, {"topics": []})
    assert meta["controller_id"] == -1 == (await _controller_answer(other, 9))["controller_id"]
    assert 101 not in _nodes(meta) and 102 in _nodes(meta)

    # 102 takes over; the watch was re-armed on the absent znode.
    await other.create("/controller", _controller(102), ephemeral=True)
    await cluster.advance()
    assert (await tr.request(3, 3, 9, {"topics": []}))["controller_id"] == 102

    # A controller instance re-registers on a new port: the new listener is shown.
    await other.delete(f"{CONTROLLERS}/102")
    await other.create(f"{CONTROLLERS}/102", _listener("10.0.0.2", 9999), ephemeral=True)
    await cluster.advance()
    assert _nodes(await tr.request(1, 3, 9, {"topics": []}))[102] == ("10.0.0.2", 9999)


async def test_no_active_instance_falls_back_to_what_update_metadata_said(twin):
    tr, cluster, _ = twin
    body = update_metadata({1: (9001, None)}, {}, controller_id=7)
    assert (await tr.request(1, 6, 6, body))["error_code"] == 0
    assert (await tr.request(1, 3, 9, {"topics": []}))["controller_id"] == 7


async def test_malformed_znodes_are_skipped_like_the_controller_skips_them(twin):
    tr, cluster, other = twin
    await _register_controllers(other, {101: ("10.0.0.1", 9901)}, active=None)
    await other.create(f"{CONTROLLERS}/103", b"{not json", ephemeral=True)
    await other.create(f"{CONTROLLERS}/104", _listener("h", 0), ephemeral=True)  # port out of range
    await other.create(f"{CONTROLLERS}/x7", _listener("h", 1), ephemeral=True)  # not an id
    await other.create("/controller", b'{"version":1}', ephemeral=True)  # no brokerid
    await cluster.advance()
    meta = await tr.request(1, 3, 9, {"topics": []})
    ours = await _controller_answer(other, 9)
    assert _nodes(meta) == _nodes(ours)
    assert set(_nodes(meta)) == {1, 2, 3, 101}
    assert meta["controller_id"] == ours["controller_id"] == -1


async def test_a_controller_sharing_a_broker_id_replaces_it_as_on_the_controller(twin):
    tr, cluster, other = twin
    await _register_controllers(other, {2: ("10.9.9.9", 9902)}, active=2)
    await cluster.advance()
    meta = await tr.request(1, 3, 9, {"topics": []})
    assert _nodes(meta)[2] == ("10.9.9.9", 9902) == _nodes(await _controller_answer(other, 9))[2]


async def test_brokers_registered_later_are_listed(twin):
    tr, cluster, other = twin
    await other.create("/brokers/ids/9", json.dumps({
        "version": 4, "host": "10.1.1.9", "port": 9099, "jmx_port": -1, "timestamp": "1",
        "endpoints": ["PLAINTEXT://10.1.1.9:9099"], "rack": "r9"}).encode(), ephemeral=True)
    await cluster.advance()
    meta = await tr.request(1, 3, 9, {"topics": []})
    assert _nodes(meta)[9] == ("10.1.1.9", 9099)
    assert next(b for b in meta["brokers"] if b["node_id"] == 9)["rack"] == "r9"
    await cluster.stop_broker(3)
    await cluster.advance()
    assert 3 not in _nodes(await tr.request(1, 3, 9, {"topics": []}))


@pytest.mark.zk
async def test_on_real_zookeeper_watches_follow_controllers(zk_hosts):
    clock = ManualClock()
    async with real_zk_cluster(zk_hosts, brokers=2, clock=clock) as (cluster, other):
        tr = InProcessTransport(cluster)

        async def settled(predicate):
            # Watch events arrive from kazoo's thread: advance until they were handled.
            for _ in range(200):
                await cluster.advance()
                meta = await tr.request(1, 3, 9, {"topics": []})
                if predicate(meta):
                    return meta
                clock.advance(0.05)
                await asyncio.sleep(0.01)
            raise AssertionError(f"never settled: {meta}")

        assert (await tr.request(1, 3, 9, {"topics": []}))["controller_id"] == -1
        await _register_controllers(other, {101: ("127.0.0.1", 9901)}, active=101)
        meta = await settled(lambda m: m["controller_id"] == 101 and 101 in _nodes(m))
        assert _nodes(meta) == _nodes(await _controller_answer(other, 9))
        await other.delete("/controller")
        await settled(lambda m: m["controller_id"] == -1)
        await other.create("/controller", _controller(101), ephemeral=True)
        await settled(lambda m: m["controller_id"] == 101)
