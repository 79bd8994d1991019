"""Replica states at election (controller.core.engine step 8b, Kafka's
``replicaStateMachine.startup``): the chunks of a (re)load's full send give every live replica
LeaderAndIsr with the state held, leader epoch unchanged, where the step says nothing else of
the partition to that broker; a resumed move and a topic being deleted are left to their own
requests. Then the case it is for, on the ZooKeeper twin with simulated brokers: a broker that
restarts while no controller is active registers before the next election and is told its
role only by this."""

from __future__ import annotations

import logging

from controller.core import engine, full_metadata
from controller.core.config import ControllerConfig
from controller.core.events import MetadataRead, offline_check
from controller.core.state import ClusterState
from controller.core.task import Move, Phase
from controller.core.topic_deletion import TopicDeletion
from protocol import ApiKey
from sim.replica import Role
from tests.controller.fixtures import harness_fixture
from tests.controller.harness import Harness
from tests.controller.helpers import leader_and_isr_sent
from znodes import paths
from znodes.values import Assignment, Broker, LeaderIsr

A, B, C, D, E, F = (("t", p) for p in range(6))


def _state() -> ClusterState:
    """The engine docstring's step 8b table (a-d), plus e: its leader 4 is down (step 6 of
    controller.core.broker_failure elects), f: 3 said it does not host its replica (step 9b)."""
    s = ClusterState(controller_id=101, epoch=9, brokers={b: Broker(b, "h", 9000 + b, None, 50 + b) for b in (1, 2, 3)})
    s.assignments = {
        A: Assignment((1, 2, 3)),
        B: Assignment((3, 1)),
        C: Assignment((2, 4)),
        D: Assignment((1, 2, 3), adding=(2,), removing=(3,)),
        E: Assignment((4, 1)),
        F: Assignment((2, 3)),
    }
    s.topic_partitions, s.topic_versions = {"t": tuple(range(6))}, {"t": 0}
    s.tasks[D] = Move(D, (1, 2), Phase.REPLICATING, original=(1, 3))
    s.states[D] = LeaderIsr(1, 6, 9, (1, 3), 13)  # the resumed move's new epoch (Resume)
    s.unhosted[F] = frozenset({3})
    return s


READ = {
    A: LeaderIsr(1, 4, 8, (1, 2), 10),
    B: LeaderIsr(3, 2, 8, (3, 1), 11),
    C: LeaderIsr(2, 0, 8, (2,), 12),
    D: LeaderIsr(1, 5, 8, (1, 3), 12),
    E: LeaderIsr(4, 1, 8, (4, 1), 14),
    F: LeaderIsr(2, 3, 8, (2, 3), 15),
}


def _lai(st: engine.Step) -> dict:
    """{partition: {broker: (leader, leader epoch, isr, replicas, is_new)}}"""
    return leader_and_isr_sent(st, ("leader", "leader_epoch", "isr", "replicas", "is_new"))


def test_a_reload_chunk_gives_every_live_replica_its_state_held():
    s = _state()
    # As the shell feeds a chunk: the states read, then the broker-failure check of them.
    st = engine.step(s, [MetadataRead(READ, leader_and_isr=True), offline_check(tuple(READ))], ControllerConfig())
    lai = _lai(st)
    # a, b, c: the state held, leader epoch unchanged, to every live replica (4 is down)
    assert lai[A] == {b: (1, 4, [1, 2], [1, 2, 3], False) for b in (1, 2, 3)}
    assert lai[B] == {b: (3, 2, [3, 1], [3, 1], False) for b in (3, 1)}
    assert lai[C] == {2: (2, 0, [2], [2, 4], False)}
    # d: a resumed move - Resume announced it with its own RS, AR and RR: nothing more here
    assert D not in lai
    # e: its leader is down, so step 6 elects 1 with epoch + 1: that one, not the old state
    assert lai[E] == {1: (1, 2, [1], [4, 1], False)}
    # f: step 9b's is_new to 3, the state held to 2
    assert lai[F] == {2: (2, 3, [2, 3], [2, 3], False), 3: (2, 3, [2, 3], [2, 3], True)}
    # one request per broker; the only write is e's election (no epoch bumped for a resend)
    assert sorted(c.broker_id for c in st.commands if c.api_key == ApiKey.LEADER_AND_ISR) == [1, 2, 3]
    assert [op.path for op in st.writes] == [paths.partition_state(*E)]


def test_only_a_reloads_send_carries_leader_and_isr():
    # A registered broker's send (step 7 of broker_failure tells it) and a new topic's: none.
    for read in (MetadataRead(READ), MetadataRead(READ, brokers=(3,))):
        assert _lai(engine.step(_state(), [read], ControllerConfig())) == {F: {3: (2, 3, [2, 3], [2, 3], True)}}


def test_a_topic_being_deleted_is_left_to_its_deletion():
    s = _state()
    del s.tasks[D], s.unhosted[F]  # nothing to cancel or create first: the deletion starts now
    s.assignments[D] = Assignment((1, 3))
    s.deleting["t"] = TopicDeletion()
    st = engine.step(s, [MetadataRead({A: READ[A]}, leader_and_isr=True)], ControllerConfig())
    assert _lai(st) == {}


def test_the_planner_marks_a_reloads_chunks():
    planner = full_metadata.Planner()
    tps = [("t", p) for p in range(full_metadata.CHUNK + 1)]
    item = planner.everyone(tps)
    chunk, rest = planner.take(item)
    assert item.leader_and_isr and rest.leader_and_isr and rest.offset == full_metadata.CHUNK
    assert not planner.brokers((1,), tps).leader_and_isr and not planner.new_partitions(tps).leader_and_isr


# ---- a broker restarted while no controller is active ----------------------------------------


# 7 partitions: three chunks
h = harness_fixture("t:4:3:64KiB", "u:3:2:64KiB", setup=lambda mp: mp.setattr(full_metadata, "CHUNK", 3))


def _roles(h: Harness, broker_id: int) -> dict:
    """Per partition of ``broker_id``: (its role, the leader it knows, its leader epoch, in the ISR
    of the state znode), and what the state znode says: (leader, leader epoch)."""
    out = {}
    for replica in h.cluster.broker(broker_id).core.replicas():
        state = h.json(paths.partition_state(replica.topic, replica.partition))
        out[replica.key] = (
            (replica.role, replica.leader, replica.leader_epoch, broker_id in state["isr"]),
            (state["leader"], state["leader_epoch"]),
        )
    return out


def _following(h: Harness, broker_id: int) -> bool:
    """Every replica of ``broker_id`` leads or follows as its state znode says, at its leader
    epoch, and is in its ISR."""
    for (role, leader, epoch, in_isr), (want_leader, want_epoch) in _roles(h, broker_id).values():
        want_role = Role.LEADER if want_leader == broker_id else Role.FOLLOWER
        if (role, leader, epoch, in_isr) != (want_role, want_leader, want_epoch, True):
            return False
    return True


async def test_a_broker_restarted_while_no_controller_is_active_follows_after_the_election(h, caplog):
    c1 = await h.start_controller(101)
    for _ in range(4):
        await h.tick()
    assert _following(h, 3)
    await c1.stop()  # its pod restarts: no active controller now
    await h.settle()
    assert h.server.exists(paths.CONTROLLER) is None
    await h.cluster.restart_broker(3)  # registers again before the next election
    for _ in range(20):  # 5 s, past replica_lag_time_max: the leaders drop the idle 3
        await h.tick()
    roles = _roles(h, 3)  # it leads some of its partitions, follows in the others
    assert {leader == 3 for _, (leader, _) in roles.values()} == {True, False}, roles
    assert all(r[0][0] is Role.NONE for r in roles.values())  # remembers no role
    assert not all(r[0][3] for r in roles.values()), roles  # out of the ISRs it followed in
    with caplog.at_level(logging.INFO, logger="reassignd.controller"):
        await h.start_controller(102)
        for _ in range(20):
            await h.tick()
            if _following(h, 3):
                break
    assert _following(h, 3), _roles(h, 3)
    assert h.cluster.broker(3).core.metadata.controller_id == 102
    assert not h.violations
    # The other replicas refused the resends (STALE_CONTROLLER_EPOCH: they hold those epochs);
    # the dispatcher takes that as expected: not a line, not a retry.
    answered = [r.getMessage() for r in caplog.records if "answered" in r.getMessage()]
    assert answered == []
    told = [(broker, t["topic_name"], ps["partition_index"], ps["leader_epoch"])
            for broker, api_key, body in h.sent if api_key == ApiKey.LEADER_AND_ISR and body["controller_epoch"] == 2
            for t in body["topic_states"] for ps in t["partition_states"]]
    # every replica told once, at the epoch it holds: nothing retried, nothing bumped
    assert len(told) == len(set(told)) == sum(len(r) for r in h.assignments.values())
