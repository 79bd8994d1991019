"""Failover schedules the stateful suite found (tests/controller/test_stateful.py), kept as
scripts that replay them exactly (tests/controller/crash_schedules.py's ``replay``: every
invariant after every step, the quiescent checks at the end).

A move that only reorders its replicas, resumed after a failover (found by the stateful
suite, seed 16 shard 2): its first topic write already has RS = TRS, so a controller deposed
after that write and before its state znode's leader epoch landed left a move that recovery
resumes as STOPPING at the old epoch. Resent as it was, that epoch reached the brokers with
two replica orders. Every resumed move now goes out with a new leader epoch (docs/DESIGN.md
section 4, "Leader epochs")."""

from tests.controller.crash_schedules import replay, rule, submit


def test_reordered_move_resumed_after_a_deposed_controller_gets_a_new_leader_epoch():
    replay([
        rule("crash_active_after", k=0),
        submit("submit", {0: [1, 2, 3]}),
        rule("start_controller"),
        rule("depose_active_after", k=0),
        rule("start_controller"),
        rule("crash_active_after", k=0),
        rule("cancel_api", partitions={0}),
        rule("cancel_api", partitions={0}),
        rule("crash_active_after", k=0),
        submit("submit", {0: [1, 4, 3], 1: [1, 2, 3], 2: [1, 2, 3], 3: [1, 2, 3], 4: [1, 2, 3], 5: [1, 2, 3]}),
        rule("start_controller"),
        rule("tick", n=2),
        rule("crash_active_after", k=1),
        # t-0 goes from [1,4,3] to [1,3,4]: the same brokers in another order. The deposed
        # controller's flush lands the record and the topic znode, not the state znode.
        rule("depose_active_after", k=2),
        submit("submit", {0: [1, 3, 4]}),
        rule("start_controller"),
    ])


def test_stray_is_judged_after_the_queued_move_that_places_it_again():
    """Seed 16 shard 7: t-0 [4,2,3] starts moving to [1,2,3] and the controller dies; meanwhile
    it is retargeted to [2,3,4] (its own brokers) and [1,2,3] queued behind. The next
    controller ends the move on [2,3,4], takes the queue and starts [1,2,3] again in the step
    that also holds broker 1's DescribeLogDirs answer. Judged at the answer, broker 1's replica
    was a stray, and its StopReplica(delete) went out after the new move's LeaderAndIsr."""
    replay([
        rule("expire_active"),
        rule("start_controller"),
        submit("queue", {0: [1, 2, 3], 1: [1, 2, 3]}),
        rule("crash_active_after", k=5),
        submit("retarget", {0: [2, 3, 4]}),
        submit("queue", {0: [1, 2, 3]}),
        rule("start_controller"),
    ])


def test_target_written_again_behind_a_rollback_begun_by_a_retarget_is_not_lost():
    """Seed 16 shard 4: t-0 moves [4,2,3] -> [1,4,3]; its entry is rewritten to its original
    replicas (a cancel, KIP-455 style) and the controller dies in that rollback's flush after
    the state and topic znodes, before the record's flag. With no controller, the entry is
    rewritten to [1,4,3] again: the next controller took that for the rollback's own entry (a
    cancel keeps the cancelled target in it), finished the rollback and dropped the entry,
    losing the request. The record now says first that the entry asked for the original
    replicas, so [1,4,3] follows the rollback."""
    replay([
        submit("submit", {0: [1, 4, 3], 1: [1, 2, 3], 2: [1, 2, 3], 3: [1, 2, 3], 4: [1, 2, 3], 5: [1, 2, 3]}),
        rule("crash_active_after", k=2),
        submit("retarget", {0: [4, 2, 3]}),
        submit("retarget", {0: [1, 4, 3]}),
    ])
