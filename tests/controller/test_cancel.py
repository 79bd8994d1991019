"""KIP-236 cancellation in the pure engine: the worked state table of controller.core.cancel, the
skip scenarios, the doors' bookkeeping, and failover in the middle of a rollback."""

from __future__ import annotations

import pytest

from controller.core import engine
from controller.core.cancel import (
    CANCELLED,
    NOT_REASSIGNING,
    SKIP_COMPLETING,
    SKIP_NO_ORIGINAL,
    SKIP_ORIGINAL_OUT_OF_SYNC,
)
from controller.core.events import BrokersRead, CancelRequested, RequestsRead, StatesRead, StopReplicaSent
from controller.core.task import IllegalTransition, Move, Phase
from controller.shell.recovery import Snapshot, rebuild
from protocol import ApiKey
from protocol.errors import ErrorCode
from tests.controller.helpers import body_partitions, cluster, loads, req, state
from tests.controller.test_engine import CFG, by_kind, row, run
from znodes.api import Delete, SetData
from znodes.values import Assignment, Broker

TP = ("t", 0)


def replicating(leader=1, isr=(1, 2, 3, 4), brokers=range(1, 7)):
    """ORS (1,2,3) -> TRS (4,5,6), started, 4 caught up: engine step 4 of the worked table."""
    s = cluster(brokers=brokers, topics={"t": {0: (1, 2, 3), 1: (1, 2, 3)}})
    run(s, RequestsRead(0, (req("t", 0, (4, 5, 6)),)))
    run(s, StatesRead({TP: state(1, (1, 2, 3), zk_version=0)}))
    run(s, StatesRead({TP: state(leader, isr, zk_version=1)}))
    assert s.tasks[TP].phase is Phase.REPLICATING
    return s


def cancel(s, partitions=None, **kw):
    step = run(s, CancelRequested(partitions, token="tok", **kw))
    (outcome,) = step.cancels
    assert outcome.token == "tok"
    return step, outcome.results


def test_worked_state_table_cancel_during_replicating():
    s = replicating()
    assert row(s) == ((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3), (1, 2, 3, 4), 1, Phase.REPLICATING)

    # 4-6 in one flush: record marked, ISR shrunk to ORS (epoch+1, conditional), topic = rollback
    step, results = cancel(s, (TP,))
    assert results == {TP: (CANCELLED, None)}
    assert row(s) == ((1, 2, 3, 4, 5, 6), (), (4, 5, 6), (1, 2, 3), 1, Phase.CANCELLING)
    st, topic, record = step.writes  # state, then topic, then the flag: see controller.core.cancel
    assert record == SetData("/admin/reassignments/t/0", record.data)
    assert loads(record.data) == {"version": 1, "replicas": [4, 5, 6], "original_replicas": [1, 2, 3], "cancelling": True}
    assert st.path == "/brokers/topics/t/partitions/0/state" and st.version == 1
    assert loads(st.data)["leader"] == 1 and loads(st.data)["isr"] == [1, 2, 3] and loads(st.data)["leader_epoch"] == 1
    assert loads(topic.data)["partitions"]["0"] == [1, 2, 3, 4, 5, 6]
    assert loads(topic.data)["removing_replicas"] == {"0": [4, 5, 6]} and loads(topic.data)["adding_replicas"] == {}
    lai = by_kind(step, ApiKey.LEADER_AND_ISR)
    assert sorted(lai) == [1, 2, 3]
    entry = body_partitions(lai[2])[TP]
    assert entry["replicas"] == [1, 2, 3] and entry["adding_replicas"] == [] and entry["isr"] == [1, 2, 3]
    stops = by_kind(step, ApiKey.STOP_REPLICA)
    assert sorted(stops) == [4, 5, 6]
    assert all(body_partitions(c)[TP]["delete_partition"] for c in stops.values())
    assert not step.cancelled

    # 7 StopReplica sent: RS = ORS, then the entry dropped and the record deleted in one multi
    # (the shared part the shell writes last); UpdateMetadata everywhere
    step = run(s, StopReplicaSent((TP,)))
    topic, requests, record, parent = step.writes
    assert step.shared_from == 1
    assert loads(topic.data)["partitions"] == {"0": [1, 2, 3], "1": [1, 2, 3]}
    assert loads(topic.data)["removing_replicas"] == {}
    assert record == Delete("/admin/reassignments/t/0") and parent == Delete("/admin/reassignments/t")
    assert requests == Delete("/admin/reassign_partitions", 1)
    assert sorted(by_kind(step, ApiKey.UPDATE_METADATA)) == [1, 2, 3, 4, 5, 6]
    assert step.cancelled == [TP] and step.finished
    assert s.assignments[TP] == Assignment((1, 2, 3)) and s.tasks == {} and s.requests == {}


def test_a_read_of_the_requests_znode_older_than_the_rollback_finishing_in_its_step_does_not_restart_it():
    """A RequestsRead taken before the step (a watch left from before a reload, say) shows the
    cancel's own entry, which the rollback finishing in the same step (StopReplicaSent, handled
    first) drops: the entry is not taken again as a new request (it would move the partition
    to the cancelled target after an acknowledged cancel)."""
    s = replicating()
    cancel(s, (TP,))
    held = s.requests[TP]
    version = s.requests_version
    step = run(s, [StopReplicaSent((TP,)), RequestsRead(version, (held,))])
    assert step.cancelled == [TP]
    assert TP not in s.tasks and TP not in s.requests
    assert s.assignments[TP] == Assignment((1, 2, 3))
    assert any(getattr(w, "path", None) == "/admin/reassign_partitions" for w in step.writes)
    # A newer znode (a tool wrote it again) still counts as a new request.
    s2 = replicating()
    cancel(s2, (TP,))
    step = run(s2, [StopReplicaSent((TP,)), RequestsRead(s2.requests_version + 1, (s2.requests[TP],))])
    assert s2.tasks[TP].phase is not Phase.CANCELLING and s2.tasks[TP].target == (4, 5, 6)


def test_an_added_leader_is_replaced_by_the_first_live_original_replica_in_the_isr():
    s = replicating(leader=4, isr=(4, 2, 3, 1))
    step, _ = cancel(s, (TP,))
    (st,) = [w for w in step.writes if w.path.endswith("/state")]
    assert loads(st.data)["leader"] == 1 and loads(st.data)["isr"] == [2, 3, 1]  # ORS order: preferred first


def test_skip_when_no_original_replica_is_in_sync_while_new_ones_are_online():
    s = replicating(leader=4, isr=(4, 5))
    step, results = cancel(s, (TP,))
    code, message = results[TP]
    assert code is SKIP_ORIGINAL_OUT_OF_SYNC and "would take it offline" in message
    assert step.writes == [] and step.commands == [] and s.tasks[TP].phase is Phase.REPLICATING
    # an original replica in the ISR but dead does not count either
    s = replicating(leader=4, isr=(4, 1))
    run(s, BrokersRead({b: Broker(b, "127.0.0.1", 9090 + b, None, 1000 + b) for b in (2, 3, 4, 5, 6)}))
    _, results = cancel(s, (TP,))
    assert results[TP][0] is SKIP_ORIGINAL_OUT_OF_SYNC


def test_everything_offline_rolls_back_anyway():
    s = replicating(leader=4, isr=(4,))
    run(s, BrokersRead({}))
    step, results = cancel(s, (TP,))
    assert results[TP] == (CANCELLED, None)
    # no added replica alive to stop: the rollback finishes in the same step
    assert step.cancelled == [TP] and s.assignments[TP] == Assignment((1, 2, 3))
    (st,) = [w for w in step.writes if w.path.endswith("/state")]
    assert loads(st.data)["leader"] == -1 and loads(st.data)["isr"] == []


def test_pending_entries_are_withdrawn_unless_they_have_no_original_replicas():
    s = cluster(topics={"t": {0: (1, 2, 3), 1: (1, 2, 3), 2: (1, 2, 3)}})
    cfg = CFG.__class__(max_cluster_moves=1)
    run(s, RequestsRead(4, (req("t", 0, (4, 5, 6)), req("t", 1, (4, 2, 3), (1, 2, 3)), req("t", 2, (1, 2, 5)))), cfg)
    assert s.tasks[("t", 1)].phase is Phase.PENDING
    step, results = cancel(s, (("t", 1), ("t", 2), ("t", 9), ("nope", 0)))
    assert results[("t", 1)] == (CANCELLED, None)
    assert results[("t", 2)][0] is SKIP_NO_ORIGINAL and "original_replicas" in results[("t", 2)][1]
    assert results[("t", 9)][0] is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert results[("nope", 0)][0] is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    (write,) = step.writes
    assert [e["partition"] for e in loads(write.data)["partitions"]] == [0, 2]
    assert ("t", 1) not in s.tasks and not s.tasks[("t", 2)].started


def test_not_reassigning_completing_and_already_cancelling():
    s = replicating()
    _, results = cancel(s, (("t", 1),))
    assert results[("t", 1)][0] is NOT_REASSIGNING
    cancel(s, (TP,))
    step, results = cancel(s, (TP,))
    assert results[TP] == (CANCELLED, "already being cancelled") and step.writes == []
    # a move past "TRS in ISR" completes: its original replicas are already being deleted
    s = replicating()
    run(s, StatesRead({TP: state(1, (1, 2, 3, 4, 5, 6), zk_version=2)}))
    assert s.tasks[TP].phase is Phase.STOPPING
    step, results = cancel(s, (TP,))
    assert results[TP][0] is SKIP_COMPLETING and step.writes == []


def test_validate_only_changes_nothing():
    s = replicating()
    step, results = cancel(s, None, validate_only=True)
    assert results == {TP: (CANCELLED, None)}
    assert step.writes == [] and step.commands == [] and s.tasks[TP].phase is Phase.REPLICATING


def test_znode_door_cancels_everything_and_deletes_the_znode_last():
    s = replicating()
    step = run(s, CancelRequested(None, source="znode", znode_version=0))
    assert step.writes[-1] == Delete("/admin/cancel_reassignment_in_progress", 0)
    assert s.tasks[TP].phase is Phase.CANCELLING
    assert any("1 of 1 reassignment(s) cancelled" in line for line in step.log)


def test_a_shrink_rolls_back_in_one_step():
    s = cluster(topics={"t": {0: (1, 2, 3)}})
    run(s, RequestsRead(0, (req("t", 0, (1, 2)),)))
    run(s, StatesRead({TP: state(1, (1, 3), zk_version=0)}))  # 2 out of sync: the move waits
    step, results = cancel(s, (TP,))
    assert results[TP] == (CANCELLED, None) and step.cancelled == [TP]
    paths_written = [type(w).__name__ + " " + w.path for w in step.writes]
    # topic (plain ORS), then the cancel flag, then the entry's drop and the record's delete:
    # any prefix is recoverable (see the failover test below)
    assert paths_written.index("SetData /brokers/topics/t") < paths_written.index("SetData /admin/reassignments/t/0")
    assert paths_written.index("SetData /admin/reassignments/t/0") < paths_written.index("Delete /admin/reassign_partitions")
    assert paths_written.index("Delete /admin/reassign_partitions") < paths_written.index("Delete /admin/reassignments/t/0")


def test_transition_map_allows_cancel_only_from_replicating():
    m = Move(TP, (4, 5, 6)).to(Phase.LOADING).to(Phase.REPLICATING, original=(1, 2, 3))
    assert m.to(Phase.CANCELLING).to(Phase.CANCELLED).phase is Phase.CANCELLED
    with pytest.raises(IllegalTransition):
        m.to(Phase.STOPPING).to(Phase.CANCELLING)
    assert m.rollback_replicas == (1, 2, 3, 4, 5, 6)


# ---- failover in the middle of a rollback (pure: every prefix of the cancel flush) -----------


def _topic_after(writes, base: Assignment) -> tuple[Assignment, bool, bool]:
    """(topic entry, record marked, record deleted) after a prefix of the cancel's writes."""
    assignment, marked, deleted = base, False, False
    for w in writes:
        if w.path == "/brokers/topics/t":
            z = loads(w.data)
            assignment = Assignment(
                tuple(z["partitions"]["0"]),
                tuple(z.get("adding_replicas", {}).get("0", ())),
                tuple(z.get("removing_replicas", {}).get("0", ())),
            )
        elif w.path == "/admin/reassignments/t/0":
            if isinstance(w, Delete):
                deleted = True
            else:
                marked = loads(w.data).get("cancelling", False)
    return assignment, marked, deleted


@pytest.mark.parametrize("cut", range(0, 8))
def test_a_failover_after_any_prefix_of_a_cancel_finishes_the_rollback(cut):
    s = replicating()
    forward = s.assignments[TP]
    step, _ = cancel(s, (TP,))
    writes = list(step.writes)
    writes += run(s, StopReplicaSent((TP,))).writes
    if cut > len(writes):
        pytest.skip("past the last write")
    assignment, marked, deleted = _topic_after(writes[:cut], forward)
    if deleted:
        return  # the record is gone only after RS = ORS landed: nothing left to resume
    snap = Snapshot(
        brokers={b: Broker(b, "127.0.0.1", 9090 + b, None, b) for b in range(1, 7)},
        topics={"t": (9, {0: assignment, 1: Assignment((1, 2, 3))})},
        requests=RequestsRead(1, (req("t", 0, (4, 5, 6), (1, 2, 3)),)),
        records={TP: ((4, 5, 6), (1, 2, 3))},
        states={},
        record_counts={"t": 1},
        cancelling={TP} if marked else set(),
    )
    recovered = rebuild(snap, controller_id=102, epoch=9)
    t = recovered.state
    resumed = t.tasks[TP].phase
    if not marked and not assignment.removing == (4, 5, 6):
        # nothing of the cancel landed: the move resumes (the request was not answered yet)
        assert resumed is Phase.REPLICATING
        return
    assert resumed is Phase.CANCELLING
    step = engine.step(t, recovered.events, CFG)
    t.apply(step.delta)
    step = engine.step(t, [StatesRead({TP: state(1, (1, 2, 3), zk_version=4, leader_epoch=1)})], CFG)
    t.apply(step.delta)
    assert sorted(c.broker_id for c in step.commands if c.api_key == ApiKey.STOP_REPLICA) == [4, 5, 6]
    step = engine.step(t, [StopReplicaSent((TP,))], CFG)
    t.apply(step.delta)
    assert t.assignments[TP] == Assignment((1, 2, 3)) and t.tasks == {} and step.cancelled == [TP]


def _snap(assignment: Assignment, *, flagged: bool, entry=req("t", 0, (4, 5, 6), (1, 2, 3))) -> Snapshot:
    return Snapshot(
        brokers={b: Broker(b, "127.0.0.1", 9090 + b, None, b) for b in range(1, 7)},
        topics={"t": (9, {0: assignment})},
        requests=RequestsRead(1, (entry,)),
        records={TP: ((4, 5, 6), (1, 2, 3))},
        states={},
        record_counts={"t": 1},
        cancelling={TP} if flagged else set(),
    )


@pytest.mark.parametrize(
    "assignment, flagged, phase, rewrites_flag",
    [
        (Assignment((1, 2, 3, 4, 5, 6), (), (4, 5, 6)), True, Phase.CANCELLING, False),  # rolled back, flagged
        (Assignment((1, 2, 3, 4, 5, 6), (), (4, 5, 6)), False, Phase.CANCELLING, True),  # flag did not land
        (Assignment((1, 2, 3)), True, Phase.CANCELLING, False),  # RS = ORS landed, record not deleted
        (Assignment((4, 5, 6)), True, Phase.STOPPING, False),  # a stale flag on a completed move
        (Assignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3)), False, Phase.REPLICATING, False),  # no cancel landed
    ],
)
def test_recovery_rows_of_a_cancel(assignment, flagged, phase, rewrites_flag):
    recovered = rebuild(_snap(assignment, flagged=flagged), controller_id=102, epoch=9)
    move = recovered.state.tasks[TP]
    assert move.phase is phase and move.original == (1, 2, 3) and move.target == (4, 5, 6)
    step = engine.step(recovered.state, recovered.events, CFG)
    flag_writes = [w for w in step.writes if w.path == "/admin/reassignments/t/0" and isinstance(w, SetData)]
    assert bool(flag_writes) is rewrites_flag
    if rewrites_flag:
        assert loads(flag_writes[0].data)["cancelling"] is True


def test_recovery_restores_the_order_of_the_original_replicas_from_the_entry():
    # RS = TRS + (ORS - TRS) gives ORS as the set {1, 2, 3} (in RS order, as the topic znode
    # alone says it); the entry written when the move started says the order: 3, 1, 2
    snap = _snap(Assignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3)), flagged=False, entry=req("t", 0, (4, 5, 6), (3, 1, 2)))
    recovered = rebuild(snap, controller_id=102, epoch=9)
    assert recovered.state.tasks[TP].original == (3, 1, 2)


def test_the_cancel_znode_with_nothing_running_is_just_deleted():
    s = cluster(topics={"t": {0: (1, 2, 3)}})
    step = run(s, CancelRequested(None, source="znode", znode_version=4))
    assert step.writes == [Delete("/admin/cancel_reassignment_in_progress", 4)]
    assert step.commands == [] and any("0 of 0" in line for line in step.log)


def test_a_cancel_waits_for_the_states_of_moves_resumed_by_failover():
    snap = _snap(Assignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3)), flagged=False)
    recovered = rebuild(snap, controller_id=102, epoch=9)
    t = recovered.state
    step = engine.step(t, recovered.events + [CancelRequested((TP,), token="tok")], CFG)
    t.apply(step.delta)
    assert step.cancels == [] and len(t.deferred) == 1 and step.reads == {TP}
    step = engine.step(t, [StatesRead({TP: state(1, (1, 2, 3, 4), zk_version=3)})], CFG)
    t.apply(step.delta)
    (outcome,) = step.cancels
    assert outcome.token == "tok" and outcome.results == {TP: (CANCELLED, None)}
    assert t.deferred == () and t.tasks[TP].phase is Phase.CANCELLING
