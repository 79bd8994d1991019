"""Kafka's throttled-replica list: the one parser, and every user of it giving the same answers.

The users are the config catalogue (AlterConfigs/CreateTopics validation), the controller's
throttle writes, the simulated brokers' throttles and kafka-reassign --zookeeper's merge. Each is
fed the same good and bad values through its own public entry point; a good value must come out
as the same replicas, a bad one must be refused naming the same entry.
"""

from __future__ import annotations

import json

import pytest

from client.cluster import ClusterAssignment
from client.errors import ClusterDataError
from client.zk_backend import ZkBackend
from controller.shell import throttle_configs as tc
from protocol import throttled_replicas as tr
from protocol.kafka_configs import TOPIC_CONFIGS, problem
from sim.throttle import ThrottleConfigError, Throttles
from znodes import paths
from znodes.twin import TwinServer

KEY = "leader.replication.throttled.replicas"

# value -> the replicas it names ("*": every replica)
GOOD = {
    "": set(),
    "   ": set(),
    "0:1": {(0, 1)},
    "0:1,1:2": {(0, 1), (1, 2)},
    " 1:2 ,\t0:3 ": {(1, 2), (0, 3)},
    "007:01": {(7, 1)},
    "0:1,0:1": {(0, 1)},
    "2147483647:2147483647": {(2**31 - 1, 2**31 - 1)},
    "*": "*",
    " *\n": "*",
}

# value -> the entry a refusal names
BAD = {
    "1": "1",
    "a:b": "a:b",
    "1:2:3": "1:2:3",
    "-1:2": "-1:2",
    "+1:2": "+1:2",
    "0:1,": "",
    "0:1,,1:2": "",
    "0 : 1": "0 : 1",
    "*,0:1": "*",
    "0:1,*": "*",
    "**": "**",
    "0:x": "0:x",
    "\u00b2:1": "\u00b2:1",  # a digit to Python's isdigit, not to Kafka's [0-9]
    "\u0661:1": "\u0661:1",  # Arabic-Indic one: int() reads it, Kafka does not
    "2147483648:1": "2147483648:1",  # past a Java int
    "0:1, 1:2 3": "1:2 3",
}


def _text(replicas) -> str:
    return "*" if replicas == "*" else ",".join(f"{p}:{b}" for p, b in sorted(replicas))


# ---- the parser ------------------------------------------------------------------------------


@pytest.mark.parametrize("value,replicas", GOOD.items())
def test_parser_reads_good_values(value, replicas):
    parsed = tr.parse(value)
    assert parsed.everything == (replicas == "*")
    if replicas != "*":
        assert parsed.pairs == replicas
    assert str(parsed) == _text(replicas)


@pytest.mark.parametrize("value,entry", BAD.items())
def test_parser_names_the_bad_entry(value, entry):
    with pytest.raises(tr.ThrottledReplicasError) as caught:
        tr.parse(value)
    assert caught.value.entry == entry and caught.value.value == value
    assert repr(entry) in str(caught.value)


def test_parser_edges():
    assert tr.parse(None) == tr.NONE and tr.parse(None).empty
    with pytest.raises(tr.ThrottledReplicasError):
        tr.parse(5)  # a config value is always a string
    assert (9, 9) in tr.EVERY and (9, 9) not in tr.parse("0:1")
    assert str(tr.parse("0:1,1:2").merged({(1, 3)}, replace_partitions={1})) == "0:1,1:3"
    assert tr.EVERY.merged({(5, 5)}) == tr.EVERY
    assert tr.format_pairs([(10, 1), (2, 3), (2, 1)]) == "2:1,2:3,10:1"


# ---- every user, the same answers ------------------------------------------------------------


def _catalogue(value: str):
    refusal = problem(KEY, value, TOPIC_CONFIGS)
    if refusal is None:
        return "ok", None
    return "refused", refusal


def _controller(value: str):
    try:
        config = tc.add_replicas((), ())({KEY: value})
    except tr.ThrottledReplicasError as e:
        return "refused", repr(e.entry) + " " + str(e)
    return "ok", config.get(KEY, "")


def _sim(value: str):
    throttles = Throttles()
    try:
        throttles.update_topic("t", {KEY: value})
    except ThrottleConfigError as e:
        return "refused", str(e)
    return "ok", throttles.snapshot()["topics"].get("t", {}).get("leader", "")


# kafka-reassign --zookeeper --execute --additional --throttle merges into the lists already there:
# partition 7 of t moves from [1] to [1, 2], adding (7, 1) to the leader list.
MOVE_ADDS = {(7, 1)}


async def _client(value: str):
    server = TwinServer()
    store = server.connect()
    await store.create(paths.topic_config("t"), json.dumps({"version": 1, "config": {KEY: value}}).encode(),
                       makepath=True)
    await store.create(paths.REASSIGN_PARTITIONS, json.dumps({"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [2], "original_replicas": [1]}]}).encode(), makepath=True)
    state = ClusterAssignment(brokers={1: None, 2: None}, topics={"t": {0: [1], 7: [1]}})
    try:
        outcome = await ZkBackend(store).execute({("t", 7): [1, 2]}, state, throttle=100, additional=True,
                                                 dry_run=True)
    except ClusterDataError as e:
        return "refused", str(e)
    return "ok", json.loads(outcome.writes[paths.topic_config("t")])["config"][KEY]


@pytest.mark.parametrize("value,replicas", GOOD.items())
async def test_every_user_accepts_a_good_value_alike(value, replicas):
    assert _catalogue(value) == ("ok", None)
    assert _controller(value) == ("ok", _text(replicas))
    assert _sim(value) == ("ok", _text(replicas))
    merged = "*" if replicas == "*" else _text(replicas | MOVE_ADDS)
    assert await _client(value) == ("ok", merged)


@pytest.mark.parametrize("value,entry", BAD.items())
async def test_every_user_refuses_a_bad_value_naming_its_entry(value, entry):
    for verdict, message in (_catalogue(value), _controller(value), _sim(value), await _client(value)):
        assert verdict == "refused"
        assert repr(entry) in message
