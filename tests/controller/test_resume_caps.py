"""The cluster cap across a failover: recovery resumes every move it finds, so after a flush cut
between a finish and the start of a move in the slot that finish freed, the resumed moves can
hold more slots than the cap until some end. No copy may start past it meanwhile: a new target
for a resumed move that copies nothing (its added replicas in the ISR, a kept original replica
out of it, so it cannot complete) waits until the moves fit, instead of copying again in place
(controller.core.reassignment._Usage.past_cluster_cap; docs/DESIGN.md 4.1)."""

from __future__ import annotations

from controller.core import engine
from controller.core.config import ControllerConfig
from controller.core.events import RequestsRead, StatesRead, StopReplicaSent
from controller.core.task import Phase
from controller.shell.recovery import Snapshot, rebuild
from tests.controller.helpers import req, state
from znodes.values import Assignment, Broker

CFG = ControllerConfig(max_incoming_per_broker=1, max_outgoing_per_broker=2, max_cluster_moves=2)
BROKERS = {b: Broker(b, "127.0.0.1", 9090 + b, None, b) for b in range(1, 7)}
A, C, D = ("t", 0), ("t", 3), ("t", 1)


def copying(s) -> list:
    """Partitions adding a replica that is not in their ISR (Kafka's copies), from the state held."""
    return sorted(tp for tp, a in s.assignments.items() if any(b not in s.states[tp].isr for b in a.adding))


def test_a_resumed_move_copying_nothing_takes_its_new_target_only_once_the_moves_fit_the_cluster_cap():
    # The dead controller ran A and C at a cluster cap of 2, finished C (its target in the ISR)
    # and started D in the slot C freed; its flush stopped after D's record, before C's finish
    # landed. Before the next controller, C's kept original replica 1 left the ISR (C cannot
    # complete now) and a tool gave C a new target adding broker 4.
    snap = Snapshot(
        brokers=BROKERS,
        topics={"t": (7, {0: Assignment((1, 2, 3, 4), (1,), (4,)), 1: Assignment((5, 3, 4)),
                          3: Assignment((1, 2, 3, 5, 6), (2, 3), (5, 6))})},
        requests=RequestsRead(3, (req("t", 0, (1, 2, 3), (4, 2, 3)), req("t", 1, (2, 3, 4), (5, 3, 4)),
                                  req("t", 3, (1, 2, 4), (1, 5, 6)))),
        records={A: ((1, 2, 3), (4, 2, 3)), D: ((2, 3, 4), (5, 3, 4)), C: ((1, 2, 3), (1, 5, 6))},
        states={A: state(4, (4, 2, 3), zk_version=5), D: state(5, (5, 3, 4), zk_version=5),
                C: state(5, (5, 6, 2, 3), zk_version=5)},
        record_counts={"t": 3},
    )
    recovered = rebuild(snap, controller_id=102, epoch=9)
    s = recovered.state
    step = engine.step(s, recovered.events, CFG)
    s.apply(step.delta)
    # Three moves hold slots, two copy (A and D, whose record alone had landed); C keeps its
    # target and waits with the new one.
    assert copying(s) == [A, D]
    assert (s.tasks[C].phase, s.tasks[C].target, s.tasks[C].next_target) == (Phase.REPLICATING, (1, 2, 3), (1, 2, 4))
    assert any("t-3: new target [1, 2, 4] waits for a free slot in the cluster" in line for line in step.log)
    # A's copy joins its ISR: it completes, its removed replica is stopped, and it finishes.
    step = engine.step(s, [StatesRead({A: state(4, (4, 2, 3, 1), zk_version=6, leader_epoch=1)})], CFG)
    s.apply(step.delta)
    assert s.tasks[A].phase is Phase.STOPPING and copying(s) == [D]
    step = engine.step(s, [StopReplicaSent(frozenset({A}))], CFG)
    s.apply(step.delta)
    # Two moves hold slots now: C takes its new target in place and copies beside D.
    assert A not in s.tasks and s.assignments[A] == Assignment((1, 2, 3))
    assert (s.tasks[C].target, s.tasks[C].next_target) == ((1, 2, 4), None)
    assert copying(s) == [D, C]
