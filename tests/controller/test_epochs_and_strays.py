"""Issue 16 items 1 and 2 in the pure engine: leader epochs (docs/DESIGN.md section 4, "Leader
epochs"), an override's concurrency caps (engine step 4b) and strays deleted when a broker
registers (engine step 9)."""

from __future__ import annotations
from controller.core.config import ControllerConfig
from controller.core.events import BrokersRead, ReplicasHosted, RequestsRead, StatesRead, StopReplicaSent
from controller.core.task import Phase
from protocol import ApiKey
from tests.controller.helpers import body_partitions, cluster, req, state
from tests.controller.test_engine import by_kind, run
from znodes.values import Broker

TP = ("t", 0)


def test_an_override_waits_for_a_slot_on_the_brokers_it_adds():
    """The per-broker caps hold for an override's new copies as for a start: (4,2,3) -> (5,2,3)
    while broker 5 already takes its one incoming copy waits, and is made once that slot frees."""
    s = cluster(topics={"t": {0: (1, 2, 3), 1: (1, 2, 3)}})
    config = ControllerConfig(max_incoming_per_broker=1)
    run(s, RequestsRead(0, (req("t", 0, (4, 2, 3)), req("t", 1, (5, 2, 3)))), config)
    run(s, StatesRead({TP: state(1, (1, 2, 3)), ("t", 1): state(1, (1, 2, 3))}), config)
    assert s.tasks[TP].phase is s.tasks[("t", 1)].phase is Phase.REPLICATING

    step = run(s, RequestsRead(2, (req("t", 0, (5, 2, 3), (1, 2, 3)), req("t", 1, (5, 2, 3), (1, 2, 3)))), config)
    move = s.tasks[TP]
    assert (move.target, move.next_target) == ((4, 2, 3), (5, 2, 3))  # not overridden yet
    assert s.assignments[TP].adding == (4,) and not by_kind(step, ApiKey.LEADER_AND_ISR)
    assert any("waits for a free slot on broker(s) [5]" in line for line in step.log)

    # t-1 completes: broker 5's slot frees and the override is made in that same step
    run(s, StatesRead({("t", 1): state(1, (1, 2, 3, 5), zk_version=2, leader_epoch=1)}), config)
    step = run(s, StopReplicaSent((("t", 1),)), config)
    move = s.tasks[TP]
    assert (move.target, move.next_target, move.phase) == ((5, 2, 3), None, Phase.REPLICATING)
    assert s.assignments[TP].adding == (5,)
    assert body_partitions(by_kind(step, ApiKey.LEADER_AND_ISR)[5])[TP]["is_new"] is True
    assert [c.broker_id for c in step.commands if c.api_key == ApiKey.STOP_REPLICA] == [4]  # 4 not in sync: deleted


def test_an_override_within_the_caps_is_made_at_once():
    s = cluster(topics={"t": {0: (1, 2, 3)}})
    config = ControllerConfig(max_incoming_per_broker=1)
    run(s, RequestsRead(0, (req("t", 0, (4, 2, 3)),)), config)
    run(s, StatesRead({TP: state(1, (1, 2, 3))}), config)
    run(s, RequestsRead(1, (req("t", 0, (5, 2, 3), (1, 2, 3)),)), config)  # 4's slot is its own
    assert s.tasks[TP].target == (5, 2, 3) and s.tasks[TP].next_target is None


def registered(s, back=(), gone=()):
    brokers = {b: info for b, info in s.brokers.items() if b not in gone}
    for b in back:
        brokers[b] = Broker(b, "127.0.0.1", 9090 + b, None, 5000 + b)
    return BrokersRead(brokers)


def test_a_registering_broker_is_asked_what_it_hosts_after_its_leader_and_isr():
    s = cluster(topics={"t": {0: (1, 2, 3)}})
    run(s, RequestsRead(0, (req("t", 0, (4, 2, 3)),)))
    run(s, StatesRead({TP: state(1, (1, 2, 3))}))
    step = run(s, registered(s, back=(4,)))
    kinds = [c.api_key for c in step.commands if c.broker_id == 4]
    assert kinds.index(ApiKey.LEADER_AND_ISR) < kinds.index(ApiKey.DESCRIBE_LOG_DIRS)
    (describe,) = [c for c in step.commands if c.api_key == ApiKey.DESCRIBE_LOG_DIRS]
    assert describe.body == {"topics": None}  # every partition it hosts


def test_strays_of_a_registering_broker_are_deleted_and_nothing_else():
    """Broker 6 was down while t-0 completed away from it, t-1 rolled back its added replica
    and t-2 is being moved to it; it also hosts t-3's replica (assigned to it), a partition of
    a topic this controller does not know yet, and a replica in t-4's ISR."""
    s = cluster(topics={"t": {0: (1, 2, 3), 1: (1, 2, 3), 2: (1, 2, 3), 3: (6, 2, 3), 4: (1, 2, 3)}})
    s.states[("t", 4)] = state(1, (1, 2, 3, 6))
    run(s, RequestsRead(0, (req("t", 2, (6, 2, 3)),)))
    assert s.tasks[("t", 2)].phase is Phase.LOADING  # its state is being read: not started yet
    hosted = frozenset({("t", 0), ("t", 1), ("t", 2), ("t", 3), ("t", 4), ("new", 0)})
    step = run(s, ReplicasHosted(6, hosted))
    stops = by_kind(step, ApiKey.STOP_REPLICA)
    assert list(stops) == [6]
    assert sorted(body_partitions(stops[6])) == [("t", 0), ("t", 1)]
    assert stops[6].partitions == ()  # no move waits for these
    assert sum("not assigned to it: deleting it" in line for line in step.log) == 2
    assert step.writes == []


def test_the_answer_of_a_broker_gone_again_is_ignored():
    s = cluster(topics={"t": {0: (1, 2, 3)}}, brokers=range(1, 6))
    step = run(s, ReplicasHosted(6, frozenset({TP})))
    assert step.commands == []


def test_an_answer_with_a_failed_log_directory_still_has_its_strays_but_nothing_missing():
    """Broker 6's DescribeLogDirs answer lists only its healthy directories (one failed): t-0's
    replica there, left from a move completed away from 6 while it was down, is a stray still;
    t-3, assigned to 6 and absent from the answer, may be on the failed directory, so it is not
    sent LeaderAndIsr as missing - while the same answer complete does send it."""
    s = cluster(topics={"t": {0: (1, 2, 3), 3: (6, 2, 3)}})
    s.states[("t", 3)] = state(6, (6, 2, 3))
    step = run(s, ReplicasHosted(6, frozenset({("t", 0)}), complete=False))
    stops = by_kind(step, ApiKey.STOP_REPLICA)
    assert list(stops) == [6] and sorted(body_partitions(stops[6])) == [("t", 0)]
    assert not by_kind(step, ApiKey.LEADER_AND_ISR)
    assert any("a log directory failed" in line for line in step.log)

    step = run(s, ReplicasHosted(6, frozenset()))  # complete: t-3 is missing from broker 6
    told = by_kind(step, ApiKey.LEADER_AND_ISR)
    assert list(told) == [6] and body_partitions(told[6])[("t", 3)]["is_new"] is True


def test_an_override_waits_for_the_outgoing_slot_of_a_replica_it_drops():
    """A replica the old target added and the new one drops, in the ISR, stays until the new
    target is in sync and then goes with RR: it is one more outgoing copy of its broker, under the
    cap like an original replica's (chaos seed 2811 found broker 6 with five outgoing moves at a
    cap of four: an override had dropped 6 while four other moves removed replicas from it)."""
    s = cluster(topics={"t": {0: (1, 2, 3), 1: (4, 5, 6)}})
    config = ControllerConfig(max_outgoing_per_broker=1)
    run(s, RequestsRead(0, (req("t", 0, (4, 5, 3)), req("t", 1, (1, 5, 6)))), config)
    run(s, StatesRead({TP: state(1, (1, 2, 3)), ("t", 1): state(4, (4, 5, 6))}), config)
    assert s.tasks[TP].phase is s.tasks[("t", 1)].phase is Phase.REPLICATING  # t-1 takes 4's outgoing slot
    run(s, StatesRead({TP: state(1, (1, 2, 3, 4), zk_version=2, leader_epoch=1)}), config)  # 4 in sync, 5 not

    step = run(s, RequestsRead(2, (req("t", 0, (6, 2, 3), (1, 2, 3)), req("t", 1, (1, 5, 6), (4, 5, 6)))), config)
    move = s.tasks[TP]
    assert (move.target, move.next_target) == ((4, 5, 3), (6, 2, 3))  # 4 would leave past its cap: it waits
    assert any("waits for a free slot on broker(s) [4]" in line for line in step.log)

    # t-1 completes and finishes: 4's outgoing slot frees and the override is made
    run(s, StatesRead({("t", 1): state(4, (4, 5, 6, 1), zk_version=2, leader_epoch=1)}), config)
    run(s, StopReplicaSent((("t", 1),)), config)
    move = s.tasks[TP]
    assert (move.target, move.next_target, move.dropped) == ((6, 2, 3), None, (4,))
    assert s.assignments[TP].removing == (1, 4)
