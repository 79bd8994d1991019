"""The chaos checker on hand-written histories: a clean one passes, and each kind of violation
(a lost request, a zombie write, a stranded throttle, a partition with no ISR, no quiescence,
a cap exceeded, a moment that never settled, a leader epoch going back, a topic created,
grown or deleted other than its answers said) fails it with a message that names it."""

from __future__ import annotations

import copy

import pytest

from tests.chaos.checker import check, p99, settled_problems

R0 = [1, 2, 3]
T1 = [4, 5, 6]
T2 = [1, 5, 6]


def _history(final_replicas=T1, ops=None, extra=(), moving=None) -> list[dict]:
    ops = ops if ops is not None else [_submit(1, {"orders/0": T1})]
    moving = {"orders/0": _moving(T1, R0, isr=R0)} if moving is None else moving
    return [
        {"type": "meta", "t": 0.0, "seed": 1, "caps": CAPS},
        {"type": "initial", "t": 0.0, "assignments": {"orders/0": R0, "orders/1": R0}},
        {"type": "epoch", "t": 0.5, "epoch": 1, "version": 0, "mzxid": 100},
        {"type": "audit", "event": "elected", "controller": 101, "epoch": 1, "epoch_zkversion": 0, "mzxid": None},
        {"type": "audit", "event": "write", "controller": 101, "epoch": 1, "epoch_zkversion": 0, "zxid": 120,
         "after_zxid": 110, "upto_zxid": 120, "ops": [["create", "/admin/reassignments/orders/0"]]},
        *ops,
        {"type": "moves", "t": 1.2, "moving": moving},
        {"type": "state", "t": 2.0, "tp": "orders/0", "leader": 4, "isr": [4, 5, 6], "leader_epoch": 2, "mzxid": 130},
        {"type": "moves", "t": 2.1, "moving": {}},
        {"type": "fault", "t": 3.0, "id": 1, "kind": "zombie", "t0": 2.0, "t_heal": 3.0, "target": 101},
        {"type": "epoch", "t": 3.0, "epoch": 2, "version": 1, "mzxid": 200},
        {"type": "audit", "event": "elected", "controller": 102, "epoch": 2, "epoch_zkversion": 1, "mzxid": 200},
        {"type": "audit", "event": "write", "controller": 102, "epoch": 2, "epoch_zkversion": 1, "zxid": None,
         "after_zxid": 205, "upto_zxid": 212, "ops": [["delete", "/admin/reassign_partitions"]]},
        {"type": "audit", "event": "fenced", "controller": 101, "epoch": 1, "epoch_zkversion": 0, "ops": [["set", "/x"]]},
        {"type": "quiesced", "t": 5.0, "fault": 1, "seconds": 2.0, "ok": True, "left": {}},
        _settled(final_replicas),
        *extra,
        {"type": "final", "t": 6.0,
         "assignments": {"orders/0": {"replicas": final_replicas, "adding": [], "removing": []},
                         "orders/1": {"replicas": R0, "adding": [], "removing": []}},
         "throttles": {}, "removal_lists": {"/admin/throttled_rates_removal": []}},
    ]


# Tight enough that the clean history's one move stands at the per-broker caps.
CAPS = {"max_incoming_per_broker": 1, "max_outgoing_per_broker": 1, "max_cluster_moves": 2}


def _moving(target, before, isr):
    """A moves sample's entry for a move from ``before`` to ``target`` (Kafka's RS = TRS + RR)."""
    adding = [b for b in target if b not in before]
    removing = [b for b in before if b not in target]
    return {"replicas": target + removing, "adding": adding, "removing": removing, "isr": isr}


def _settled(orders0=T1, why="quiescent", fault=1):
    """The clean snapshot at the quiescence after fault 1: orders/0 on ``orders0`` at leader
    epoch 2, orders/1 on R0 at epoch 0, every broker live and hosting exactly its replicas."""
    assignments = {"orders/0": list(orders0), "orders/1": R0}
    epochs = {"orders/0": 2, "orders/1": 0}
    hosted = {str(b): {tp: epochs[tp] for tp, r in assignments.items() if b in r} for b in range(1, 7)}
    return {"type": "settled", "t": 5.5, "fault": fault, "why": why, "waited_s": 0.0, "live": [1, 2, 3, 4, 5, 6],
            "states": {"orders/0": {"leader": orders0[0], "isr": list(orders0), "leader_epoch": 2},
                       "orders/1": {"leader": 1, "isr": R0, "leader_epoch": 0}},
            "assignments": assignments, "hosted": hosted}


def _submit(op_id, targets, t0=1.0, outcome="accepted", results=None, door="reassign"):
    return {"type": "op", "id": op_id, "door": door, "kind": "submit", "t0": t0, "t1": t0 + 0.1,
            "outcome": outcome, "targets": targets, **({"results": results} if results is not None else {})}


def _cancel(op_id, partitions, results, t0=1.5, outcome="accepted"):
    return {"type": "op", "id": op_id, "door": "cancel", "kind": "cancel", "t0": t0, "t1": t0 + 0.1,
            "outcome": outcome, "partitions": partitions, "results": results}


def test_a_clean_history_passes_with_its_figures():
    report = check(_history())
    assert report.ok, report.violations
    figures = report.figures()
    assert list(figures)[-6:] == ["faults_injected", "faults_survived", "requests", "requests_lost",
                                  "zombie_writes", "quiesce_seconds_p99"]
    assert figures["faults_injected"] == figures["faults_survived"] == 1
    assert figures["requests"] == 1 and figures["requests_lost"] == 0 and figures["zombie_writes"] == 0
    assert figures["zombie_writes_fenced"] == 1 and figures["quiesce_seconds_p99"] == 2.0


def test_a_lost_request_fails():
    report = check(_history(final_replicas=R0))
    assert not report.ok and report.requests_lost == 1
    assert "lost request: orders/0 ended on [1, 2, 3]" in report.violations[0]


def test_a_half_moved_partition_fails():
    history = _history()
    history[-1]["assignments"]["orders/0"] = {"replicas": T1 + [1], "adding": [], "removing": [1]}
    report = check(history)
    assert report.requests_lost == 1 and "half-moved" in report.violations[0]


def test_an_override_must_end_on_the_newer_target():
    ops = [_submit(1, {"orders/0": T1}), _submit(2, {"orders/0": T2}, t0=1.5, door="alter")]
    assert check(_history(final_replicas=T2, ops=ops)).ok
    assert check(_history(final_replicas=T1, ops=ops)).requests_lost == 1


def test_a_reported_cancel_must_end_on_the_original_replicas():
    ops = [_submit(1, {"orders/0": T1}), _cancel(2, ["orders/0"], {"orders/0": 0})]
    assert check(_history(final_replicas=R0, ops=ops)).ok
    report = check(_history(final_replicas=T1, ops=ops))
    assert report.requests_lost == 1 and "expected one of [[1, 2, 3]]" in report.violations[0]


def test_a_cancel_that_found_nothing_running_changes_nothing():
    ops = [_submit(1, {"orders/0": T1}), _cancel(2, ["orders/0"], {"orders/0": 85})]
    assert check(_history(final_replicas=T1, ops=ops)).ok
    assert not check(_history(final_replicas=R0, ops=ops)).ok


def test_refused_and_in_doubt_requests():
    refused = [_submit(1, {"orders/0": T1}, outcome="refused")]
    assert check(_history(final_replicas=R0, ops=refused)).ok
    assert not check(_history(final_replicas=T1, ops=refused)).ok  # nothing asked for T1
    doubt = [_submit(1, {"orders/0": T1}, outcome="in_doubt")]
    assert check(_history(final_replicas=R0, ops=doubt)).ok
    assert check(_history(final_replicas=T1, ops=doubt)).ok
    per_partition = [_submit(1, {"orders/0": T1}, results={"orders/0": 39})]
    assert check(_history(final_replicas=R0, ops=per_partition)).ok
    assert not check(_history(final_replicas=T1, ops=per_partition)).ok
    broke_off = [_submit(1, {"orders/0": T1}, outcome="refused", results={"orders/0": -1})]  # may have landed
    assert check(_history(final_replicas=R0, ops=broke_off)).ok
    assert check(_history(final_replicas=T1, ops=broke_off)).ok


def test_an_entry_the_controller_reported_dropping_is_a_skip_with_its_reason():
    skip = {"type": "reported_skip", "t": 1.2, "tp": "orders/0", "target": T1, "reason": "broker 6 is not registered"}
    assert check(_history(final_replicas=R0, extra=[skip])).ok
    early = dict(skip, t=0.5)  # reported before the request: not about it
    assert not check(_history(final_replicas=R0, extra=[early])).ok


def test_a_dropped_target_that_replaced_a_waiting_one_leaves_the_partition_where_it_was():
    # T1 accepted (waiting for a slot), T2 accepted in its place, then dropped when the controller
    # read it (a broker of it gone by then): the partition stays on R0, where it was before T1
    # (chaos seed 142 once ended so, and the checker had wanted T1 or T2).
    ops = [_submit(1, {"orders/0": T1}), _submit(2, {"orders/0": T2}, t0=1.05)]
    skip = {"type": "reported_skip", "t": 1.3, "tp": "orders/0", "target": T2, "reason": "unknown broker(s) [1]"}
    other = {"orders/1": _moving(T1, R0, isr=R0)}  # orders/0 never seen moving (T1 waited for a slot)
    for final in (R0, T1, T2):
        assert check(_history(final_replicas=final, ops=ops, extra=[skip], moving=other)).ok, final
    report = check(_history(final_replicas=[2, 3, 4], ops=ops, extra=[skip], moving=other))
    assert any(v.startswith("lost request: orders/0 ended on [2, 3, 4]") for v in report.violations)
    assert not check(_history(final_replicas=R0, ops=ops, moving=other)).ok  # not dropped: T2 it is
    # T1 seen moving before the drop: its move goes on, so back on R0 is a lost request
    report = check(_history(final_replicas=R0, ops=ops, extra=[skip]))
    assert any(v.startswith("lost request: orders/0 ended on [1, 2, 3]") for v in report.violations)
    assert check(_history(final_replicas=T1, ops=ops, extra=[skip])).ok


def test_a_dropped_queued_target_may_leave_the_running_move_rolled_back():
    # KIP-236: a queued target cancels the running move, then reassigns; dropped after the
    # cancel (a broker of it gone meanwhile), the partition ends where it was before the move
    # (chaos seed 142 ended orders/0 so, the checker wanting the running move's target or the
    # queued one). Through another door the dropped entry leaves the running move going on.
    ops = [_submit(1, {"orders/0": T1}), _submit(2, {"orders/0": T2}, t0=1.3, door="queue")]
    skip = {"type": "reported_skip", "t": 1.6, "tp": "orders/0", "target": T2, "reason": "unknown broker(s) [1]"}
    for final in (R0, T1):
        assert check(_history(final_replicas=final, ops=ops, extra=[skip])).ok, final
    assert not check(_history(final_replicas=[2, 3, 4], ops=ops, extra=[skip])).ok
    other_door = [_submit(1, {"orders/0": T1}), _submit(2, {"orders/0": T2}, t0=1.3, door="alter")]
    assert not check(_history(final_replicas=R0, ops=other_door, extra=[skip])).ok


def test_a_write_landing_after_the_next_epoch_is_a_zombie_write():
    zombie = {"type": "audit", "event": "write", "controller": 101, "epoch": 1, "epoch_zkversion": 0, "zxid": 230,
              "after_zxid": 220, "upto_zxid": 230, "ops": [["set", "/brokers/topics/orders"]]}
    report = check(_history(extra=[zombie]))
    assert report.zombie_writes == 1
    assert "zombie write: controller 101 (epoch 1" in report.violations[0] and "epoch 2 was current" in report.violations[0]


def test_a_write_without_its_own_zxid_is_bounded_by_what_its_client_saw():
    late = {"type": "audit", "event": "write", "controller": 101, "epoch": 1, "epoch_zkversion": 0, "zxid": None,
            "after_zxid": 200, "upto_zxid": 240, "ops": [["delete", "/admin/reassignments/orders/0"]]}
    assert check(_history(extra=[late])).zombie_writes == 1
    straddling = dict(late, after_zxid=190)  # may have landed before epoch 2: not provably late
    assert check(_history(extra=[straddling])).zombie_writes == 0


def test_a_write_under_another_epochs_zkversion_is_a_zombie_write():
    confused = {"type": "audit", "event": "write", "controller": 103, "epoch": 1, "epoch_zkversion": 1, "zxid": 250,
                "after_zxid": 240, "upto_zxid": 250, "ops": [["set", "/x"]]}
    report = check(_history(extra=[confused]))
    assert report.zombie_writes == 1 and "which is epoch 2" in report.violations[0]


def test_an_unfenced_write_of_a_controller_owned_znode_fails_whenever_it_landed():
    # In its own epoch, before any other controller: still a fence bypassed.
    bypass = {"type": "audit", "event": "write", "fenced": False, "controller": 101, "epoch": 1, "epoch_zkversion": 0,
              "zxid": 125, "after_zxid": 121, "upto_zxid": 125, "ops": [["set", "/brokers/topics/orders"]]}
    report = check(_history(extra=[bypass]))
    assert report.unfenced_writes == 1 and report.zombie_writes == 0
    assert report.violations == ["unfenced write: controller 101 (epoch 1, session None) wrote [['set', '/brokers/topics/orders']] "
                                 "without the epoch check"]
    # After the next epoch began: a zombie write too.
    late = dict(bypass, zxid=230, after_zxid=220, upto_zxid=230)
    report = check(_history(extra=[late]))
    assert report.unfenced_writes == 1 and report.zombie_writes == 1
    # From a controller that never won an election.
    standby = dict(bypass, controller=103, epoch=None, epoch_zkversion=None)
    assert check(_history(extra=[standby])).unfenced_writes == 1


@pytest.mark.parametrize("path", ["/reassignd/controllers/101", "/config/topics/orders", "/config/changes/config_change_0000000001",
                                  "/kafka-acl/Topic/orders", "/controller"])
def test_unfenced_writes_no_epoch_guards_are_fine(path):
    write = {"type": "audit", "event": "write", "fenced": False, "controller": 102, "epoch": 2, "epoch_zkversion": 1,
             "zxid": None, "after_zxid": 300, "upto_zxid": 301, "ops": [["create", path]]}
    report = check(_history(extra=[write]))
    assert report.ok, report.violations


def test_a_state_written_with_an_epoch_not_yet_won_fails():
    ahead = {"type": "state", "t": 2.5, "tp": "orders/1", "leader": 1, "isr": R0, "controller_epoch": 2, "mzxid": 150}
    report = check(_history(extra=[ahead]))
    assert "state from a future epoch: orders/1" in report.violations[0]
    assert check(_history(extra=[dict(ahead, mzxid=250)])).ok  # epoch 2 began at zxid 200
    assert check(_history(extra=[dict(ahead, controller_epoch=1, mzxid=250)])).ok  # a broker's stale epoch


def test_a_stranded_throttle_fails():
    history = _history()
    history[-1]["throttles"] = {"brokers/4": {"leader.replication.throttled.rate": "1000000"}}
    report = check(history)
    assert report.stranded_throttles == 1 and "stranded throttle: brokers/4" in report.violations[0]
    history = _history()
    history[-1]["removal_lists"] = {"/admin/throttled_rates_removal": [4]}
    assert check(history).stranded_throttles == 1


def test_a_preferred_election_znode_left_at_the_end_fails_and_its_op_changes_no_replicas():
    history = _history()
    assert check(history).ok
    history[-1]["preferred_election_left"] = True
    assert "/admin/preferred_replica_election left" in check(history).violations[0]
    elect = {"type": "op", "id": 99, "door": "elect_znode", "kind": "elect", "partitions": ["orders/1"],
             "t0": 2.2, "t1": 2.3, "outcome": "accepted"}
    assert check(_history(extra=[elect])).ok  # an election moves no replica


@pytest.mark.parametrize("state", [{"leader": -1, "isr": []}, {"leader": 4, "isr": [5, 6]}])
def test_a_partition_without_its_leader_in_sync_fails(state):
    bad = {"type": "state", "t": 2.5, "tp": "orders/1", "mzxid": 140, **state}
    report = check(_history(extra=[bad]))
    assert report.isr_violations == 1 and "orders/1" in report.violations[0]


def test_no_quiescence_within_the_bound_fails():
    history = _history()
    slow = next(r for r in history if r["type"] == "quiesced")
    slow.update(seconds=130.0)
    report = check(history, quiesce_bound_s=120)
    assert report.faults_survived == 0 and "no quiescence after fault 1 (zombie)" in report.violations[0]
    stuck = copy.deepcopy(_history())
    next(r for r in stuck if r["type"] == "quiesced").update(ok=False, left={"records": ["orders/0"]})
    assert not check(stuck).ok


def test_a_controller_that_exited_on_its_own_fails():
    crash = {"type": "crash", "t": 4.0, "controller": 102, "returncode": 1}
    assert "controller 102 exited on its own" in check(_history(extra=[crash])).violations[0]


def test_p99_is_nearest_rank():
    assert p99([]) == 0.0
    assert p99([3.0, 1.0, 2.0]) == 3.0
    assert p99([float(i) for i in range(1, 201)]) == 198.0


def test_a_history_with_no_audited_write_fails():
    """Without the audits the zombie and fence checks see nothing: zombie_writes=0 and
    unfenced_writes=0 would hold whatever the controllers did, so the run itself fails."""
    history = [r for r in _history() if not (r["type"] == "audit" and r["event"] == "write")]
    report = check(history)
    assert report.writes_audited == 0 and report.zombie_writes == 0 and report.unfenced_writes == 0
    assert report.violations == ["no write was audited: the zombie and fence checks had nothing to judge"]


def test_only_unguarded_unfenced_writes_count_as_nothing_audited():
    """A write outside a fenced multi of a znode no epoch guards is not an audited write."""
    history = [r for r in _history() if not (r["type"] == "audit" and r["event"] == "write")]
    history.insert(-1, {"type": "audit", "event": "write", "fenced": False, "controller": 102, "epoch": 2,
                        "epoch_zkversion": 1, "zxid": 240, "ops": [["create", "/reassignd/controllers/102"]]})
    assert "no write was audited" in " ".join(check(history).violations)


# ---- issue 25 item 6: caps, settled moments, leader epochs ---------------------------------------


def _with(history: list[dict], *records: dict) -> list[dict]:
    """``history`` with ``records`` put before its final record."""
    return history[:-1] + list(records) + history[-1:]


def test_the_clean_history_judged_its_caps_and_its_settled_moment():
    report = check(_history())
    assert report.caps_samples == 1 and report.caps_reached == 1 and report.caps_violations == 0
    assert report.settled_snapshots == 1 and report.settled_violations == 0 and report.epoch_violations == 0


def test_a_broker_receiving_more_copies_than_its_cap_fails():
    # orders/0 and orders/1 both adding a replica to broker 6, out of the ISR: 2 > 1.
    over = {"type": "moves", "t": 1.8, "moving": {"orders/0": _moving(T1, R0, isr=R0),
                                                   "orders/1": _moving([1, 2, 6], R0, isr=R0)}}
    report = check(_with(_history(), over))
    assert report.caps_violations >= 1
    assert any("caps exceeded at t=1.80: incoming cap 1 of broker 6: 2 moves ['orders/0', 'orders/1']" in v
               for v in report.violations), report.violations
    # The same moves with orders/1's new replica already in sync: it copies nothing more.
    done = {"type": "moves", "t": 1.8, "moving": {"orders/0": _moving(T1, R0, isr=R0),
                                                   "orders/1": _moving([1, 2, 6], R0, isr=[1, 2, 3, 6])}}
    assert check(_with(_history(), done)).ok


def test_outgoing_and_cluster_caps_bind_too():
    two_out = {"type": "moves", "t": 1.8, "moving": {"orders/0": _moving([4, 2, 3], R0, isr=R0),
                                                      "orders/1": _moving([5, 2, 3], R0, isr=R0)}}
    violations = check(_with(_history(), two_out)).violations
    assert any("outgoing cap 1 of broker 1: 2 moves" in v for v in violations), violations
    three = {f"t/{i}": _moving([4 + i], [1 + i], isr=[1 + i]) for i in range(3)}
    violations = check(_with(_history(), {"type": "moves", "t": 1.8, "moving": three})).violations
    assert any("cluster cap 2: 3 moves copying" in v for v in violations), violations


def test_a_rollback_or_a_replica_once_in_sync_copies_nothing():
    # Three moves at a cluster cap of 2, but only t/0 and t/1 add a replica out of the ISR:
    # t/2 rolls back (it adds nothing) while stopped broker 6 keeps its original replica out of
    # the ISR, which the old rule (the target not all in the ISR) counted as a third copy.
    rollback = {"replicas": [6, 4, 5, 1], "adding": [], "removing": [1], "isr": [4, 5]}
    three = {"t/0": _moving([4], [1], isr=[1]), "t/1": _moving([5], [2], isr=[2]), "t/2": rollback}
    assert check(_with(_history(), {"type": "moves", "t": 1.8, "moving": three})).ok
    # A replica seen in sync for its move that falls out again (its broker stopped) is not a
    # new copy while the move's RS stays; a fourth move copying still breaks the cap.
    seen = {"t/0": _moving([4], [1], isr=[1]), "t/1": _moving([5], [2], isr=[2]), "t/3": _moving([6], [3], isr=[3, 6])}
    lost = {**seen, "t/3": _moving([6], [3], isr=[3])}
    assert check(_with(_history(), {"type": "moves", "t": 1.7, "moving": seen},
                       {"type": "moves", "t": 1.8, "moving": lost})).ok
    four = {**lost, "t/4": _moving([2], [5], isr=[5])}
    violations = check(_with(_history(), {"type": "moves", "t": 1.7, "moving": seen},
                             {"type": "moves", "t": 1.8, "moving": four})).violations
    assert any("cluster cap 2: 3 moves copying ['t/0', 't/1', 't/4']" in v for v in violations), violations


def test_a_history_without_a_sampled_move_or_without_caps_fails():
    quiet = [r for r in _history() if r["type"] != "moves" or not r["moving"]]
    assert "no move was sampled: the caps check had nothing to judge" in check(quiet).violations
    capless = _history()
    del capless[0]["caps"]
    assert "history has no caps (meta): the caps check cannot run" in check(capless).violations


def test_a_live_in_sync_replica_without_a_live_leader_fails():
    down = _settled(why="broker_down")
    down.update(live=[1, 2, 3, 5, 6])  # broker 4 stopped, still leading orders/0 with 5 and 6 in sync
    del down["hosted"]
    report = check(_with(_history(), down))
    assert report.settled_violations == 1
    assert "not settled after fault 1 (broker_down, looked for 0.0s): no live leader: orders/0 has live in-sync " \
           "replicas [5, 6] and leader 4" in report.violations[0]
    # Leaderless with no live in-sync replica left is what an election without one gives.
    down["states"]["orders/0"].update(isr=[4], leader=-1)
    assert check(_with(_history(), down)).ok


def test_a_finished_rollbacks_added_replica_left_on_a_broker_fails():
    # Rolled back to R0: broker 4 still hosts the replica the move had added.
    ops = [_submit(1, {"orders/0": T1}), _cancel(2, ["orders/0"], {"orders/0": 0})]
    history = _history(final_replicas=R0, ops=ops)
    snapshot = next(r for r in history if r["type"] == "settled")
    snapshot["hosted"]["4"]["orders/0"] = 2
    report = check(history)
    assert report.settled_violations == 1 and "broker 4 hosts replicas not assigned to it" in report.violations[0]
    assert "['orders/0']" in report.violations[0]


def test_a_missing_replica_and_a_stale_epoch_at_a_broker_fail():
    history = _history()
    snapshot = next(r for r in history if r["type"] == "settled")
    del snapshot["hosted"]["5"]["orders/0"]
    snapshot["hosted"]["6"]["orders/0"] = 1  # the LeaderAndIsr of epoch 2 never reached it
    violations = check(history).violations
    assert "broker 5 lacks replicas assigned to it: ['orders/0']" in violations[0]
    assert "leader epoch at broker 6: orders/0 holds epoch 1, its state znode 2" in violations[1]


def test_a_quiescence_without_its_snapshot_or_with_an_unreadable_one_fails():
    history = [r for r in _history() if r["type"] != "settled"]
    assert check(history).violations == [
        "no settled snapshot at the quiescence after fault 1: leaders, hosting and the brokers' epochs went unchecked"]
    unreadable = {"type": "settled", "t": 5.5, "fault": 1, "why": "quiescent", "waited_s": 30.1, "error": "ConnectionLoss()"}
    violations = check(_with(history, unreadable)).violations
    assert violations == ["not settled after fault 1 (quiescent, looked for 30.1s): no snapshot could be read: ConnectionLoss()"]


@pytest.mark.parametrize("later", [
    {"leader": 4, "leader_epoch": 1},  # went back
    {"leader": 5, "leader_epoch": 2},  # a new leader under the old epoch
])
def test_a_leader_epoch_that_does_not_grow_fails(later):
    sample = {"type": "state", "t": 2.5, "tp": "orders/0", "isr": [4, 5, 6], "mzxid": 140, **later}
    report = check(_with(_history(), sample))
    assert report.epoch_violations == 1 and report.violations[0].startswith("leader epoch ")
    assert "orders/0 leader 4 epoch 2 (zxid 0x82)" in report.violations[0]


def test_leader_epochs_are_judged_in_zxid_order_not_sampling_order():
    # Recorded after the epoch-2 sample but written before it (zxid 0x78 < 0x82): growth.
    earlier = {"type": "state", "t": 2.5, "tp": "orders/0", "leader": 1, "isr": R0, "leader_epoch": 1, "mzxid": 120}
    assert check(_with(_history(), earlier)).ok


def test_an_isr_change_keeps_the_epoch():
    shrink = {"type": "state", "t": 2.5, "tp": "orders/0", "leader": 4, "isr": [4, 5], "leader_epoch": 2, "mzxid": 140}
    assert check(_with(_history(), shrink)).ok


# ---- check 10: the workload's topics (KIP-4) ---------------------------------------------------

BROKERS = [1, 2, 3, 4, 5, 6]


def _topic_op(op_id, kind, topic, outcome="accepted", code=0, door=None, t0=None, **fields):
    """A topic op as the workload records it (``code`` None: a ZooKeeper door's, no answer)."""
    t0 = 1.0 + op_id / 100 if t0 is None else t0
    return {"type": "op", "id": op_id, "door": door or kind, "kind": kind, "topic": topic, "t0": t0, "t1": t0 + 0.01,
            "outcome": outcome, **({"results": {topic: code}} if code is not None else {}), **fields}


def _create(op_id, topic, partitions=2, rf=2, assignment=None, **kw):
    return _topic_op(op_id, "create_topic", topic, partitions=partitions, replication_factor=rf,
                     assignment=assignment, **kw)


def _grow(op_id, topic, count, assignment=None, **kw):
    return _topic_op(op_id, "create_partitions", topic, count=count, assignment=assignment, **kw)


def _delete(op_id, topic, **kw):
    return _topic_op(op_id, "delete_topic", topic, **kw)


def _topic(partitions: dict[int, list[int]], epoch=0, states=None) -> dict:
    """A final topic entry (cluster.read_topics), each partition led by its first replica."""
    default = {p: {"leader": r[0], "isr": list(r), "leader_epoch": epoch} for p, r in partitions.items()}
    states = default if states is None else {**default, **states}
    return {"partitions": {str(p): list(r) for p, r in partitions.items()}, "adding": {}, "removing": {},
            "states": {str(p): s for p, s in states.items()}, "extra_states": []}


# The clean run's topics: t1 created with 2 partitions and grown to 3; t2 created through
# ZooKeeper with its own assignment, then deleted; t3 refused (replication factor 7).
GROWN = {0: [1, 2], 1: [3, 4], 2: [5, 6]}
CLEAN_TOPIC_OPS = [
    _create(10, "chaos-t1", partitions=2, rf=2),
    _grow(11, "chaos-t1", 3),
    _create(12, "chaos-t2", partitions=1, rf=3, assignment=[[4, 5, 6]], code=None, door="create_topic_znode"),
    _delete(13, "chaos-t2"),
    _create(14, "chaos-t3", partitions=1, rf=7, outcome="refused", code=38),
]


def _topics_history(ops=CLEAN_TOPIC_OPS, topics=None, **final) -> list[dict]:
    """The clean history plus topic ops, its final record observing ``topics`` (default: t1 as
    GROWN), every broker hosting exactly what they assign and every controller answering Metadata
    with them; ``final`` overrides any field of the final record."""
    topics = {"chaos-t1": _topic(GROWN)} if topics is None else topics
    history = _history(extra=copy.deepcopy(ops))
    hosted = {str(b): {f"{t}/{p}": topic["states"][p]["leader_epoch"] if topic["states"][p] else 0
                       for t, topic in topics.items() for p, r in topic["partitions"].items() if b in r}
              for b in BROKERS}
    hosted["4"]["orders/0"] = 2  # the initial topics' replicas are check 8's, not these rules'
    listed = {t: dict(topic["partitions"]) for t, topic in topics.items()}
    history[-1].update(topics=copy.deepcopy(topics), delete_markers=[], topic_configs=sorted(topics) + ["orders"],
                       reassignment_topics=[], live=BROKERS, hosted=hosted,
                       metadata={cid: {"topics": copy.deepcopy(listed)} for cid in ("101", "102", "103")})
    history[-1].update(final)
    return history


def _topic_violations(history) -> list[str]:
    report = check(history)
    assert report.topic_violations == len(report.violations), report.violations  # nothing else went wrong
    return report.violations


def test_a_clean_topic_history_passes_with_its_figures():
    report = check(_topics_history())
    assert report.ok, report.violations
    figures = report.figures()
    assert figures["topic_ops"] == 5 and figures["topic_ops_accepted"] == 4 and figures["topic_ops_in_doubt"] == 0
    assert figures["topics_at_end"] == 1 and figures["topic_violations"] == 0
    assert figures["requests"] == 1  # the reassignment doors' alone
    assert list(figures)[-6:][0] == "faults_injected"


def test_a_topic_ops_history_without_a_topic_observation_fails():
    history = _history(extra=copy.deepcopy(CLEAN_TOPIC_OPS))
    assert _topic_violations(history) == ["the final state has no topic observation: the topic ops went unchecked"]


def test_an_accepted_create_must_leave_its_topic():
    violations = _topic_violations(_topics_history(topics={}))
    assert violations[0] == ("lost topic: chaos-t1 is gone, expected one of ['3 partition(s) of RF 2'] "
                             "(last accepted: op 11 create_partitions create_partitions)")


def test_an_accepted_create_partitions_fixes_the_count_and_one_in_doubt_allows_either():
    two = {"chaos-t1": _topic({0: [1, 2], 1: [3, 4]})}
    violations = _topic_violations(_topics_history(topics=two))
    assert len(violations) == 1 and violations[0].startswith("topic chaos-t1 ended with 2 partition(s)")
    assert "expected one of ['3 partition(s) of RF 2']" in violations[0]
    doubt = copy.deepcopy(CLEAN_TOPIC_OPS)
    doubt[1].update(outcome="in_doubt", results={"chaos-t1": 7})  # REQUEST_TIMED_OUT: it may go on
    assert check(_topics_history(ops=doubt, topics=two)).ok
    assert check(_topics_history(ops=doubt)).ok
    four = {"chaos-t1": _topic({**GROWN, 3: [2, 3]})}
    assert _topic_violations(_topics_history(ops=doubt, topics=four))[0].startswith("topic chaos-t1 ended with 4")
    # Its code decides, whatever the outcome recorded: UNKNOWN_SERVER_ERROR (the write broke off).
    broke_off = copy.deepcopy(CLEAN_TOPIC_OPS)
    broke_off[1].update(outcome="refused", results={"chaos-t1": -1})
    assert check(_topics_history(ops=broke_off, topics=two)).ok and check(_topics_history(ops=broke_off)).ok


def test_a_refused_create_partitions_changes_nothing():
    ops = copy.deepcopy(CLEAN_TOPIC_OPS)
    ops[1].update(outcome="refused", results={"chaos-t1": 37})
    assert check(_topics_history(ops=ops, topics={"chaos-t1": _topic({0: [1, 2], 1: [3, 4]})})).ok
    assert "expected one of ['2 partition(s) of RF 2']" in _topic_violations(_topics_history(ops=ops))[0]


def test_a_created_topic_keeps_its_replication_factor_and_given_replicas():
    wide = {"chaos-t1": _topic({0: [1, 2], 1: [3, 4], 2: [5, 6, 1]})}
    assert "ended with 3 partition(s)" in _topic_violations(_topics_history(topics=wide))[0]
    given = [_create(10, "chaos-t1", partitions=2, rf=2, assignment=[[1, 2], [3, 4]]),
             _grow(11, "chaos-t1", 3, assignment=[[5, 6]])]
    assert check(_topics_history(ops=given)).ok
    moved = {"chaos-t1": _topic({0: [2, 1], 1: [3, 4], 2: [5, 6]})}  # not the list given for partition 0
    violations = _topic_violations(_topics_history(ops=given, topics=moved))
    assert "expected one of ['3 partition(s) of RF 2 with {0: (1, 2), 1: (3, 4), 2: (5, 6)} given']" in violations[0]


def test_an_accepted_delete_must_leave_nothing_of_the_topic():
    ops = CLEAN_TOPIC_OPS[:2] + [_delete(15, "chaos-t1")]
    assert check(_topics_history(ops=ops, topics={})).ok
    violations = _topic_violations(_topics_history(ops=ops))
    assert violations[0].startswith("topic chaos-t1 ended with 3 partition(s)") and "expected one of ['absent']" in violations[0]
    # Gone from ZooKeeper, but something of it left elsewhere: each is named.
    history = _topics_history(ops=ops, topics={})
    history[-1]["topic_configs"].append("chaos-t1")
    history[-1]["reassignment_topics"].append("chaos-t1")
    history[-1]["hosted"]["5"]["chaos-t1/2"] = 0
    history[-1]["metadata"]["102"]["topics"]["chaos-t1"] = {"0": [1, 2]}
    assert _topic_violations(history) == [
        "topic chaos-t1 is gone but /config/topics/chaos-t1 is left",
        "topic chaos-t1 is gone but reassignment records under /admin/reassignments/chaos-t1 are left",
        "topic chaos-t1 is gone but broker 5 still hosts ['chaos-t1/2']",
        "Metadata of controller 102 lists topic chaos-t1, which ZooKeeper does not have",
    ]


def test_an_in_doubt_delete_allows_either_outcome_but_no_half_state():
    ops = CLEAN_TOPIC_OPS[:2] + [_delete(15, "chaos-t1", outcome="in_doubt", code=None)]
    assert check(_topics_history(ops=ops, topics={})).ok
    assert check(_topics_history(ops=ops)).ok
    marker = _topics_history(ops=ops, topics={}, delete_markers=["chaos-t1"])
    assert _topic_violations(marker) == ["delete marker left after quiescence: /admin/delete_topics/chaos-t1"]
    half = {"chaos-t1": _topic(GROWN, states={1: None})}  # topic znode left, a partition's state gone
    assert _topic_violations(_topics_history(ops=ops, topics=half)) == [
        "topics at the end: no state znode: chaos-t1/1 (a created partition never given its leader)"]
    extra = {"chaos-t1": {**_topic({0: [1, 2], 1: [3, 4]}), "extra_states": ["2"]}}
    doubt_grow = copy.deepcopy(ops)
    doubt_grow[1].update(outcome="in_doubt", results={"chaos-t1": -1})
    assert _topic_violations(_topics_history(ops=doubt_grow, topics=extra)) == [
        "topic chaos-t1 has state znodes of partitions it does not have: ['2']"]


def test_a_refused_create_leaves_nothing_unless_an_earlier_create_may_have_made_it():
    left = {"chaos-t1": _topic(GROWN), "chaos-t3": _topic({0: [1, 2, 3]})}
    violations = _topic_violations(_topics_history(topics=left))
    assert violations == ["refused create left topic chaos-t3 behind (with 1 partition(s) {'0': [1, 2, 3]}): "
                          "op 14 create_topic (code 38)"]
    configs = _topics_history(topic_configs=["chaos-t1", "chaos-t3"])  # the config alone: half a creation
    assert _topic_violations(configs) == ["topic chaos-t3 is gone but /config/topics/chaos-t3 is left"]
    # Refused because it exists (TOPIC_ALREADY_EXISTS) after an accepted or in-doubt create: it stays.
    again = CLEAN_TOPIC_OPS + [_create(20, "chaos-t1", partitions=4, rf=3, outcome="refused", code=36)]
    assert check(_topics_history(ops=again)).ok
    doubt = [_create(10, "chaos-t1", partitions=3, outcome="in_doubt", code=None),
             _create(20, "chaos-t1", partitions=1, outcome="refused", code=36)]
    assert check(_topics_history(ops=doubt)).ok and check(_topics_history(ops=doubt, topics={})).ok


def test_an_acceptance_the_topic_could_not_have_had_fails():
    twice = CLEAN_TOPIC_OPS[:2] + [_create(20, "chaos-t1", partitions=3, rf=2)]  # TOPIC_ALREADY_EXISTS due
    violations = _topic_violations(_topics_history(ops=twice))
    assert violations == ["topic chaos-t1: op 20 (create_topic, accepted at t=1.20) created it although it existed "
                          "(['3 partition(s) of RF 2'])"]
    grown = [_grow(11, "chaos-t9", 2)]  # a topic never created
    violations = _topic_violations(_topics_history(ops=grown, topics={}))
    assert violations == ["topic chaos-t9: op 11 (create_partitions, accepted at t=1.11) grew it to 2 partitions "
                          "although it could only be ['absent']"]
    gone = [_delete(15, "chaos-t9")]
    assert _topic_violations(_topics_history(ops=gone, topics={})) == [
        "topic chaos-t9: op 15 (delete_topic, accepted at t=1.15) deleted it although it did not exist"]
    # A tool's marker says nothing of the topic: the controller drops a marker of no topic.
    marker = [_delete(15, "chaos-t9", door="delete_topic_znode", code=None)]
    assert check(_topics_history(ops=marker, topics={})).ok


def test_every_partition_of_a_topic_at_the_end_has_a_live_leader_in_its_isr():
    outside = {"chaos-t1": _topic(GROWN, states={0: {"leader": 1, "isr": [2], "leader_epoch": 0}})}
    assert _topic_violations(_topics_history(topics=outside)) == [
        "bad leader at the end: chaos-t1/0 (replicas [1, 2], leader 1, isr [2], live [1, 2, 3, 4, 5, 6])"]
    none = {"chaos-t1": _topic(GROWN, states={2: {"leader": -1, "isr": [5], "leader_epoch": 1}})}
    violations = _topic_violations(_topics_history(topics=none))
    assert violations[0].startswith("no leader at the end although a replica is live: chaos-t1/2")
    # Leaderless is right when none of its replicas is live (their brokers host nothing then).
    history = _topics_history(topics=none, live=[1, 2, 3, 4])
    for b in ("5", "6"):
        del history[-1]["hosted"][b]
    assert check(history).ok, check(history).violations


def test_the_brokers_host_exactly_a_topics_replicas_at_its_leader_epoch():
    history = _topics_history()
    del history[-1]["hosted"]["3"]["chaos-t1/1"]
    history[-1]["hosted"]["4"]["chaos-t1/0"] = 0
    history[-1]["hosted"]["5"]["chaos-t1/2"] = 3
    assert _topic_violations(history) == [
        "topics at the end: broker 3 lacks replicas assigned to it: ['chaos-t1/1']",
        "topics at the end: broker 4 hosts replicas not assigned to it (a finished move's, rollback's or override's "
        "removed replicas): ['chaos-t1/0']",
        "topics at the end: leader epoch at broker 5: chaos-t1/2 holds epoch 3, its state znode 0",
    ]


def test_every_controllers_metadata_agrees_with_zookeeper():
    history = _topics_history()
    history[-1]["metadata"]["101"]["topics"]["chaos-t1"]["2"] = [6, 5]
    del history[-1]["metadata"]["103"]["topics"]["chaos-t1"]
    assert _topic_violations(history) == [
        "Metadata of controller 101 answers topic chaos-t1 with {'0': [1, 2], '1': [3, 4], '2': [6, 5]}, ZooKeeper "
        "has {'0': [1, 2], '1': [3, 4], '2': [5, 6]}",
        "Metadata of controller 103 does not list topic chaos-t1, which ZooKeeper has",
    ]
    # An instance that could not be asked is not judged; none answering is a violation.
    one = _topics_history()
    one[-1]["metadata"]["102"] = {"error": "ConnectionFailedError()"}
    assert check(one).ok
    none = _topics_history(metadata={"101": {"error": "ConnectionFailedError()"}})
    assert _topic_violations(none) == ["no controller instance answered Metadata at the end: "
                                       "{'101': 'ConnectionFailedError()'}"]


def test_a_topic_the_workload_never_named_or_moving_fails():
    stray = {"chaos-t1": _topic(GROWN), "chaos-t99": _topic({0: [1, 2]})}
    violations = _topic_violations(_topics_history(topics=stray))
    assert violations[0] == "unexpected topic chaos-t99: no operation of the workload named it (1 partitions)"
    moving = {"chaos-t1": {**_topic(GROWN), "adding": {"0": [3]}}}
    assert _topic_violations(_topics_history(topics=moving))[0].startswith("topic chaos-t1 is moving at the end")


def test_a_snapshot_partition_without_its_state_is_under_way_until_quiet():
    snapshot = _settled()
    snapshot["states"]["chaos-t1/0"] = None
    snapshot["assignments"]["chaos-t1/0"] = [1, 2]
    for b in ("1", "2"):
        snapshot["hosted"][b]["chaos-t1/0"] = -1
    assert settled_problems(snapshot) == ["no state znode: chaos-t1/0 (a created partition never given its leader)"]
    del snapshot["hosted"]  # a broker's failure, the workload still running: under way
    assert settled_problems(snapshot) == []
