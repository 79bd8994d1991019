"""The three readers of a cluster's znodes - the controller's (controller.shell.zkread), the planner
service's feed (planner_service.zk_feed) and the snapshot (spark_jobs.snapshot) - decode topics and
partition states with the same decoders (znodes.payloads), so they take the same verdict on the
same znode: each reads a good one alike, and each refuses a bad one (the controller and the feed
skip it with a log line; the snapshot stops, naming it). Real ZooKeeper, each reading with its own
I/O as in production."""

from __future__ import annotations

import json

import pytest
from kazoo.client import KazooClient

from controller.shell import zkread
from planner_service.model import ClusterModel
from planner_service.zk_feed import ZkFeed
from spark_jobs import snapshot
from spark_jobs.errors import SnapshotError
from znodes.store import connect

pytestmark = pytest.mark.zk

GOOD_STATE = {"controller_epoch": 1, "leader": 2, "version": 1, "leader_epoch": 3, "isr": [2, 1]}
STATES = {
    "plain": (GOOD_STATE, (2, [2, 1])),
    "Kafka 3.2+'s leader_recovery_state": ({**GOOD_STATE, "leader_recovery_state": 0}, (2, [2, 1])),
    "leader -1, empty ISR": ({**GOOD_STATE, "leader": -1, "isr": []}, (-1, [])),
    "version 2": ({**GOOD_STATE, "version": 2}, None),
    "no controller_epoch": ({k: v for k, v in GOOD_STATE.items() if k != "controller_epoch"}, None),
    "an ISR member twice": ({**GOOD_STATE, "isr": [2, 2]}, None),
    "negative leader epoch": ({**GOOD_STATE, "leader_epoch": -1}, None),
    "not JSON": (b"{leader:2", None),
}

REGISTRATION = {"version": 4, "host": "127.0.0.1", "port": 1, "jmx_port": -1, "timestamp": "1700000000000",
                "endpoints": ["PLAINTEXT://127.0.0.1:1"], "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"}}


def _populate(hosts: str, state) -> None:
    zk = KazooClient(hosts=hosts, timeout=10)
    zk.start(timeout=30)
    try:
        for b in (1, 2):
            zk.create(f"/brokers/ids/{b}", json.dumps(REGISTRATION).encode(), makepath=True)
        zk.create("/brokers/topics/t", json.dumps({"version": 2, "partitions": {"0": [2, 1]}, "adding_replicas": {},
                                                   "removing_replicas": {}}).encode(), makepath=True)
        data = state if isinstance(state, bytes) else json.dumps(state).encode()
        zk.create("/brokers/topics/t/partitions/0/state", data, makepath=True)
    finally:
        zk.stop()
        zk.close()


async def _controller(hosts: str):
    store = await connect(hosts)
    try:
        states, log = await zkread.read_states(store, [("t", 0)])
    finally:
        await store.close()
    state = states.get(("t", 0))
    return ("read", (state.leader, list(state.isr))) if state is not None else ("refused", log)


async def _feed_model(hosts: str) -> ClusterModel:
    """What the planner service's feed knows after one full read."""
    model = ClusterModel()
    feed = ZkFeed(hosts, model, on_change=lambda: None)
    feed.store = await connect(hosts)
    try:
        await feed.resync()
    finally:
        await feed.store.close()
    return model


async def _feed(hosts: str):
    state = (await _feed_model(hosts)).states.get("t", {}).get(0)
    return ("read", (state.leader, list(state.isr))) if state is not None else ("refused", None)


async def _snapshot(hosts: str):
    try:
        snap = await snapshot.read_cluster(hosts, sizes=False, timeout=10)
    except SnapshotError as e:
        return "refused", str(e)
    part = snap["topics"][0]["partitions"][0]
    return "read", (part["leader"], part["isr"])


@pytest.mark.parametrize("shape", STATES)
async def test_the_three_readers_take_the_same_verdict_on_a_state(zk_hosts, shape):
    state, expected = STATES[shape]
    _populate(zk_hosts, state)
    verdicts = {"controller": await _controller(zk_hosts), "feed": await _feed(zk_hosts),
                "snapshot": await _snapshot(zk_hosts)}
    if expected is None:
        assert {k: v[0] for k, v in verdicts.items()} == dict.fromkeys(verdicts, "refused")
        assert "/brokers/topics/t/partitions/0/state" in verdicts["snapshot"][1]
        assert any("/brokers/topics/t/partitions/0/state" in line for line in verdicts["controller"][1])
    else:
        assert verdicts == dict.fromkeys(verdicts, ("read", expected))


async def test_a_topic_name_that_is_not_kafkas_is_refused_by_each(zk_hosts):
    _populate(zk_hosts, GOOD_STATE)
    zk = KazooClient(hosts=zk_hosts, timeout=10)
    zk.start(timeout=30)
    try:
        zk.create("/brokers/topics/a b", json.dumps({"version": 2, "partitions": {"0": [1]}}).encode())
    finally:
        zk.stop()
        zk.close()
    store = await connect(zk_hosts)
    try:
        topics, log = await zkread.read_topics(store, await zkread.read_topic_names(store))
    finally:
        await store.close()
    assert set(topics) == {"t"} and any("'a b'" in line for line in log)
    assert set((await _feed_model(zk_hosts)).topics) == {"t"}
    with pytest.raises(SnapshotError, match="/brokers/topics/a b"):  # was a bare ValueError
        await snapshot.read_cluster(zk_hosts, sizes=False, timeout=10)


async def _feed_controllers(zk_hosts: str, registrations: dict[int, bytes]) -> list[str]:
    """What the feed gives as bootstrap once ``registrations`` are under /reassignd/controllers."""
    zk = KazooClient(hosts=zk_hosts, timeout=10)
    zk.start(timeout=30)
    try:
        for cid, payload in registrations.items():
            zk.create(f"/reassignd/controllers/{cid}", payload, makepath=True)
    finally:
        zk.stop()
        zk.close()
    feed = ZkFeed(zk_hosts, ClusterModel(), on_change=lambda: None)
    feed.store = await connect(zk_hosts)
    try:
        return await feed.controllers()
    finally:
        await feed.store.close()


async def test_the_feed_skips_a_controller_registration_it_cannot_read(zk_hosts):
    listeners = await _feed_controllers(zk_hosts, {101: b'{"version":1,"host":"h","port":"9190"}',
                                                   102: b'{"version":1,"host":"127.0.0.1","port":9190}'})
    assert listeners == ["127.0.0.1:9190"]  # raised ZnodeFormatError for 101


async def test_the_feed_brackets_an_ipv6_controller_listener(zk_hosts):
    # "::1:9190" is no HOST:PORT the AdminClient can read (parse_bootstrap); "[::1]:9190" is.
    from client.admin import parse_bootstrap

    listeners = await _feed_controllers(zk_hosts, {101: b'{"version":1,"host":"::1","port":9190}',
                                                   102: b'{"version":1,"host":"127.0.0.1","port":9191}'})
    assert listeners == ["[::1]:9190", "127.0.0.1:9191"]
    assert parse_bootstrap(",".join(listeners)) == [("::1", 9190), ("127.0.0.1", 9191)]
