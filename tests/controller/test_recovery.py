"""Failover recovery: every row of the table in controller.shell.recovery, and a crash after every
single ZooKeeper op of a real run (the flush cut at any op boundary), finished by a new
controller with the simulated brokers."""

from __future__ import annotations

import json

import pytest

from controller.core import engine
from controller.core.config import ControllerConfig
from controller.core.events import RequestsRead, Resume, StopReplicaSent
from controller.core.task import Phase
from controller.shell.recovery import Snapshot, rebuild
from protocol import ApiKey
from tests.controller.harness import Harness
from tests.controller.helpers import body_partitions, loads, req, state
from znodes import paths
from znodes.api import Create, Delete, SetData
from znodes.values import Assignment, Broker

TP = ("t", 0)
CFG = ControllerConfig()
BROKERS = {b: Broker(b, "127.0.0.1", 9090 + b, None, b) for b in range(1, 8)}


def snapshot(assignment: Assignment, *, record="default", requests=None, st=None, counts=None) -> Snapshot:
    records = {} if record is None else {TP: ((4, 5, 6), (1, 2, 3)) if record == "default" else record}
    return Snapshot(
        brokers=BROKERS,
        topics={"t": (7, {0: assignment})},
        requests=requests or RequestsRead(3, (req("t", 0, (4, 5, 6), (1, 2, 3)),)),
        records=records,
        states={TP: st or state(1, (1, 2, 3), zk_version=5)},
        record_counts=counts if counts is not None else ({"t": 1} if records else {}),
    )


def resume(snap: Snapshot):
    recovered = rebuild(snap, controller_id=102, epoch=9)
    s = recovered.state
    step = engine.step(s, recovered.events, CFG)
    s.apply(step.delta)
    return s, step, recovered


def test_started_and_replicating_resumes_with_a_new_leader_epoch_to_every_replica():
    s, step, _ = resume(snapshot(Assignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3))))
    assert s.tasks[TP].phase is Phase.REPLICATING and s.tasks[TP].original == (1, 2, 3)
    # The one write: the state with leader epoch + 1, conditional on the zkVersion read. The
    # previous controller may have died after its topic write and before its state write or its
    # LeaderAndIsr, so brokers may hold epoch 0 with the old replica set and would refuse the
    # state resent as is: the new RS would never reach the leader (found by the stateful suite).
    assert [(w.path, w.version) for w in step.writes] == [(paths.partition_state("t", 0), 5)]
    assert json.loads(step.writes[0].data)["leader_epoch"] == 1
    assert sorted(c.broker_id for c in step.commands if c.api_key == ApiKey.LEADER_AND_ISR) == [1, 2, 3, 4, 5, 6]
    assert all(c.body["controller_epoch"] == 9 for c in step.commands if c.api_key != ApiKey.DESCRIBE_LOG_DIRS)
    entries = [body_partitions(c)[TP] for c in step.commands if c.api_key == ApiKey.LEADER_AND_ISR]
    assert {(e["leader_epoch"], tuple(e["replicas"])) for e in entries} == {(1, (4, 5, 6, 1, 2, 3))}


def test_record_written_but_topic_not_yet_gets_the_topic_written():
    """No broker may have heard of the RS recovery writes (the start's state write may not
    have landed either): it goes out with a new leader epoch, written first."""
    s, step, _ = resume(snapshot(Assignment((1, 2, 3))))
    assert s.tasks[TP].phase is Phase.REPLICATING and not s.tasks[TP].new_epoch
    bump, topic = step.writes
    assert topic.path == "/brokers/topics/t" and topic.version == 7
    assert loads(topic.data)["partitions"] == {"0": [4, 5, 6, 1, 2, 3]}
    assert loads(topic.data)["adding_replicas"] == {"0": [4, 5, 6]}
    assert bump == SetData("/brokers/topics/t/partitions/0/state", bump.data, 5)
    assert loads(bump.data)["leader_epoch"] == 1
    entries = [body_partitions(c)[TP] for c in step.commands if c.api_key == ApiKey.LEADER_AND_ISR]
    assert len(entries) == 6 and {(e["leader_epoch"], e["zk_version"]) for e in entries} == {(1, 6)}


def test_topic_already_at_target_but_record_left_is_finished_not_restarted():
    s, step, _ = resume(snapshot(Assignment((4, 5, 6)), st=state(4, (4, 5, 6), zk_version=6, leader_epoch=2)))
    assert s.tasks[TP].phase is Phase.STOPPING
    # A new leader epoch, as for every resumed move (the dead controller may have died
    # before its state write or its LeaderAndIsr): only the state znode is written.
    assert [(w.path, w.version) for w in step.writes] == [("/brokers/topics/t/partitions/0/state", 6)]
    assert loads(step.writes[0].data)["leader_epoch"] == 3
    entries = [body_partitions(c)[TP] for c in step.commands if c.api_key == ApiKey.LEADER_AND_ISR]
    assert {(e["leader_epoch"], tuple(e["replicas"])) for e in entries} == {(3, (4, 5, 6))}
    stops = [c for c in step.commands if c.api_key == ApiKey.STOP_REPLICA]
    assert sorted(c.broker_id for c in stops) == [1, 2, 3]
    step = engine.step(s, [StopReplicaSent((TP,))], CFG)
    assert [type(w).__name__ + " " + w.path for w in step.writes] == [
        "Delete /admin/reassignments/t/0",
        "Delete /admin/reassignments/t",
        "Delete /admin/reassign_partitions",
    ]


def test_finished_move_whose_entry_was_not_dropped_is_dropped_as_done():
    s, step, _ = resume(snapshot(Assignment((4, 5, 6)), record=None))
    assert s.tasks == {}
    assert step.writes == [Delete("/admin/reassign_partitions", 3)]
    assert step.finished


def test_a_move_without_record_is_adopted_and_its_record_created():
    s, step, recovered = resume(snapshot(Assignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3)), record=None))
    assert any("adopting" in line for line in recovered.log)
    assert s.tasks[TP].phase is Phase.REPLICATING
    assert step.writes[:2] == [Create("/admin/reassignments/t"), Create("/admin/reassignments/t/0", step.writes[1].data)]
    assert loads(step.writes[1].data) == {"version": 1, "replicas": [4, 5, 6], "original_replicas": [1, 2, 3]}


def test_an_adopted_move_is_announced_with_a_new_leader_epoch():
    """Another tool wrote the topic znode's RS: no broker has heard of it, so a resend of the
    state as is would be refused by every replica holding its leader epoch."""
    s, step, _ = resume(snapshot(Assignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3)), record=None))
    bump = next(w for w in step.writes if w.path == "/brokers/topics/t/partitions/0/state")
    assert bump.version == 5 and loads(bump.data)["leader_epoch"] == 1
    entries = [body_partitions(c)[TP] for c in step.commands if c.api_key == ApiKey.LEADER_AND_ISR]
    assert len(entries) == 6 and {e["leader_epoch"] for e in entries} == {1}


def test_stale_and_garbled_records():
    # a record of a partition that does not exist is deleted
    snap = snapshot(Assignment((1, 2, 3)), requests=RequestsRead(None, None))
    snap.records = {("gone", 0): ((1,), (2,))}
    snap.record_counts = {"gone": 1}
    s, step, _ = resume(snap)
    assert step.writes == [Delete("/admin/reassignments/gone/0"), Delete("/admin/reassignments/gone")]
    assert s.record_counts == {}
    # a garbled record of a partition that is moving is rewritten from the topic znode
    snap = snapshot(Assignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3)), record=None)
    snap.records = {TP: None}
    snap.record_counts = {"t": 1}
    s, step, _ = resume(snap)
    assert step.writes[0] == SetData("/admin/reassignments/t/0", step.writes[0].data)
    # an empty parent left by a flush cut short is removed
    snap = snapshot(Assignment((1, 2, 3)), record=None, requests=RequestsRead(None, None), counts={"t": 0})
    s, step, _ = resume(snap)
    assert step.writes == [Delete("/admin/reassignments/t")]


def test_nothing_to_resume_means_throttle_removal():
    _, step, _ = resume(snapshot(Assignment((1, 2, 3)), record=None, requests=RequestsRead(None, None)))
    assert step.finished and step.writes == []


def test_a_running_move_with_a_new_target_in_the_znode_takes_it_in_place():
    snap = snapshot(
        Assignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3)),
        requests=RequestsRead(3, (req("t", 0, (1, 5, 6), (1, 2, 3)),)),
    )
    s, step, _ = resume(snap)
    move = s.tasks[TP]
    assert (move.target, move.original, move.dropped, move.next_target) == ((1, 5, 6), (1, 2, 3), (), None)
    assert s.assignments[TP] == Assignment((1, 5, 6, 2, 3), (5, 6), (2, 3))
    record = next(w for w in step.writes if w.path == paths.reassignment("t", 0))
    assert loads(record.data)["replicas"] == [1, 5, 6]
    assert [c.broker_id for c in step.commands if c.api_key == ApiKey.STOP_REPLICA] == [4]  # out of the ISR


def test_a_resumed_move_whose_target_is_in_sync_finishes_before_taking_its_new_target():
    """Only its finish was left (cut short, maybe beside a move started in the slot it freed):
    it completes and the new target follows as a pending move held to the caps, as under the
    controller that died, instead of copying again in place past the cluster cap (seed
    1600000019 shard 3 at tight caps: three moves copying at a cap of two)."""
    snap = snapshot(
        Assignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3)),
        requests=RequestsRead(3, (req("t", 0, (1, 5, 6), (1, 2, 3)),)),
        st=state(4, (4, 5, 6, 1, 2, 3), zk_version=5),
    )
    s, step, _ = resume(snap)
    move = s.tasks[TP]
    assert (move.phase, move.target, move.next_target) == (Phase.STOPPING, (4, 5, 6), (1, 5, 6))
    # Resume's new leader epoch, then the completion's ISR shrink to the target
    written = [loads(w.data) for w in step.writes if w.path == paths.partition_state("t", 0)]
    assert [(w["leader_epoch"], w["isr"]) for w in written] == [(1, [4, 5, 6, 1, 2, 3]), (2, [4, 5, 6])]
    assert paths.reassignment("t", 0) not in {w.path for w in step.writes}  # the record keeps (4,5,6)
    assert sorted(c.broker_id for c in step.commands if c.api_key == ApiKey.STOP_REPLICA) == [1, 2, 3]
    step = engine.step(s, [StopReplicaSent(frozenset({TP}))], CFG)
    s.apply(step.delta)
    # finished on (4,5,6); the new target then took a slot as a move of its own (its state read first)
    assert s.assignments[TP] == Assignment((4, 5, 6))
    assert (s.tasks[TP].phase, s.tasks[TP].target) == (Phase.LOADING, (1, 5, 6))


@pytest.mark.parametrize(
    "topic",
    [
        # the override's record landed, its topic znode write did not: RS still (4,5,6) + ORS
        Assignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3)),
        # both landed: RS = (4,6,7) + ORS + the dropped 5
        Assignment((4, 6, 7, 1, 2, 3, 5), (4, 6, 7), (1, 2, 3, 5)),
    ],
)
def test_an_overridden_move_resumes_with_what_its_old_target_added(topic):
    """The dropped 5 in the ISR stays in RR until the move completes."""
    snap = snapshot(
        topic,
        record=((4, 6, 7), (1, 2, 3)),
        requests=RequestsRead(3, (req("t", 0, (4, 6, 7), (1, 2, 3)),)),
        st=state(1, (1, 2, 3, 5), zk_version=5),
    )
    s, step, _ = resume(snap)
    move = s.tasks[TP]
    assert (move.phase, move.target, move.original, move.dropped) == (Phase.REPLICATING, (4, 6, 7), (1, 2, 3), (5,))
    assert s.assignments[TP] == Assignment((4, 6, 7, 1, 2, 3, 5), (4, 6, 7), (1, 2, 3, 5))
    assert sorted(c.broker_id for c in step.commands if c.api_key == ApiKey.LEADER_AND_ISR) == [1, 2, 3, 4, 5, 6, 7]
    assert not any(c.api_key == ApiKey.STOP_REPLICA for c in step.commands)


@pytest.mark.parametrize("topic", [
    Assignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3)),
    Assignment((4, 6, 7, 1, 2, 3, 5), (4, 6, 7), (1, 2, 3, 5)),
])
def test_an_overridden_move_resumes_without_a_dropped_replica_out_of_the_isr(topic):
    """The dropped 5 is not in the ISR (the override's deletion may not have gone out before
    the crash): it is deleted now, and the RS without it goes out with a new leader epoch."""
    snap = snapshot(
        topic,
        record=((4, 6, 7), (1, 2, 3)),
        requests=RequestsRead(3, (req("t", 0, (4, 6, 7), (1, 2, 3)),)),
    )
    s, step, _ = resume(snap)
    move = s.tasks[TP]
    assert (move.phase, move.target, move.original, move.dropped) == (Phase.REPLICATING, (4, 6, 7), (1, 2, 3), ())
    assert s.assignments[TP] == Assignment((4, 6, 7, 1, 2, 3), (4, 6, 7), (1, 2, 3))
    assert [c.broker_id for c in step.commands if c.api_key == ApiKey.STOP_REPLICA] == [5]
    assert s.states[TP].leader_epoch == 1
    assert {body_partitions(c)[TP]["leader_epoch"] for c in step.commands if c.api_key == ApiKey.LEADER_AND_ISR} == {1}


def test_an_override_that_adds_again_what_an_earlier_one_dropped_resumes_with_the_record_ors():
    """ORS (5,3,4) -> (1,2,3) -> (2,3,4) (1 dropped) -> (1,3,4): the last record landed, its
    topic write did not. The topic znode's RS - AR is (3,4,5,1): ORS plus the dropped 1, which
    the new target takes back."""
    snap = snapshot(
        Assignment((2, 3, 4, 5, 1), (2,), (5, 1)),
        record=((1, 3, 4), (5, 3, 4)),
        requests=RequestsRead(3, (req("t", 0, (1, 3, 4), (5, 3, 4)),)),
    )
    s, _, _ = resume(snap)
    move = s.tasks[TP]
    assert (move.original, move.adding, move.dropped) == ((5, 3, 4), (1,), (2,))
    assert s.assignments[TP] == Assignment((1, 3, 4, 5, 2), (1,), (5, 2))


def test_a_rollback_of_an_overridden_move_resumes_deleting_what_every_target_added():
    snap = snapshot(
        Assignment((1, 2, 3, 4, 6, 7, 5), (), (4, 6, 7, 5)),
        record=((4, 6, 7), (1, 2, 3)),
        requests=RequestsRead(3, (req("t", 0, (4, 6, 7), (1, 2, 3)),)),
    )
    s, step, _ = resume(snap)
    assert s.tasks[TP].phase is Phase.CANCELLING and s.tasks[TP].dropped == (5,)
    assert sorted(c.broker_id for c in step.commands if c.api_key == ApiKey.STOP_REPLICA) == [4, 5, 6, 7]


# ---- crash after every op of a real run ------------------------------------------------------

TARGETS = {("t", 0): [4, 5, 6], ("t", 1): [1, 5, 2], ("t", 2): [6, 1, 3]}


OVERRIDES = {("t", 0): [4, 6, 1], ("t", 1): [3, 4, 2]}


async def crash_run(crash_after: int | None, overrides: dict | None = None) -> tuple[int, bool]:
    """TARGETS submitted; with ``overrides``, two of the moves, once started, get new targets
    (KIP-455) in the znode."""
    h = Harness(topics=("t:3:3:64KiB",))
    await h.start()
    try:
        first = await h.start_controller(101, crash_after=crash_after)
        await h.submit(TARGETS)  # the moves start (no time passes, so none completes)
        if overrides:
            data, stat = await h.admin.get("/admin/reassign_partitions")
            body = loads(data)
            for entry in body["partitions"]:
                entry["replicas"] = overrides.get((entry["topic"], entry["partition"]), entry["replicas"])
            h.requested.update(overrides)
            await h.admin.set("/admin/reassign_partitions", json.dumps(body).encode(), stat.version)
            await h.settle()
            if crash_after is None:  # taken in place, not queued behind the first targets
                for (t, p), target in overrides.items():
                    assert h.json(f"/admin/reassignments/{t}/{p}")["replicas"] == target
        while h.busy() and first.alive:
            await h.tick()
        if first.store.crashed:
            await h.start_controller(102)
        await h.run_until_quiet()
        h.check_invariants({**TARGETS, **(overrides or {})})
        return first.store.ops_applied, first.store.crashed
    finally:
        await h.close()


@pytest.mark.parametrize("overrides", [None, OVERRIDES], ids=["plain", "overridden"])
async def test_a_crash_after_any_zookeeper_op_is_finished_by_the_next_controller(overrides):
    total, crashed = await crash_run(None, overrides)
    assert not crashed and total > 10
    for k in range(total + 1):
        applied, crashed = await crash_run(k, overrides)
        assert crashed == (k < total) and applied == min(k, total), k


@pytest.mark.parametrize("k", [0, 3])
async def test_the_new_controller_has_a_newer_epoch(k):
    h = Harness(topics=("t:3:3:64KiB",))
    await h.start()
    try:
        first = await h.start_controller(101, crash_after=k)
        await h.submit(TARGETS)
        while first.alive:
            await h.tick()
        second = await h.start_controller(102)
        assert second.active is not None and second.active.epoch == 2
        await h.run_until_quiet()
        h.check_invariants(TARGETS)
    finally:
        await h.close()


async def test_an_override_cut_after_its_record_resumes_with_the_record_s_target():
    """A KIP-455 override writes its record, then the state and the topic znode: cut in
    between, the topic znode still shows the older target while the request entry (rewritten
    by the client since) carries original_replicas. Recovery must take TRS from the record, not
    from the topic znode (found by the stateful suite: the move completed to the topic znode's
    older target with the record's newer one still in ZooKeeper)."""
    from controller.shell.recovery import load
    from znodes.twin import TwinServer

    server = TwinServer()
    store = server.connect()
    for path in ("/brokers", "/brokers/ids", "/brokers/topics", "/admin", "/admin/reassignments",
                 "/admin/reassignments/t"):
        await store.create(path, b"")
    # ORS (4,2,3); the first target (1,2,3) is in the topic znode, the override to (1,2,4) only
    # in the record; the client has since asked for (1,2,3) again.
    await store.create(paths.topic("t"), json.dumps({"version": 2, "partitions": {"0": [1, 2, 3, 4]},
                                                      "adding_replicas": {"0": [1]}, "removing_replicas": {"0": [4]}}).encode())
    await store.create(paths.reassignment("t", 0), json.dumps({"version": 1, "replicas": [1, 2, 4],
                                                               "original_replicas": [4, 2, 3]}).encode())
    await store.create(paths.REASSIGN_PARTITIONS, json.dumps({"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [1, 2, 3], "original_replicas": [4, 2, 3]}]}).encode())
    snap = await load(store, watch=False)
    assert snap.records[TP] == ((1, 2, 4), (4, 2, 3))
    move = rebuild(snap, controller_id=102, epoch=9).state.tasks[TP]
    assert (move.target, move.original) == ((1, 2, 4), (4, 2, 3))


def test_a_target_queued_behind_a_rollback_is_kept_by_its_record_through_a_failover():
    """The queue's target equal to the one being rolled back reads, in /admin/reassign_partitions,
    like the rollback's own entry; the record's next_replicas keeps it (found by the stateful
    suite: it was lost when the controller failed over before the rollback ended)."""
    from dataclasses import replace as _replace

    rolling_back = Assignment((1, 2, 3, 4, 5, 6), (), (4, 5, 6))
    snap = _replace(snapshot(rolling_back), cancelling={TP}, queued={TP: (4, 5, 6)})
    s, step, _ = resume(snap)
    move = s.tasks[TP]
    assert (move.phase, move.target, move.next_target) == (Phase.CANCELLING, (4, 5, 6), (4, 5, 6))


async def test_recovery_reads_the_state_of_every_move_it_finds_moving_or_recorded_only():
    """The moving partitions' states are read right after the topic znodes (while the records
    are read); a move only its record shows (RS = TRS written, the record's delete cut: resumed
    as STOPPING) has its state read after the records. Both go into Resume's own step; a
    partition neither moving nor recorded is left to the full metadata read."""
    from controller.shell.recovery import load
    from znodes.twin import TwinServer

    server = TwinServer()
    store = server.connect()
    for path in ("/brokers", "/brokers/ids", "/brokers/topics", "/admin", "/admin/reassignments",
                 "/admin/reassignments/t"):
        await store.create(path, b"")
    await store.create(paths.topic("t"), json.dumps({
        "version": 2, "partitions": {"0": [4, 5, 6, 1, 2, 3], "1": [4, 5, 6], "2": [1, 2, 3]},
        "adding_replicas": {"0": [4, 5, 6]}, "removing_replicas": {"0": [1, 2, 3]}}).encode())
    for p in (0, 1):
        await store.create(paths.reassignment("t", p), json.dumps(
            {"version": 1, "replicas": [4, 5, 6], "original_replicas": [1, 2, 3]}).encode())
    for p, isr in ((0, [1, 2, 3]), (1, [4, 5, 6]), (2, [1, 2, 3])):
        await store.ensure_path(paths.partition("t", p))
        await store.create(paths.partition_state("t", p), json.dumps(
            {"controller_epoch": 1, "leader": isr[0], "version": 1, "leader_epoch": 3, "isr": isr}).encode())
    snap = await load(store, watch=False, states=True)
    assert set(snap.states) == {("t", 0), ("t", 1)}
    assert snap.states[("t", 1)].isr == (4, 5, 6) and snap.states[("t", 0)].isr == (1, 2, 3)
    s = rebuild(snap, controller_id=102, epoch=9).state
    assert (s.tasks[("t", 0)].phase, s.tasks[("t", 1)].phase) == (Phase.REPLICATING, Phase.STOPPING)
    assert ("t", 0) in s.states and ("t", 1) in s.states and ("t", 2) not in s.states
