"""controller.core.throttle_removal: its worked table, the limit per write, the guard."""

from __future__ import annotations

import pytest

from controller.core import throttle_removal as rule
from controller.core.throttle_removal import Listed, Mode, Snapshot
from znodes import paths
from znodes.api import Check, Create, Delete, SetData

TOPICS = Listed(frozenset({"t", "u"}), 3)
BROKERS = Listed(frozenset({1, 2}), 5)
REQUESTS = dict(requests_version=4, requests_topics=frozenset({"t"}), requests_brokers=frozenset({1, 2}))


R, B = paths.THROTTLED_REPLICAS_REMOVAL, paths.THROTTLED_RATES_REMOVAL


# The module docstring's worked table, row by row. ``tail``: per removal znode written, the
# members left listed (None: deleted).
@pytest.mark.parametrize(
    "mode, requests, busy, topics, brokers, tail, guard",
    [
        (Mode.ALL, {}, ((), ()), ["t", "u"], [1, 2], [(R, None), (B, None)], "create+delete"),
        (Mode.ALL, REQUESTS, ((), ()), [], [], [], "none"),
        (Mode.IDLE, {}, (("u",), (2,)), ["t"], [1], [(R, ["u"]), (B, [2])], "create+delete"),
        (Mode.IDLE, REQUESTS, ((), ()), ["u"], [], [(R, ["t"])], "check 4"),
        (Mode.IDLE, REQUESTS, (("u",), ()), [], [], [], "none"),
    ],
)
def test_worked_table(mode, requests, busy, topics, brokers, tail, guard):
    snap = Snapshot(TOPICS, BROKERS, **({"requests_version": None} | requests))
    d = rule.decide(snap, mode, frozenset(busy[0]), frozenset(busy[1]))
    assert (d.topics, d.brokers) == (topics, brokers)
    expected = [
        Delete(path, 3 if path == R else 5) if left is None else SetData(path, rule.listed_bytes(path, left), 3 if path == R else 5)
        for path, left in tail
    ]
    assert d.tail == expected  # conditional on the versions read
    if guard == "none":
        assert d.guard == [] and d.empty
    elif guard == "check 4":
        assert d.guard == [Check(paths.REASSIGN_PARTITIONS, 4)]
    else:
        assert d.guard == [Create(paths.REASSIGN_PARTITIONS, rule.GUARD_DATA), Delete(paths.REASSIGN_PARTITIONS, 0)]


def test_absent_or_unreadable_removal_znodes_are_left_alone():
    d = rule.decide(Snapshot(Listed(), Listed(), None), Mode.ALL)
    assert d.empty and d.guard == []
    # An empty list is deleted (nothing to strip, but the znode goes).
    d = rule.decide(Snapshot(Listed(frozenset(), 0), Listed(), None), Mode.ALL)
    assert [type(op) for op in d.tail] == [Delete] and d.topics == [] and not d.held_back


def test_the_limit_holds_entities_back_and_keeps_them_listed():
    snap = Snapshot(Listed(frozenset({"a", "b", "c"}), 1), Listed(frozenset({7, 8}), 2), None)
    d = rule.decide(snap, Mode.ALL, limit=4)
    assert d.topics == ["a", "b", "c"] and d.brokers == [7] and d.held_back
    assert isinstance(d.tail[0], Delete) and d.tail[1] == SetData(paths.THROTTLED_RATES_REMOVAL, rule.listed_bytes(paths.THROTTLED_RATES_REMOVAL, [8]), 2)
    d = rule.decide(snap, Mode.ALL, limit=3)
    assert d.brokers == [] and d.held_back and len(d.tail) == 1  # the rates znode is not written
    assert not rule.decide(snap, Mode.ALL).held_back


def test_restore_entries_go_back_to_the_stripped_and_stay_with_the_listed():
    from controller.core.events import ZnodeRead
    from znodes import models

    own = {"leader.replication.throttled.rate": "100"}
    brokers = Listed(frozenset({1, 2}), 5, {1: own, 2: {"follower.replication.throttled.rate": "7"}})
    d = rule.decide(Snapshot(Listed(), brokers, None), Mode.IDLE, busy_brokers=frozenset({2}))
    assert d.brokers == [1] and d.restore == {("brokers", 1): own}
    # Broker 2 stays listed with its own restore entry; broker 1's leaves with it.
    left = models.ThrottledRatesRemoval.from_bytes(B, d.tail[0].data)
    assert left.brokers == [2] and left.restore == {2: {"follower.replication.throttled.rate": "7"}}
    configs = {("brokers", 1): ZnodeRead({"leader.replication.throttled.rate": "5000", "follower.replication.throttled.rate": "5000",
                                          "log.cleaner.threads": "2"}, 9)}
    config_write = rule.removal_ops(d, configs)[len(d.guard)]
    assert models.EntityConfig.from_bytes(paths.broker_config(1), config_write.data).config == {
        "leader.replication.throttled.rate": "100", "log.cleaner.threads": "2"}


# ---- when the engine asks for a check (Step.throttle_check) -------------------------------------


def _engine_run(s, event, config=None):
    from controller.core import engine
    from controller.core.config import ControllerConfig

    step = engine.step(s, event, config or ControllerConfig())
    s.apply(step.delta)
    return step


def test_a_step_that_only_adds_entries_asks_for_no_check():
    from controller.core.events import RequestsRead
    from tests.controller.helpers import cluster, req

    s = cluster(topics={"t": {0: (1, 2, 3), 1: (1, 2, 3)}})
    assert _engine_run(s, RequestsRead(0, (req("t", 0, (4, 2, 3)),))).throttle_check is None
    step = _engine_run(s, RequestsRead(1, (req("t", 0, (4, 2, 3)), req("t", 1, (5, 2, 3)))))
    assert step.throttle_check is None


def test_an_entry_withdrawn_or_retargeted_before_it_started_asks_for_an_idle_check():
    """6(a): what the entry involved (broker 5 here) may be idle at once, with no move ended."""
    from controller.core.config import ControllerConfig
    from controller.core.events import RequestsRead
    from tests.controller.helpers import cluster, req

    config = ControllerConfig(max_cluster_moves=1)
    s = cluster(topics={"t": {0: (1, 2, 3), 1: (1, 2, 3)}})
    _engine_run(s, RequestsRead(0, (req("t", 0, (4, 2, 3)), req("t", 1, (5, 2, 3)))), config)
    step = _engine_run(s, RequestsRead(1, (req("t", 0, (4, 2, 3)), req("t", 1, (6, 2, 3)))), config)
    assert step.throttle_check is Mode.IDLE  # retargeted: 5 is no longer asked for
    step = _engine_run(s, RequestsRead(2, (req("t", 0, (4, 2, 3)),)), config)
    assert step.throttle_check is Mode.IDLE  # withdrawn


def test_a_failover_resume_with_moves_left_asks_for_an_idle_check():
    """The previous controller may have died between a move's end and its removal write."""
    from controller.core.events import RequestsRead, Resume, StatesRead
    from tests.controller.helpers import cluster, req, state

    s = cluster(topics={"t": {0: (1, 2, 3)}})
    _engine_run(s, RequestsRead(0, (req("t", 0, (4, 2, 3)),)))
    _engine_run(s, StatesRead({("t", 0): state(1, (1, 2, 3))}))
    assert _engine_run(s, Resume()).throttle_check is Mode.IDLE


async def test_the_shells_busy_read_takes_current_replicas_from_the_state_each_time():
    """controller.shell.throttles.busy_in_znode caches the znode's parse, not the brokers: an
    override deletes a dropped replica while /admin/reassign_partitions stays as it was, and a
    cached answer kept that broker busy (its throttle stayed; found by the stateful suite's
    throttles_follow_moves)."""
    import json as _json

    from controller.core.state import ClusterState
    from controller.shell.throttles import busy_in_znode
    from znodes.twin import TwinServer
    from znodes.values import Assignment

    store = TwinServer().connect()
    await store.create("/admin", b"")
    await store.create(paths.REASSIGN_PARTITIONS, _json.dumps({"version": 1, "partitions": [
        {"topic": "t", "partition": 3, "replicas": [1, 2, 3], "original_replicas": [1, 5, 6]}]}).encode())
    state = ClusterState(controller_id=101, epoch=1)
    state.assignments[("t", 3)] = Assignment((1, 2, 4, 5, 6), (2, 4), (5, 6))  # moving to 1,2,4
    cache: dict = {}
    _, _, brokers = await busy_in_znode(store, state, cache)
    assert brokers == {1, 2, 3, 4, 5, 6}
    state.assignments[("t", 3)] = Assignment((1, 2, 3, 5, 6), (2, 3), (5, 6))  # overridden: 4 deleted
    _, topics, brokers = await busy_in_znode(store, state, cache)
    assert topics == {"t"} and brokers == {1, 2, 3, 5, 6}
