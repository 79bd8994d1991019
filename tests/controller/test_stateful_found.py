"""Schedules the stateful soak found failing, replayed step by step as it shrank them.

Each is a bug that was fixed; the soak draws its schedules at random, so a seed that found one
may never draw it again after the rules change. These replay exactly the shrunk steps on the
same machine (tests/controller/test_stateful.py), with its invariants after every step and
its quiescent checks at the end.
"""

from __future__ import annotations

from tests.controller.crash_schedules import replay as replay_rules
from tests.controller.crash_schedules import REVIVE, rule, submit
from tests.controller import test_stateful
from tests.controller.test_stateful import ControllerMachine
from znodes import paths


class Drawn:
    """Stands in for Hypothesis's ``data``: hands out the values the shrunk schedule drew."""

    def __init__(self, *values):
        self.values = list(values)

    def draw(self, _strategy):
        return self.values.pop(0)


def replay(*steps) -> None:
    """Run ``steps`` (callables taking the machine) after ``start``, the invariants after each,
    then the teardown's quiescent checks."""
    m = ControllerMachine()
    try:
        m.start()
        for step in steps:
            m.never_a_mix()
            m.no_request_lost()
            m.removal_and_fencing()
            step(m)
        m.never_a_mix()
        m.no_request_lost()
        m.removal_and_fencing()
    except BaseException:
        m.run(m.h.close())
        m.loop.close()
        raise
    m.teardown()


def test_recovery_keeps_a_dropped_replica_the_next_target_takes_back():
    """Seed 16, shard 6: an override to [2,3,4] (from ORS [4,2,3] moving to [1,2,3]) recorded
    its new target and crashed before its state write; [1,2,3] was written again. The next
    controller followed the record (dropping 1, outside the ISR: deleted at once) and then
    took [1,2,3] from the requests in the same step: its StopReplica(delete) to 1 went out
    after 1 was back in the RS and the target (invariant 4)."""
    replay(
        lambda m: m.cut_flush(deposing=False, point=("override", "state")),
        lambda m: m.submit_throttled(Drawn({0}, [1, 2, 3])),
        lambda m: m.retarget(Drawn({0}, [1, 2, 3])),
        lambda m: m.retarget(Drawn({0}, [1, 2, 3])),
        lambda m: m.retarget(Drawn({0}, [2, 3, 4])),
        lambda m: m.retarget(Drawn({0}, [1, 2, 3])),
    )


def test_a_target_queued_behind_a_rollback_survives_a_failover():
    """Seed 16, shard 5: with no controller running, every reassignment was cancelled and then
    t-0 queued to [1,2,3] - the very target being cancelled. The next controller took both in
    one step (rollback, then the queued target after it) and crashed before its rollback
    finished; in /admin/reassign_partitions the queued entry read exactly like the rollback's
    own, so the controller after it dropped the entry and t-0 stayed at [4,2,3] (invariant 2).
    The record keeps the queued target (next_replicas) since, written after the rollback's
    flag in the same flush."""
    replay(
        lambda m: m.start_controller(),
        lambda m: m.cut_flush(deposing=False, point=("rollback-finish", "topic")),
        lambda m: m.expire_active(),
        lambda m: m.expire_active(),
        lambda m: m.start_controller(),
        lambda m: m.queue(Drawn({0}, [1, 2, 3])),
        lambda m: m.expire_active(),
        lambda m: m.cancel_all(),
        lambda m: m.queue(Drawn({0}, [1, 2, 3])),
        lambda m: m.start_controller(),
    )


def test_a_rewrite_of_the_entry_a_rollback_keeps_is_no_new_request():
    """Random seed 2077067581, shard 37: t-0 queued to [1,2,3], every reassignment cancelled,
    and the rollback's finishing flush cut before its topic write; then, with no controller
    running, /admin/reassign_partitions was rewritten with t-0 -> [1,2,3] - the entry the
    rollback keeps until it ends, byte for byte. The znode cannot tell that rewrite from the
    rollback's own entry (an active controller ignores it too), so the next controller finishes
    the rollback: t-0 ends at [4,2,3], an endpoint it was at. The model had expected [1,2,3]; a
    rewrite that leaves a partition's entry as it was now asks nothing new of that partition."""
    replay(
        lambda m: m.cut_flush(deposing=False, point=("rollback-finish", "topic")),
        lambda m: m.queue(Drawn({0}, [1, 2, 3])),
        lambda m: m.cancel_all(),
        lambda m: m.retarget(Drawn({0}, [1, 2, 3])),
    )


def test_reordered_move_resumed_after_a_deposed_controller_gets_a_new_leader_epoch():
    """Seed 16 shard 2: a move that only reorders its replicas is RS = TRS from its first
    topic write, so a controller deposed after that write and before its state znode's leader
    epoch landed left a move that recovery resumes as STOPPING at the old epoch; resent as it
    was, that epoch reached the brokers with two replica orders. Every resumed move now goes
    out with a new leader epoch (docs/DESIGN.md section 4, "Leader epochs")."""
    replay_rules([
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
    replay_rules([
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
    replicas, so [1,4,3] follows the rollback. (The model accepts either endpoint for a
    rollback's undone target written again, which a cancel's entry cannot be told from: this
    one can, and must end at [1,4,3].)"""

    class Machine(ControllerMachine):
        async def quiesce(self):
            await super().quiesce()
            assert self.h.json(paths.topic("t"))["partitions"]["0"] == [1, 4, 3]

    replay_rules(machine=Machine, steps=[
        submit("submit", {0: [1, 4, 3], 1: [1, 2, 3], 2: [1, 2, 3], 3: [1, 2, 3], 4: [1, 2, 3], 5: [1, 2, 3]}),
        rule("crash_active_after", k=2),
        submit("retarget", {0: [4, 2, 3]}),
        submit("retarget", {0: [1, 4, 3]}),
    ])


def test_the_target_a_rollback_undoes_written_again_may_end_at_either():
    """Seed 16 shard 4: t-0 moves to [1,3,2]; a cancel through the API is cut in its rollback's
    flush after the state and topic znodes (never answered, its flag not written). With no
    controller, the entry is rewritten to [1,2,3] and then to [1,3,2] again. The next
    controller takes the entry for the one a cancel leaves (byte for byte the same) and
    finishes the rollback, as every begun rollback is finished: the model now accepts either
    endpoint for a partition whose entry asks, during its rollback, for the target undone."""
    replay_rules([
        submit("submit", {0: [1, 3, 2], 1: [1, 2, 3], 2: [1, 2, 3], 3: [1, 2, 3], 4: [1, 2, 3], 5: [1, 2, 3]}),
        rule("crash_active_after", k=2),
        rule("cancel_api", partitions={0}),
        submit("retarget", {0: [1, 2, 3]}),
        submit("retarget", {0: [1, 3, 2]}),
    ])


def test_a_queued_target_for_a_loading_move_is_held_to_the_caps(monkeypatch):
    """Tight caps (incoming 1), seed 17 shard 7: with no controller, t-2 is queued to [1,2,3]
    and t-0 -> [1,2,3], t-2 -> [2,3,4] submitted. The next controller starts loading both
    (broker 1 takes one copy, t-0's), then the queue gives loading t-2 a target that adds to
    broker 1 too; it started without step 2 counting its new slots. A loading move given a
    new target now goes back to pending (controller.core.working_set.retarget_unstarted)."""
    monkeypatch.setattr(test_stateful, "CAPS", test_stateful.TIGHT_CAPS)
    replay_rules([
        rule("expire_active"),
        submit("queue", {2: [1, 2, 3]}),
        submit("submit", {0: [1, 2, 3], 2: [2, 3, 4]}),
        rule("start_controller"),
    ])


def test_a_finish_and_a_start_cut_in_one_flush_do_not_count_twice(monkeypatch):
    """Tight caps (cluster 2), seed 17 shard 7: t-0 and t-3 complete and t-1 starts in their
    slots in one step; the flush is cut after t-1's record, before the topic znode that
    finishes t-0 and t-3. The next controller resumes all three, two of them complete (their
    targets in the ISR, nothing to copy): the caps count only moves that copy."""
    monkeypatch.setattr(test_stateful, "CAPS", test_stateful.TIGHT_CAPS)
    replay_rules([
        rule("expire_active"),
        rule("start_controller"),
        submit("queue", {0: [1, 2, 3], 1: [1, 2, 3], 3: [1, 2, 3]}),
        rule("crash_active_after", k=1),
        rule("depose_active_after", k=5),
        rule("tick", n=2),
    ])


def test_a_completed_move_retargeted_after_a_failover_counts_only_its_copies(monkeypatch):
    """Tight caps (incoming 1), seed 17 shard 7: t-0 and t-3 complete and t-1 starts in their
    slots (adding broker 1), the flush cut before the finishes' topic write; with no
    controller t-0 is retargeted, and the next controller overrides the completed t-0 in
    place, whose topic znode lists broker 1 - in its ISR already - as adding. Broker 1
    receives one copy (t-1's): the caps count added replicas still out of the ISR."""
    monkeypatch.setattr(test_stateful, "CAPS", test_stateful.TIGHT_CAPS)
    replay_rules([
        submit("queue", {0: [1, 2, 3], 1: [1, 2, 3], 3: [1, 2, 3]}),
        rule("crash_active_after", k=5),
        rule("tick", n=2),
        submit("retarget", {0: [1, 2, 4]}),
        rule("start_controller"),
    ])


def test_a_deletion_cut_between_its_topic_and_its_config_leaves_no_config_behind():
    """Found by the topics machine: a DeleteTopics acknowledged, the controller's deletion flush
    cut after the topic znode's delete and before its config's; the next controller saw a
    marker of an unknown topic, dropped it, and /config/topics/n0 stayed for ever. The config
    now goes before the topic znode (controller.core.topic_deletion step 5)."""
    from tests.controller.crash_schedules import Drawn
    from tests.controller.test_stateful_topics import TopicsMachine

    for k in range(0, 12):
        replay_rules([("create_topic", {"name": "n0", "partitions": 2, "rf": 2}), rule("crash_active_after", k=k),
                      rule("delete_topic", data=Drawn("n0")), REVIVE, rule("tick", n=8), REVIVE], TopicsMachine)
