"""A broker's controlled shutdown (ControlledShutdown, API 7): the engine's part
(controller.core.controlled_shutdown), its worked table and every rule of its docstring, and the
other elections that must not pick a broker shutting down (step 2)."""

from __future__ import annotations

import json

from controller.core import engine
from controller.core.config import ControllerConfig
from controller.core.elections import PREFERRED
from controller.core.events import (
    BrokersRead,
    ElectionRequested,
    MetadataRead,
    ShutdownRequested,
    StatesRead,
    offline_check,
)
from controller.core.state import ClusterState
from controller.core.task import Move, Phase
from controller.core.topic_deletion import TopicDeletion
from protocol import ApiKey
from protocol.errors import ErrorCode
from znodes.values import Assignment, Broker, LeaderIsr

TOKEN = object()
EPOCHS = {1: 100, 2: 200, 3: 300}


def _brokers(live=(1, 2, 3)) -> dict:
    return {b: Broker(b, "h", 9000 + b, epoch=EPOCHS[b]) for b in live}


def _state(live=(1, 2, 3)) -> ClusterState:
    """The docstring's worked table: a-e are partitions 0-4 of topic t."""
    s = ClusterState(controller_id=101, epoch=4, brokers=_brokers(live))
    for p, (replicas, state) in enumerate([
        ((1, 2, 3), LeaderIsr(1, 4, 3, (1, 2, 3), 10)),  # a: 1 leads
        ((2, 1, 3), LeaderIsr(2, 7, 3, (2, 1, 3), 11)),  # b: 1 follows, in sync
        ((1, 2), LeaderIsr(1, 3, 3, (1,), 12)),  # c: 1 leads alone in the ISR
        ((1,), LeaderIsr(1, 0, 3, (1,), 13)),  # d: one replica
        ((2, 1), LeaderIsr(2, 5, 3, (2,), 14)),  # e: 1 follows, out of sync
    ]):
        s.assignments[("t", p)] = Assignment(replicas)
        s.states[("t", p)] = state
    s.topic_partitions["t"], s.topic_versions["t"] = (0, 1, 2, 3, 4), 0
    return s


def _result(st):
    [(token, result)] = st.elections
    assert token is TOKEN
    return result


def _writes(st) -> dict:
    return {w.path.split("/")[-2]: json.loads(w.data) for w in st.writes}


def _by_broker(st, api_key) -> dict:
    out: dict = {}
    for c in st.commands:
        if c.api_key == api_key and c.body.get("topic_states"):
            for t in c.body["topic_states"]:
                for ps in t["partition_states"]:
                    out.setdefault(c.broker_id, {})[ps["partition_index"]] = ps
    return out


def test_the_worked_table():
    st = engine.step(_state(), ShutdownRequested(1, 100, {}, TOKEN), ControllerConfig())
    assert _result(st) == (ErrorCode.NONE, None, (("t", 2),))
    writes = _writes(st)
    assert set(writes) == {"0", "1"}  # a and b; c, d, e unchanged
    assert (writes["0"]["leader"], writes["0"]["isr"], writes["0"]["leader_epoch"]) == (2, [2, 3], 5)
    assert (writes["1"]["leader"], writes["1"]["isr"], writes["1"]["leader_epoch"]) == (2, [2, 3], 8)
    assert [w.version for w in st.writes] == [10, 11]  # conditional on the zkVersion decided from
    assert st.kinds == [frozenset({"elect"})] * 2
    lai = _by_broker(st, ApiKey.LEADER_AND_ISR)
    assert set(lai[1]) == {0} and set(lai[2]) == {0, 1} and set(lai[3]) == {0, 1}  # 1 told it follows a
    stops = _by_broker(st, ApiKey.STOP_REPLICA)
    assert set(stops) == {1} and set(stops[1]) == {1, 4}  # b and e: it stops following
    assert not any(ps["delete_partition"] for ps in stops[1].values())  # its logs stay
    assert not [c for c in st.commands if c.api_key == ApiKey.STOP_REPLICA and c.partitions]  # no move waits on them
    # UpdateMetadata lists its replicas offline, as Kafka's (isReplicaOnline without shutting-down brokers)
    metadata = _by_broker(st, ApiKey.UPDATE_METADATA)
    assert {p: ps["offline_replicas"] for p, ps in metadata[2].items()} == {0: [1], 1: [1]}


def test_it_is_remembered_and_a_retry_moves_what_could_not_move_before():
    s = _state()
    s.apply(engine.step(s, ShutdownRequested(1, 100, {}, TOKEN), ControllerConfig()).delta)
    assert s.shutting_down == {1: 100}
    # 2 caught up on c meanwhile (its leader's ISR change; the shell read the state for the retry)
    newer = {("t", 2): LeaderIsr(1, 3, 3, (1, 2), 13)}
    st = engine.step(s, ShutdownRequested(1, 100, newer, TOKEN), ControllerConfig())
    assert _result(st) == (ErrorCode.NONE, None, ())
    assert _writes(st)["2"]["leader"] == 2 and _writes(st)["2"]["isr"] == [2] and st.writes[0].version == 13


def test_unknown_broker_and_stale_epoch_change_nothing():
    for event, code in [
        (ShutdownRequested(7, 100, {}, TOKEN), ErrorCode.BROKER_NOT_AVAILABLE),
        (ShutdownRequested(1, 99, {}, TOKEN), ErrorCode.STALE_BROKER_EPOCH),
    ]:
        s = _state()
        st = engine.step(s, event, ControllerConfig())
        code_given, message, remaining = _result(st)
        assert code_given == code and remaining == () and message
        assert st.writes == [] and st.commands == []
        s.apply(st.delta)
        assert s.shutting_down == {}
    # -1: versions 0-1 say no epoch; a newer epoch than the registration's is not stale either
    for epoch in (-1, 100, 101):
        assert _result(engine.step(_state(), ShutdownRequested(1, epoch, {}, TOKEN), ControllerConfig()))[0] == ErrorCode.NONE


def test_no_election_picks_a_broker_shutting_down_and_it_ends_with_its_registration():
    s = _state()
    s.apply(engine.step(s, ShutdownRequested(1, 100, {}, TOKEN), ControllerConfig()).delta)
    # preferred election of a (preferred 1): not available while 1 shuts down
    st = engine.step(s, ElectionRequested((("t", 0),), PREFERRED, {}, TOKEN), ControllerConfig())
    [(_, results)] = st.elections
    code, message = results[("t", 0)]
    assert code == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE and "shutting down" in message
    # broker 2 dies: a's ISR is [2, 3] -> 3; b (ISR [2, 3]) -> 3; never 1
    st = engine.step(s, [BrokersRead(_brokers((1, 3))), offline_check(None)], ControllerConfig())
    assert {p: w["leader"] for p, w in _writes(st).items()} == {"0": 3, "1": 3, "4": -1}
    # 1 registers again (a restart: new epoch): it may lead again, and a preferred election takes it
    s.apply(st.delta)
    back = {**_brokers((1, 3)), 1: Broker(1, "h", 9001, epoch=150)}
    st = engine.step(s, [BrokersRead(back), offline_check(None, registered={1})], ControllerConfig())
    s.apply(st.delta)
    assert s.shutting_down == {}
    s.states[("t", 0)] = LeaderIsr(3, 6, 4, (3, 1), 20)
    st = engine.step(s, ElectionRequested((("t", 0),), PREFERRED, {}, TOKEN), ControllerConfig())
    assert st.elections[0][1][("t", 0)][0] == ErrorCode.NONE


def test_an_offline_election_leaves_the_partition_leaderless_rather_than_elect_a_broker_shutting_down():
    """Kafka's offline election excludes shutting-down brokers (isReplicaOnline): leader 2 dies,
    the only other ISR member is shutting down: no leader until one registers."""
    s = _state()
    s.states[("t", 1)] = LeaderIsr(2, 7, 3, (2, 1), 11)  # b: 1 in the ISR, 2 leads
    s.shutting_down[1] = 100
    st = engine.step(s, [BrokersRead(_brokers((1, 3))), offline_check((("t", 1),))], ControllerConfig())
    assert _writes(st)["1"]["leader"] == -1


def test_a_running_move_is_left_to_its_move_and_its_completion_elects_elsewhere():
    s = _state()
    tp = ("t", 0)
    s.tasks[tp] = Move(tp, (1, 2), Phase.REPLICATING, original=(1, 2, 3))
    st = engine.step(s, ShutdownRequested(1, 100, {}, TOKEN), ControllerConfig())
    assert _result(st)[2] == (tp, ("t", 2))  # a: still led by 1, the move's
    assert "0" not in _writes(st)
    s.apply(st.delta)
    # the move completes (TRS 1, 2 in the ISR): its leader is 2, not 1 which shuts down
    st = engine.step(s, StatesRead({tp: LeaderIsr(1, 4, 3, (1, 2, 3), 10)}), ControllerConfig())
    assert _writes(st)["0"]["leader"] == 2
    # without the shutdown the leader would have stayed
    s2 = _state()
    s2.tasks[tp] = Move(tp, (1, 2), Phase.REPLICATING, original=(1, 2, 3))
    st = engine.step(s2, StatesRead({tp: LeaderIsr(1, 4, 3, (1, 2, 3), 10)}), ControllerConfig())
    assert _writes(st)["0"]["leader"] == 1


def test_a_topic_being_deleted_is_not_acted_on_nor_listed():
    s = _state()
    s.deleting["t"] = TopicDeletion(started=True)
    st = engine.step(s, ShutdownRequested(1, 100, {}, TOKEN), ControllerConfig())
    assert _result(st) == (ErrorCode.NONE, None, ())
    assert [w for w in st.writes if w.path.endswith("/state")] == []
    assert not [c for c in st.commands if c.api_key == ApiKey.STOP_REPLICA and not all(
        ps["delete_partition"] for t in c.body["topic_states"] for ps in t["partition_states"])]


def test_a_new_partition_neither_led_by_nor_in_sync_on_a_broker_shutting_down():
    """Kafka's NewPartition -> OnlinePartition takes the replicas isReplicaOnline counts: a broker
    shutting down is told (LeaderAndIsr) but neither leads nor joins the first ISR."""
    s = _state()
    s.shutting_down[1] = 100
    s.assignments[("n", 0)] = Assignment((1, 2))
    s.assignments[("n", 1)] = Assignment((1,))
    s.topic_partitions["n"], s.topic_versions["n"] = (0, 1), 0
    st = engine.step(s, MetadataRead({("n", 0): None, ("n", 1): None}, None, frozenset()), ControllerConfig())
    assert _writes(st) == {"0": {"controller_epoch": 4, "leader": 2, "version": 1, "leader_epoch": 0, "isr": [2]}}
    assert st.created == [("n", 0)]  # n-1 waits: its only replica is shutting down
    assert {b for b, parts in _by_broker(st, ApiKey.LEADER_AND_ISR).items()} == {1, 2}
