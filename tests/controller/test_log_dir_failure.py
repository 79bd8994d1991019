"""Replicas on a failed log directory (controller.core.log_dir_failure, Kafka's
processLogDirEventNotification / onBrokerLogDirFailure): the notifications deleted and their
brokers asked, the docstring's worked table through the engine (a LeaderAndIsr answer's
KAFKA_STORAGE_ERROR partitions as ReplicasOffline), the moves it leaves alone or holds, stale
answers, and the broker's restart bringing its replicas back."""

from __future__ import annotations

import json

from controller.core import engine
from controller.core.broker_failure import NO_LEADER
from controller.core.config import ControllerConfig
from controller.core.events import BrokersRead, LogDirEventsRead, ReplicasOffline, StatesRead, StopReplicaSent, offline_check
from controller.core.log_dir_failure import offline_in_answer, online_in_answer, unclean_candidates
from controller.core.state import ClusterState
from controller.core.task import Move, Phase
from protocol import ApiKey
from tests.controller.helpers import leader_and_isr_sent
from znodes.api import Delete
from znodes.values import Assignment, Broker, LeaderIsr

NOTE = "/log_dir_event_notification/log_dir_event_"
EPOCHS = {b: 100 + b for b in (1, 2, 3, 4)}


def _s(leader, isr, epoch, zk=10):
    return LeaderIsr(leader, epoch, 1, tuple(isr), zk)


# The docstring's table: partition -> (RS, AR, RR, state before).
TABLE = {
    ("a", 0): ((1, 2, 3), (), (), _s(1, (1, 2, 3), 4)),
    ("b", 0): ((2, 1, 3), (), (), _s(2, (2, 1, 3), 7)),
    ("c", 0): ((1, 2), (), (), _s(1, (1, 2), 3)),
    ("d", 0): ((1, 4), (), (), _s(1, (1,), 2)),
    ("e", 0): ((4, 2, 1), (4,), (1,), _s(1, (1, 2), 2)),
    ("f", 0): ((4, 1, 2), (4,), (2,), _s(2, (2, 1, 4), 5)),
}
OFFLINE = frozenset({("a", 0), ("b", 0), ("d", 0), ("e", 0), ("f", 0)})  # broker 1's /d2; c is in /d1


def _cluster() -> ClusterState:
    s = ClusterState(controller_id=101, epoch=9, brokers={b: Broker(b, "h", 9000 + b, epoch=e) for b, e in EPOCHS.items()})
    for tp, (rs, ar, rr, state) in TABLE.items():
        s.assignments[tp] = Assignment(rs, ar, rr)
        s.states[tp] = state
        s.topic_partitions[tp[0]], s.topic_versions[tp[0]] = (0,), 0
    s.tasks[("e", 0)] = Move(("e", 0), (4, 2), Phase.REPLICATING, original=(2, 1))
    s.tasks[("f", 0)] = Move(("f", 0), (4, 1), Phase.REPLICATING, original=(1, 2))
    return s


def _offline(s, partitions=OFFLINE, broker=1, epoch=None, unclean=frozenset()) -> engine.Step:
    event = ReplicasOffline(broker, EPOCHS[broker] if epoch is None else epoch, frozenset(partitions), frozenset(unclean))
    return engine.step(s, event, ControllerConfig())


def _written(st: engine.Step) -> dict:
    """State znode writes: partition -> (expected version, leader, isr, leader epoch)."""
    out = {}
    for op in st.writes:
        if op.path.endswith("/state"):
            topic, p = op.path.split("/")[3], int(op.path.split("/")[-2])
            doc = json.loads(op.data)
            out[(topic, p)] = (op.version, doc["leader"], doc["isr"], doc["leader_epoch"])
    return out


def _lai(st: engine.Step) -> dict:
    """LeaderAndIsr per partition: {broker: (leader, leader epoch, replicas, adding, removing)}."""
    return leader_and_isr_sent(st, ("leader", "leader_epoch", "replicas", "adding_replicas", "removing_replicas"))


def test_notifications_are_deleted_in_the_fenced_flush_and_the_named_brokers_asked():
    s = _cluster()
    notes = (NOTE + "0000000000", NOTE + "0000000001")
    st = engine.step(s, LogDirEventsRead(frozenset({1, 9}), notes), ControllerConfig())
    # steps 1-2: both deleted (the second named nobody: malformed), labelled, nothing else written
    assert [(type(op), op.path) for op in st.writes] == [(Delete, n) for n in notes]
    assert set(st.kinds) == {frozenset({"log-dir"})}
    lai = _lai(st)
    # broker 1 (registered) is asked about every replica it has, the state held, leader epoch
    # unchanged; a move's with its own RS, AR and RR. Broker 9 is not registered: not asked.
    assert {c.broker_id for c in st.commands if c.api_key == ApiKey.LEADER_AND_ISR} == {1}
    assert lai == {
        ("a", 0): {1: (1, 4, [1, 2, 3], [], [])},
        ("b", 0): {1: (2, 7, [2, 1, 3], [], [])},
        ("c", 0): {1: (1, 3, [1, 2], [], [])},
        ("d", 0): {1: (1, 2, [1, 4], [], [])},
        ("e", 0): {1: (1, 2, [4, 2, 1], [4], [1])},
        ("f", 0): {1: (2, 5, [4, 1, 2], [4], [2])},
    }
    assert st.delta.offline_replicas == {}  # nothing is known offline until the broker answers


def test_worked_table_broker_1s_directory_fails():
    st = _offline(_cluster())
    assert _written(st) == {
        ("a", 0): (10, 2, [2, 3], 5),  # 4: 2 is the first online replica of RS in the ISR
        ("b", 0): (10, 2, [2, 3], 8),  # 4: the ISR loses the offline replica
        ("d", 0): (10, NO_LEADER, [1], 3),  # 4: no online ISR member, unclean off
        ("e", 0): (10, 2, [2], 3),  # 4: the move's RS order: 4 is not in the ISR, 2 is
    }  # c: its replica is online; f: a REPLICATING move's ISR is the move's
    assert set(st.kinds) == {frozenset({"broker-failure"})}
    assert st.delta.offline_replicas == {1: OFFLINE}
    lai = _lai(st)
    # the online replicas hear of the new state; the offline one is not told
    assert lai[("a", 0)] == {2: (2, 5, [1, 2, 3], [], []), 3: (2, 5, [1, 2, 3], [], [])}
    assert lai[("d", 0)] == {4: (NO_LEADER, 3, [1, 4], [], [])}
    assert set(lai[("e", 0)]) >= {2, 4} and lai[("e", 0)][2] == (2, 3, [4, 2, 1], [4], [1])
    assert st.completed == [] and not any(c.api_key == ApiKey.STOP_REPLICA for c in st.commands)  # f waits (5)
    metadata = {(t["topic_name"], p["partition_index"]) for c in st.commands if c.api_key == ApiKey.UPDATE_METADATA
                for t in c.body.get("topic_states") or [] for p in t["partition_states"]}
    assert metadata == {("a", 0), ("b", 0), ("d", 0), ("e", 0)}
    # UpdateMetadata names broker 1's replicas on its failed directory offline (Kafka's
    # isReplicaOnline), though broker 1 itself is live
    offline = {(t["topic_name"], p["partition_index"]): p["offline_replicas"]
               for c in st.commands if c.api_key == ApiKey.UPDATE_METADATA
               for t in c.body.get("topic_states") or [] for p in t["partition_states"]}
    assert offline == {("a", 0): [1], ("b", 0): [1], ("d", 0): [1], ("e", 0): [1]}


def test_unclean_election_where_the_topic_allows_it():
    st = _offline(_cluster(), unclean={"d"})
    assert _written(st)[("d", 0)] == (10, 4, [4], 3)
    assert any("unclean leader election of d-0" in line for line in st.log)


def test_unclean_candidates_count_the_answers_replicas_offline():
    s = _cluster()
    event = ReplicasOffline(1, EPOCHS[1], OFFLINE)
    # d: its only ISR member is the offline replica, 4 is an online replica; the others have
    # an online ISR member (or, for e and f, one in the ISR besides 1)
    assert unclean_candidates(s.states, s.assignments, s.brokers, s.offline_replicas, event) == {"d"}


def test_a_move_with_an_offline_target_replica_does_not_complete_until_it_is_back():
    s = _cluster()
    f = ("f", 0)
    # Control: with every replica online, f's TRS (4, 1) is in its ISR: an ISR change completes it.
    control = engine.step(_cluster(), StatesRead({f: _s(2, (2, 1, 4), 5, zk=11)}), ControllerConfig())
    assert control.completed == [] and control.delta.tasks[f].phase is Phase.STOPPING
    s.apply(_offline(s).delta)
    held = engine.step(s, StatesRead({f: _s(2, (2, 1, 4), 5, zk=11)}), ControllerConfig())
    assert _written(held) == {} and f not in held.delta.tasks  # 1's copy is offline: not done
    s.apply(held.delta)
    # Broker 1 restarts (a new registration): its directories are back, O(1) forgotten; the
    # move completes (TRS leader 4, ISR shrunk to TRS) and d, led by nobody, gets 1 back.
    back = dict(s.brokers)
    back[1] = Broker(1, "h", 9001, epoch=500)
    st = engine.step(s, [BrokersRead(back), offline_check(None, registered={1})], ControllerConfig())
    assert st.delta.offline_replicas[1].__class__.__name__ == "_Deleted"
    written = _written(st)
    assert written[f] == (11, 4, [1, 4], 6) and st.delta.tasks[f].phase is Phase.STOPPING
    assert written[("d", 0)] == (11, 1, [1], 4)


def test_stale_and_repeated_answers_change_nothing():
    s = _cluster()
    assert _offline(s, epoch=EPOCHS[1] - 1).writes == []  # addressed to an earlier registration
    gone = _cluster()
    del gone.brokers[1]
    assert engine.step(gone, ReplicasOffline(1, EPOCHS[1], OFFLINE), ControllerConfig()).writes == []
    assert _offline(s, partitions={("x", 0), ("c", 0)}, broker=3).writes == []  # not its replicas (c: 1, 2)
    s.apply(_offline(s).delta)
    again = _offline(s)
    assert again.writes == [] and again.delta.offline_replicas == {}  # known already


def test_a_stopping_move_whose_leader_went_offline_is_checked_when_it_ends():
    s = _cluster()
    g = ("g", 0)
    s.assignments[g] = Assignment((1, 2, 3), (), (3,))
    s.topic_partitions["g"], s.topic_versions["g"] = (0,), 0
    s.states[g] = _s(1, (1, 2), 6)
    s.tasks[g] = Move(g, (1, 2), Phase.STOPPING, original=(3, 1, 2))
    st = _offline(s, partitions={g})
    assert _written(st) == {}  # a STOPPING move is left to end (broker_failure step 1)
    s.apply(st.delta)
    ended = engine.step(s, StopReplicaSent((g,)), ControllerConfig())
    assert ended.completed == [g]
    assert _written(ended) == {g: (10, 2, [2], 7)}  # its leader was offline: 2 leads
    # written after the finish deleted the move's record: a cut between them leaves no record
    # beside an ISR that lost a replica the completion counted in sync
    at = [op.path for op in ended.writes]
    assert at.index("/brokers/topics/g/partitions/0/state") > at.index("/admin/reassignments/g/0")


def test_checks_wait_for_a_failovers_resumed_states():
    s = _cluster()
    s.tasks[("e", 0)] = s.tasks[("e", 0)].with_changes(resend=True)
    del s.states[("e", 0)]
    st = _offline(s, partitions={("a", 0)})
    assert st.writes == [] and st.delta.offline_replicas == {1: frozenset({("a", 0)})} and len(st.delta.deferred) == 1


def test_offline_in_answer():
    body = {"error_code": 0, "partition_errors": [
        {"topic_name": "a", "partition_index": 0, "error_code": 56},
        {"topic_name": "b", "partition_index": 1, "error_code": 0},
        {"topic_name": "c", "partition_index": 2, "error_code": 11},
    ]}
    assert offline_in_answer(body) == {("a", 0)}
    assert offline_in_answer({**body, "error_code": 11}) == frozenset()  # refused as a whole
    assert offline_in_answer({"error_code": 0}) == frozenset()


def test_a_replica_created_again_in_an_online_directory_is_online_again():
    # Kafka's onlineReplicas: a NONE answer for a replica held offline (deleted, then created
    # again in an online directory) takes it out of O(b); d, led by nobody, gets it back as
    # leader, and f, whose TRS is in its ISR, completes.
    s = _cluster()
    s.apply(_offline(s).delta)
    st = engine.step(s, ReplicasOffline(1, EPOCHS[1], frozenset(), online=frozenset({("d", 0), ("f", 0), ("c", 0)})),
                     ControllerConfig())
    assert st.delta.offline_replicas == {1: OFFLINE - {("d", 0), ("f", 0)}}
    written = _written(st)
    assert written[("d", 0)] == (11, 1, [1], 4)
    assert written[("f", 0)] == (10, 4, [1, 4], 6) and st.delta.tasks[("f", 0)].phase is Phase.STOPPING
    assert set(written) == {("d", 0), ("f", 0)}


def test_online_in_answer():
    body = {"error_code": 0, "partition_errors": [
        {"topic_name": "a", "partition_index": 0, "error_code": 56},
        {"topic_name": "b", "partition_index": 1, "error_code": 0},
    ]}
    assert online_in_answer(body) == {("b", 1)}
    assert online_in_answer({**body, "error_code": 11}) == frozenset()
