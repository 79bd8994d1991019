"""znodes.cluster_reader, the one reader of a cluster's znodes (the controller's zkread, the
planner service's feed and the snapshot read through it), on the deterministic twin: what it
reads, what it names as Unreadable instead of raising, and its watches, an absent znode's too."""

from __future__ import annotations

import json

from znodes import cluster_reader
from znodes.api import WatchEvent
from znodes.twin import TwinServer

STATE = {"controller_epoch": 1, "leader": 2, "version": 1, "leader_epoch": 3, "isr": [2, 1]}


def registration(port: int, protocol: str = "PLAINTEXT", rack: str | None = None) -> bytes:
    reg = {"version": 4, "host": "h", "port": port, "jmx_port": -1, "timestamp": "1700000000000",
           "endpoints": [f"{protocol}://h:{port}"], "listener_security_protocol_map": {protocol: protocol}}
    if rack is not None:
        reg["rack"] = rack
    return json.dumps(reg).encode()


def topic(partitions: dict, removing: dict | None = None) -> bytes:
    return json.dumps({"version": 2, "partitions": partitions, "adding_replicas": {},
                       "removing_replicas": removing or {}}).encode()


async def _cluster():
    store = TwinServer().connect()
    for path in ("/brokers", "/brokers/ids", "/brokers/topics"):
        await store.create(path, b"")
    await store.create("/brokers/ids/1", registration(9092, rack="r1"))
    await store.create("/brokers/ids/2", registration(9093, protocol="SSL"))  # no PLAINTEXT listener
    await store.create("/brokers/ids/3", b"{not json")
    await store.create("/brokers/ids/x", b"")
    await store.create("/brokers/topics/t", topic({"0": [1, 2], "1": [2, 1]}, removing={"1": [1]}))
    await store.create("/brokers/topics/bad", b"[]")
    await store.create("/brokers/topics/a b", topic({"0": [1]}))
    for path in ("/brokers/topics/t/partitions", "/brokers/topics/t/partitions/0"):
        await store.create(path, b"")
    await store.create("/brokers/topics/t/partitions/0/state", json.dumps(STATE).encode())
    return store


async def test_brokers_their_racks_and_whole_registrations():
    store = await _cluster()
    brokers, bad = await cluster_reader.brokers(store)
    # 2 registered no PLAINTEXT listener: alive all the same, unreachable (port -1), its SSL
    # endpoint kept for UpdateMetadata.
    assert {b: (x.port, x.rack, x.reachable) for b, x in brokers.items()} == {1: (9092, "r1", True), 2: (-1, None, False)}
    assert brokers[2].endpoints == (("SSL", "h", 9093, "SSL"),)
    assert sorted(u.path for u in bad) == ["/brokers/ids/3", "/brokers/ids/x"]
    registrations, bad = await cluster_reader.registrations(store)
    assert sorted(registrations) == [1, 2] and registrations[2].parsed_endpoints()[0].security_protocol == "SSL"
    assert sorted(u.path for u in bad) == ["/brokers/ids/3", "/brokers/ids/x"]


async def test_topics_and_states_read_and_unreadable_ones_named_not_raised():
    store = await _cluster()
    names, bad = await cluster_reader.topic_names(store)
    assert names == ["bad", "t"] and [u.path for u in bad] == ["/brokers/topics/a b"]
    found, bad = await cluster_reader.topics(store, names + ["gone"])
    assert set(found) == {"t", "gone"} and found["gone"] is None
    assert found["t"].version == 0 and found["t"].partitions[1].removing == (1,)
    assert [u.path for u in bad] == ["/brokers/topics/bad"] and "malformed" not in bad[0].reason
    states, bad = await cluster_reader.partition_states(store, [("t", 0), ("t", 1)])
    assert states[("t", 1)] is None and (states[("t", 0)].leader, states[("t", 0)].isr) == (2, (2, 1))
    assert bad == []
    await store.set("/brokers/topics/t/partitions/0/state", json.dumps({**STATE, "isr": [2, 2]}).encode())
    states, bad = await cluster_reader.partition_states(store, [("t", 0)])
    assert states == {} and [str(u).split(":")[0] for u in bad] == ["/brokers/topics/t/partitions/0/state"]


async def test_watched_reads_fire_for_a_znode_that_was_absent_when_read():
    server = TwinServer()
    store = server.connect()
    writer = server.connect()
    assert await cluster_reader.topic_names(store, watch=True) == ([], [])  # /brokers/topics absent
    states, _ = await cluster_reader.partition_states(store, [("t", 0)], watch=True)
    assert states == {("t", 0): None}
    await writer.create("/brokers/topics/t/partitions/0/state", json.dumps(STATE).encode(), makepath=True)
    fired = set()
    while not store.events.empty():
        event = store.events.get_nowait()
        if isinstance(event, WatchEvent):
            fired.add(event.path)
    assert {"/brokers/topics", "/brokers/topics/t/partitions/0/state"} <= fired

