"""Schedules of the stateful suite (tests/controller/test_stateful.py) that random seeds found
failing, replayed step by step (tests/controller/crash_schedules.replay: every invariant after
every step, the quiescent checks at the end), so that each stays fixed whatever the seeds draw.

- A replica rejoins an ISR (its leader writes the state; the ISR change notification is still to
  come), then its broker stops or its directory fails: the controller decided from the state it
  held, which did not name the replica, and left it in the ISR. It now reads the states of the
  partitions it takes replicas out of first (controller.shell.active.states_for_offline, as
  Kafka's removeReplicasFromIsr reads them). Found by seed 682840250, shard 7.
- A broker stops while a move owns its partition's ISR, and the move is rolled back: the
  original replicas came back with the stopped broker still in the ISR. A move that ends with
  an offline replica in its state now gets the broker-failure check (controller.core.ended_moves).
  Found by seed 16 once invariant 5c checked stopped brokers too.
- A move's finish wrote RS = TRS and was cut before its record delete; a TRS replica's
  directory failed, and the next controller resumed the move STOPPING and sent StopReplica to
  the removed replica again. Correct (the completion was decided with TRS in the ISR, and no
  cancel rolls a STOPPING move back), but the harness's invariant 4 counted the removed
  replica among the originals a rollback returns to. Found by seed 522949629, shard 2.
- A pending entry (waiting at its ISR's floor) retargeted by a KIP-236 queue before it started:
  the broker only its old target named kept its auto-removable throttle, as no throttle check
  was asked for (WorkingSet.retarget_unstarted asks for one now). Found by seed 424242, shard 5.
- An override kept an in-sync dropped replica until its move completes; the replica left the
  ISR (its directory failed) and was shed then (reassignment.announce), with no throttle check:
  its broker kept its auto-removable throttle. Seed 424242, shard 5, once the previous was fixed.
- Topic t allows unclean elections; while no controller is active, the directories holding a
  partition's two ISR members fail. The next controller's LeaderAndIsr finds both offline, one
  answer per broker, and both answers came in one step: the shell judged each answer's unclean
  candidates alone (the other broker's replica still online), read no config, and the
  partition was left with leader -1 beside a live online replica. Both checks now judge from
  every replica the step takes offline (ActiveController.step_offline). Found by seed 16,
  shard 5, in its first run with unclean elections allowed (two schedules).
- At move caps of 1, a resumed move overridden after a failover kept an added replica that was
  already in sync on broker 2 beside a move adding to 2; broker 2's directory then failed and
  both added replicas were out of the ISR. No copy was started: the harness's caps invariant
  counted the replica the failure took out of the ISR as a new copy (a false positive). It now
  counts an added replica seen in the ISR, and a move seen with its whole target in it, as
  copied for as long as its topic znode's replica list stays. Seed 1600000019, shard 3, with
  every shard at tight caps.
- At move caps of 1, two moves each with a new target waiting for the slot the other holds on
  the broker it adds: one's finish freed the slot and, in the same step, the other's override
  took it from a held state whose ISR its leader had just changed (the notification still to
  come); the conditional state write failed the whole flush, the finish with it, and the
  reload's Resume gave both a new leader epoch, after which the leaders changed their ISRs
  again - the two took turns for ever (a leader epoch ran to ~1,800). Such a conflict now costs a
  re-read of the states the step wrote and the step taken again (controller.shell.state_conflicts).
  Seed 1122334455, shard 3 (tight caps); Hypothesis left 40 steps, 12 by hand.
- At move caps of 1-2, a step finished one move and started another in the slot it freed; the
  flush stopped after the new move's record (its state write met a newer state), before the
  finish's topic znode. The reload resumed three moves at a cluster cap of two, the finished one
  still looking like a copy, and took its new target in place: it copied again, three moves at
  once. Resume now finishes a move whose target is in sync before its new target, which then
  waits for a slot like any pending move, as under the controller that died (DESIGN 4.1).
  Seed 1600000019, shard 3, with every shard at tight caps (after the harness fix above).
- At move caps of 1-2, a queue rolled back a move whose original replicas include a stopped
  broker; the step that finished the rollback started another move in the slot it freed, and
  the controller was deposed right after that move's record. The next controller resumed three
  moves (one rolling back) and was cut after its Resume's writes, before the rollback's finish:
  ZooKeeper showed three moves at a cluster cap of two, the rollback's original replicas out of
  the ISR. Only two copied: a rollback adds no replica, and the caps invariant counted it as a
  copy (a false positive). It now counts a move as copying while a replica it adds is not yet
  in its ISR, as Kafka means it. Seed 382528750, shard 3, with every shard at tight caps.
- Topic t allows unclean elections; while no controller is active, directory d1 fails on
  brokers 1, 2 and 3 (t-5's whole ISR) and a move of t-5 to [1, 2, 4] is written; then both of
  broker 4's directories fail. The next controller started the move and, its first answers
  saying t-5's replicas on 1-3 are offline, elected broker 4 uncleanly (a live replica of the
  move's RS, as Kafka would), whose answer then said it could host nothing: leader -1, ISR [4],
  as Kafka leaves a partition whose last ISR member goes offline. Correct, but invariant 5c
  counted broker 4 as an online ISR member: it had no replica object to show the storage
  error, having been unable to create one. The harness now counts every place of a broker
  whose every directory failed as offline. Seed 17171717, shard 9.
"""

from __future__ import annotations

import pytest

from tests.controller import test_stateful
from tests.controller.crash_schedules import replay, rule, submit

pytestmark = pytest.mark.timeout(120)


def test_a_directory_fails_under_a_replica_whose_return_to_the_isr_was_not_notified_yet():
    replay([rule("start_controller"), rule("toggle_broker", b=5), rule("toggle_broker", b=5),
            submit("queue", {0: [1, 2, 3]}), rule("tick", n=1), rule("fail_dir", b=5, directory="/data/d1")])


def test_a_broker_stops_again_before_its_return_to_the_isr_was_notified():
    replay([rule("start_controller"), rule("toggle_broker", b=5), rule("toggle_broker", b=5), rule("tick", n=1),
            rule("toggle_broker", b=5)])


def test_a_rollback_does_not_bring_back_a_broker_that_stopped_mid_move_in_the_isr():
    replay([submit("queue", {2: [1, 2, 3]}), rule("toggle_broker", b=5), rule("cancel_all")])


def test_a_resumed_finish_resends_its_stop_replica_after_the_isr_lost_a_target_replica():
    replay([submit("queue", {1: [1, 2, 3]}), rule("cancel_api", partitions={0}), rule("tick", n=1), rule("tick", n=1),
            submit("queue", {0: [1, 2, 3]}), submit("queue", {0: [1, 2, 4]}),
            rule("cut_flush", deposing=False, point=("finish", "record delete")), rule("tick", n=2),
            submit("queue", {0: [1, 2, 3]}), rule("tick", n=1), rule("tick", n=1),
            rule("fail_dir", b=1, directory="/data/d1"), *[rule("tick", n=1)] * 5, rule("tick", n=8)])


def test_a_pending_entry_retargeted_by_the_queue_frees_its_old_targets_throttle():
    replay([rule("fail_dir", b=1, directory="/data/d2"), rule("fail_dir", b=2, directory="/data/d2"),
            submit("reassign_api", {4: [1, 2, 4]}), submit("queue", {4: [1, 2, 3]})])


def test_an_overrides_kept_replica_shed_when_it_leaves_the_isr_frees_its_brokers_throttle():
    replay([submit("queue", {0: [1, 2, 3], 1: [1, 2, 3], 2: [1, 2, 3], 4: [1, 2, 3]}),
            rule("fail_dir", b=2, directory="/data/d2"), rule("fail_dir", b=6, directory="/data/d1"),
            submit("reassign_api", {4: [4, 2, 3]}), rule("tick", n=1), rule("fail_dir", b=1, directory="/data/d2"),
            submit("queue", {4: [1, 2, 3]}), rule("cancel_all"), rule("fail_dir", b=4, directory="/data/d2")])


def test_two_isr_members_found_offline_in_one_step_get_an_unclean_leader_where_allowed(monkeypatch):
    monkeypatch.setattr(test_stateful, "UNCLEAN", True)
    replay([rule("expire_active"), rule("toggle_broker", b=5), rule("start_controller"), rule("expire_active"),
            rule("toggle_broker", b=5), rule("start_controller"), rule("expire_active"), rule("start_controller"),
            rule("expire_active"), rule("fail_dir", b=3, directory="/data/d2"),
            rule("fail_dir", b=4, directory="/data/d2"), rule("start_controller")])


def test_directories_failing_between_controllers_leave_no_partition_leaderless_where_unclean_is_allowed(monkeypatch):
    monkeypatch.setattr(test_stateful, "UNCLEAN", True)
    replay([rule("expire_active"), rule("fail_dir", b=1, directory="/data/d2"),
            rule("fail_dir", b=2, directory="/data/d1"), rule("start_controller"), rule("toggle_broker", b=5),
            rule("expire_active"), rule("start_controller"), rule("expire_active"), rule("start_controller"),
            rule("start_controller"), rule("fail_dir", b=3, directory="/data/d2"),
            rule("fail_dir", b=4, directory="/data/d2"), rule("cancel_api", partitions={0}), rule("expire_active"),
            rule("expire_active"), rule("start_controller"), rule("fail_dir", b=1, directory="/data/d1"),
            rule("fail_dir", b=2, directory="/data/d2"), rule("expire_active"), rule("start_controller"),
            submit("queue", {1: [1, 2, 3]})])


def test_a_failure_taking_an_in_sync_added_replica_out_of_the_isr_starts_no_copy(monkeypatch):
    monkeypatch.setattr(test_stateful, "CAPS", test_stateful.TIGHT_CAPS)
    replay([submit("queue", {2: [1, 2, 3]}), submit("queue", {0: [1, 2, 3]}),
            submit("queue", {1: [2, 3, 4], 2: [1, 2, 3], 3: [1, 2, 3]}), rule("tick", n=2),
            rule("crash_active_after", k=5), rule("tick", n=2), submit("retarget", {1: [1, 2, 3]}),
            rule("start_controller"), rule("fail_dir", b=2, directory="/data/d1")])


def test_two_overrides_waiting_for_each_others_slot_do_not_fail_each_others_finish_for_ever(monkeypatch):
    monkeypatch.setattr(test_stateful, "CAPS", test_stateful.TIGHT_CAPS)
    replay([submit("reassign_api", {0: [1, 4, 2], 1: [1, 2, 3], 2: [1, 3, 2], 3: [1, 3, 4], 4: [1, 3, 2]}),
            rule("cancel_api", partitions={0, 1, 2, 3, 4, 5}),
            rule("move_log_dir", directory="/data/d1", i=0, p=0), rule("move_log_dir", directory="/data/d1", i=0, p=0),
            submit("reassign_api", {0: [1, 4, 2], 1: [1, 3, 4], 2: [1, 2, 4], 3: [3, 1, 4], 4: [4, 2, 3], 5: [2, 4, 1]}),
            rule("fail_dir", b=4, directory="/data/d2"), rule("start_controller"),
            submit("reassign_api", {0: [2, 4, 1], 1: [3, 1, 4], 2: [1, 3, 4], 3: [4, 1, 2], 4: [2, 4, 1], 5: [4, 1, 2]}),
            rule("cancel_api", partitions={2}),
            submit("retarget", {0: [1, 3, 2], 1: [3, 2, 4], 2: [1, 4, 3], 3: [1, 4, 2], 5: [3, 1, 2]}),
            rule("cancel_api", partitions={0, 2, 3, 4}),
            submit("retarget", {0: [4, 2, 3], 1: [4, 3, 1], 2: [4, 3, 2], 3: [3, 1, 4], 5: [1, 4, 3]})])


def test_a_resumed_move_left_with_only_its_finish_takes_its_new_target_after_it_under_the_cluster_cap(monkeypatch):
    monkeypatch.setattr(test_stateful, "CAPS", test_stateful.TIGHT_CAPS)
    replay([rule("toggle_broker", b=5), rule("toggle_broker", b=5),
            rule("cut_flush", deposing=False, point=("start", "requests")),
            submit("queue", {0: [1, 2, 3]}), rule("tick", n=1),
            submit("queue", {0: [1, 2, 4], 1: [1, 3, 4], 2: [1, 2, 3], 3: [1, 2, 3]})])


def test_a_rollback_cut_before_its_finish_beside_the_move_started_in_its_slot_copies_nothing(monkeypatch):
    monkeypatch.setattr(test_stateful, "CAPS", test_stateful.TIGHT_CAPS)
    replay([submit("queue", {0: [1, 2, 3], 1: [1, 2, 3], 2: [2, 3, 4], 3: [1, 2, 3], 4: [1, 2, 3]}),
            rule("toggle_broker", b=6), submit("queue", {0: [1, 2, 3]}), rule("crash_active_after", k=4),
            rule("depose_active_after", k=6), submit("queue", {2: [1, 2, 3]})])


def test_a_broker_whose_every_directory_failed_is_no_online_isr_member(monkeypatch):
    monkeypatch.setattr(test_stateful, "UNCLEAN", True)
    replay([rule("expire_active"), rule("cancel_all"), rule("fail_dir", b=1, directory="/data/d1"),
            rule("fail_dir", b=2, directory="/data/d1"), rule("fail_dir", b=3, directory="/data/d1"),
            submit("queue", {0: [1, 2, 3]}), submit("submit", {0: [1, 2, 3], 5: [1, 2, 4]}),
            rule("fail_dir", b=4, directory="/data/d1"), rule("fail_dir", b=4, directory="/data/d2"),
            rule("start_controller")])
