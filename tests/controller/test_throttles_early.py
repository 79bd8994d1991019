"""Throttle values in Kafka's formats, early removal (past KIP-179) and the throttle lock."""

from __future__ import annotations

import json

import pytest

from controller.shell import throttle_configs as tc
from tests.controller.removal_rounds import remove_idle, remove_throttles
from protocol.throttled_replicas import ThrottledReplicasError
from znodes import paths
from znodes.twin import TwinServer

RATES = {tc.LEADER_RATE: "100", tc.FOLLOWER_RATE: "100"}
REPLICAS = {tc.LEADER_REPLICAS: "0:1", tc.FOLLOWER_REPLICAS: "0:2"}


def test_replica_lists_merge():
    def merged(existing, leader, replace=frozenset()):
        config = {} if existing is None else {tc.LEADER_REPLICAS: existing}
        return tc.add_replicas(leader, (), replace)(config).get(tc.LEADER_REPLICAS, "")

    assert merged("0:1,1:2", {(1, 3)}) == "0:1,1:2,1:3"
    assert merged("1:2, 0:3", {(10, 1)}) == "0:3,1:2,10:1"  # sorted: the same set writes the same bytes
    assert merged("0:1,1:2", {(1, 3)}, replace={1}) == "0:1,1:3"
    assert merged("*", {(5, 5)}) == "*"  # already every replica
    assert merged(None, set()) == ""
    for bad in ("1", "a:b", "1:2:3", "-1:2", "0:1,"):
        with pytest.raises(ThrottledReplicasError):
            merged(bad, {(0, 1)})


async def _cluster():
    server = TwinServer()
    store = server.connect()
    await store.create(paths.CONTROLLER_EPOCH, b"1", makepath=True)
    for path in paths.PERSISTENT_PATHS:
        await store.ensure_path(path)
    epoch_version = (await store.exists(paths.CONTROLLER_EPOCH)).version
    for topic in ("t", "u"):
        await store.create(paths.topic_config(topic), json.dumps({"version": 1, "config": REPLICAS}).encode(), makepath=True)
    for broker in (1, 2, 3):
        await store.create(paths.broker_config(broker), json.dumps({"version": 1, "config": RATES}).encode(), makepath=True)
    await store.create(paths.THROTTLED_REPLICAS_REMOVAL, b'{"version":1,"topics":["t","u"]}', makepath=True)
    await store.create(paths.THROTTLED_RATES_REMOVAL, b'{"version":1,"brokers":[1,2,3]}')
    return server, store, epoch_version


def _config(server, path):
    return json.loads(server.read(path)[0])["config"]


async def test_early_removal_spares_what_an_unread_request_still_needs():
    server, store, epoch = await _cluster()
    # An entry the controller has not read yet: t and brokers 1, 2 stay throttled.
    await store.create(
        paths.REASSIGN_PARTITIONS,
        b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2],"original_replicas":[1]}]}',
    )
    assert await remove_idle(store, epoch, None) > 0
    assert _config(server, paths.topic_config("t")) == REPLICAS
    assert _config(server, paths.topic_config("u")) == {}
    assert _config(server, paths.broker_config(1)) == RATES and _config(server, paths.broker_config(2)) == RATES
    assert _config(server, paths.broker_config(3)) == {}
    assert json.loads(server.read(paths.THROTTLED_REPLICAS_REMOVAL)[0])["topics"] == ["t"]
    assert json.loads(server.read(paths.THROTTLED_RATES_REMOVAL)[0])["brokers"] == [1, 2]
    notes = {json.loads(server.read(f"/config/changes/{n}")[0])["entity_path"] for n in server.children("/config/changes")}
    assert notes == {"topics/u", "brokers/3"}
    # Nothing idle any more: a second run writes nothing.
    assert await remove_idle(store, epoch, None) == 0


async def test_completion_removal_spares_a_request_accepted_meanwhile():
    server, store, epoch = await _cluster()
    # A request accepted after the step that ended the last move, before its removal ran.
    await store.create(paths.REASSIGN_PARTITIONS, b'{"version":1,"partitions":[]}')
    assert await remove_throttles(store, epoch) == 0
    assert _config(server, paths.topic_config("t")) == REPLICAS
    # Once nothing runs, all of it goes.
    await store.delete(paths.REASSIGN_PARTITIONS)
    assert await remove_throttles(store, epoch) > 0
    assert all(_config(server, paths.topic_config(t)) == {} for t in ("t", "u"))
    assert all(_config(server, paths.broker_config(b)) == {} for b in (1, 2, 3))
    assert server.exists(paths.THROTTLED_REPLICAS_REMOVAL) is None and server.exists(paths.THROTTLED_RATES_REMOVAL) is None


async def test_a_config_that_does_not_parse_is_left_alone(caplog):
    server, store, epoch = await _cluster()
    await store.set(paths.topic_config("u"), b"{broken")
    await remove_throttles(store, epoch)
    assert server.read(paths.topic_config("u"))[0] == b"{broken"
    assert _config(server, paths.topic_config("t")) == {}
    assert "leaving /config/topics/u alone" in caplog.text
    # u stays listed: once the operator repairs its config, the next removal takes its throttle.
    assert json.loads(server.read(paths.THROTTLED_REPLICAS_REMOVAL)[0])["topics"] == ["u"]
    await store.set(paths.topic_config("u"), json.dumps({"version": 1, "config": REPLICAS}).encode())
    assert await remove_throttles(store, epoch) > 0
    assert _config(server, paths.topic_config("u")) == {}
    assert server.exists(paths.THROTTLED_REPLICAS_REMOVAL) is None


async def test_a_listed_config_that_never_parses_writes_nothing_again(caplog):
    server, store, epoch = await _cluster()
    await store.set(paths.broker_config(2), b"[]")
    assert await remove_throttles(store, epoch) > 0
    assert json.loads(server.read(paths.THROTTLED_RATES_REMOVAL)[0])["brokers"] == [2]
    assert server.read(paths.broker_config(2))[0] == b"[]"
    assert await remove_throttles(store, epoch) == 0  # nothing else to strip: no write at all


async def test_a_deposed_controller_removes_nothing():
    server, store, epoch = await _cluster()
    await store.set(paths.CONTROLLER_EPOCH, b"2")  # another controller was elected
    with pytest.raises(Exception, match="fenced|Fenced"):
        await remove_throttles(store, epoch)
    assert _config(server, paths.topic_config("t")) == REPLICAS
    assert server.exists(paths.THROTTLED_RATES_REMOVAL) is not None
