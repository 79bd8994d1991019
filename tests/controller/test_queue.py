"""KIP-236 queue in the pure engine (controller.core.queue): entries join the running set, a moving
partition is first cancelled then reassigned, the queue znode goes in the same flush."""

from __future__ import annotations
from controller.core.events import QueueRead, RequestsRead, StatesRead, StopReplicaSent
from controller.core.task import Phase
from protocol import ApiKey
from tests.controller.helpers import cluster, loads, req, state
from tests.controller.test_cancel import replicating
from tests.controller.test_engine import CFG, run
from znodes.api import Delete
from znodes.values import Assignment

TP = ("t", 0)


def entries(write) -> dict:
    return {(e["topic"], e["partition"]): e for e in loads(write.data)["partitions"]}


def test_a_conflicting_partition_is_rolled_back_then_moved_to_the_queued_target():
    s = replicating()  # t-0: ORS 1,2,3 -> TRS 4,5,6, 4 in sync
    step = run(s, QueueRead(7, (req("t", 0, (1, 2, 5)), req("t", 1, (4, 2, 3)))))
    # the cancel is recorded and started; both entries are in /admin/reassign_partitions with
    # their original replicas; the queue znode is deleted last, after them
    assert s.tasks[TP].phase is Phase.CANCELLING and s.tasks[TP].next_target == (1, 2, 5)
    *_, requests, queue_delete = step.writes
    assert queue_delete == Delete("/admin/reassign_partitions_queue", 7)
    assert requests.path == "/admin/reassign_partitions"
    got = entries(requests)
    assert got[TP]["replicas"] == [1, 2, 5] and got[TP]["original_replicas"] == [1, 2, 3]
    assert got[("t", 1)]["replicas"] == [4, 2, 3] and got[("t", 1)]["original_replicas"] == [1, 2, 3]
    assert s.tasks[("t", 1)].phase is Phase.LOADING
    assert any("cancelling its move to [4, 5, 6], then moving it to [1, 2, 5]" in line for line in step.log)

    # the rollback ends at ORS and the queued target becomes a new move from there
    step = run(s, StopReplicaSent((TP,)))
    assert step.cancelled == [TP] and s.assignments[TP] == Assignment((1, 2, 3))
    assert s.tasks[TP].phase in (Phase.PENDING, Phase.LOADING) and s.tasks[TP].target == (1, 2, 5)
    assert s.requests[TP].original_replicas == (1, 2, 3)
    assert not any(w.path == "/admin/reassignments/t/0" and not isinstance(w, Delete) for w in step.writes)
    # ... and runs like any other: the new record has ORS 1,2,3 and TRS 1,2,5
    run(s, StatesRead({TP: state(1, (1, 2, 3), zk_version=9, leader_epoch=2)}))
    assert s.tasks[TP].phase is Phase.REPLICATING and s.tasks[TP].original == (1, 2, 3)
    assert s.assignments[TP] == Assignment((1, 2, 5, 3), (5,), (3,))


def test_a_pending_partition_takes_the_queued_target():
    s = cluster(topics={"t": {0: (1, 2, 3)}})
    run(s, RequestsRead(0, (req("t", 0, (4, 5, 6)),)), CFG.__class__(max_cluster_moves=1))
    step = run(s, QueueRead(0, (req("t", 0, (1, 2, 4)),)))
    assert s.tasks[TP].target == (1, 2, 4) and not s.tasks[TP].started
    assert entries(step.writes[-2])[TP]["replicas"] == [1, 2, 4]


def test_a_completing_move_is_followed_by_the_queued_target():
    s = replicating()
    run(s, StatesRead({TP: state(1, (1, 2, 3, 4, 5, 6), zk_version=2)}))
    assert s.tasks[TP].phase is Phase.STOPPING
    step = run(s, QueueRead(3, (req("t", 0, (1, 2, 3)),)))
    assert s.tasks[TP].next_target == (1, 2, 3)  # back to where it came from, after completing
    assert any("follows its completion" in line for line in step.log)
    run(s, StopReplicaSent((TP,)))
    assert s.assignments[TP] == Assignment((4, 5, 6))
    assert s.tasks[TP].target == (1, 2, 3) and s.requests[TP].original_replicas == (4, 5, 6)


def test_a_move_that_cannot_be_rolled_back_takes_the_queued_target_in_place():
    s = replicating(leader=4, isr=(4, 5))  # no original replica in sync: KIP-236 skip
    step = run(s, QueueRead(1, (req("t", 0, (1, 2, 5)),)))
    move = s.tasks[TP]
    assert (move.phase, move.target, move.dropped, move.next_target) == (Phase.REPLICATING, (1, 2, 5), (4,), None)
    assert any("cannot cancel" in line and "would take it offline" in line for line in step.log)
    # 4 leads until (1,2,5) is in sync; 6, out of the ISR, holds no in-sync copy and goes now
    assert [c.broker_id for c in step.commands if c.api_key == ApiKey.STOP_REPLICA] == [6]
    step = run(s, StatesRead({TP: state(4, (4, 5, 1, 2), zk_version=3)}))
    assert s.states[TP].leader == 1 and s.states[TP].isr == (5, 1, 2)
    assert sorted(c.broker_id for c in step.commands if c.api_key == ApiKey.STOP_REPLICA) == [3, 4]


def test_bad_entries_are_dropped_with_a_reason_and_a_malformed_queue_is_left_alone():
    s = cluster(topics={"t": {0: (1, 2, 3), 1: (1, 2, 3)}})
    step = run(s, QueueRead(2, (req("t", 0, (1, 2, 99)), req("nope", 0, (1,)), req("t", 1, (1, 2, 3))), rejected=("dropping entry 3 (x-y): bad",)))
    assert any("unknown broker" in line for line in step.log) and any("unknown topic" in line for line in step.log)
    assert any("already assigned" in line for line in step.log) and "dropping entry 3 (x-y): bad" in step.warnings
    assert step.writes == [Delete("/admin/reassign_partitions_queue", 2)] and s.tasks == {}
    step = run(s, QueueRead(4, None, error="payload is not JSON"))
    assert step.writes == [] and any("leaving /admin/reassign_partitions_queue alone" in line for line in step.warnings)


def test_taking_the_same_queue_twice_changes_nothing_more():
    """A crash before the queue znode's delete landed: the next controller takes it again."""
    s = replicating()
    queue = QueueRead(7, (req("t", 0, (1, 2, 5)),))
    run(s, queue)
    before = (s.tasks[TP], dict(s.requests))
    step = run(s, queue)
    assert (s.tasks[TP], dict(s.requests)) == before
    assert step.writes == [Delete("/admin/reassign_partitions_queue", 7)]


def test_a_target_queued_behind_a_rollback_equal_to_the_cancelled_one_survives_the_znode_s_reread():
    """The queue writes the entry with the same target as the move being rolled back; the
    controller then re-reads /admin/reassign_partitions (its own write's watch). That entry
    reads like the rollback's own, and must not drop the queued target (found by the stateful
    suite: the queued reassignment was lost after a failover into a rollback)."""
    s = replicating()  # t-0: ORS 1,2,3 -> TRS 4,5,6
    run(s, QueueRead(7, (req("t", 0, (1, 2, 5)),)))  # cancelled; then queued again to 4,5,6:
    assert s.tasks[TP].phase is Phase.CANCELLING
    run(s, QueueRead(8, (req("t", 0, (4, 5, 6)),)))
    assert s.tasks[TP].next_target == (4, 5, 6)
    run(s, RequestsRead(9, (req("t", 0, (4, 5, 6), (1, 2, 3)),)))
    assert s.tasks[TP].next_target == (4, 5, 6)
    step = run(s, StopReplicaSent((TP,)))
    assert step.cancelled == [TP] and s.assignments[TP] == Assignment((1, 2, 3))
    assert s.tasks[TP].target == (4, 5, 6) and s.requests[TP].original_replicas == (1, 2, 3)


def test_a_rollback_s_own_entry_reread_does_not_restart_the_move():
    s = replicating()
    run(s, QueueRead(7, (req("t", 0, (1, 2, 3)),)))  # the queued target is ORS: a plain cancel
    assert s.tasks[TP].phase is Phase.CANCELLING and s.tasks[TP].next_target is None
    run(s, RequestsRead(9, (req("t", 0, (4, 5, 6), (1, 2, 3)),)))
    assert s.tasks[TP].next_target is None
    step = run(s, StopReplicaSent((TP,)))
    assert step.cancelled == [TP] and TP not in s.tasks and s.assignments[TP] == Assignment((1, 2, 3))
