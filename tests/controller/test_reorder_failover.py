"""A move that only reorders its replicas, resumed after a failover (found by the stateful
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
