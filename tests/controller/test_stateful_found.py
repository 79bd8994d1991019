"""Schedules the stateful soak found failing, replayed step by step as it shrank them.

Each is a bug that was fixed; the soak draws its schedules at random, so a seed that found one
may never draw it again after the rules change. These replay exactly the shrunk steps on the
same machine (tests/controller/test_stateful.py), with its invariants after every step and
its quiescent checks at the end.
"""

from __future__ import annotations

from tests.controller.test_stateful import ControllerMachine


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
