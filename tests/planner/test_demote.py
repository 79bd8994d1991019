"""Issue 24 item 5, the pure part: spark_jobs.demote's plan of a broker demotion (which replica
lists are reordered, to what, which partitions are elected, which are left and why)."""

from __future__ import annotations

import pytest

from spark_jobs import demote
from spark_jobs.errors import PlanError


def _snap(parts, alive=(1, 2, 3, 4), down=()):
    """parts: (topic, partition, replicas, leader, isr[, reassigning])."""
    topics: dict[str, list] = {}
    for t, p, replicas, leader, isr, *moving in parts:
        topics.setdefault(t, []).append({"partition": p, "replicas": list(replicas), "leader": leader,
                                         "isr": None if isr is None else list(isr),
                                         "reassigning": bool(moving and moving[0]), "sizes": None})
    brokers = [{"id": b, "host": None, "port": None, "rack": None, "alive": True} for b in alive]
    brokers += [{"id": b, "host": None, "port": None, "rack": None, "alive": False} for b in down]
    return {"version": 1, "cluster": {}, "brokers": sorted(brokers, key=lambda b: b["id"]),
            "topics": [{"name": t, "partitions": ps} for t, ps in sorted(topics.items())]}


def test_demoted_replicas_go_last_followers_too_and_its_leaderships_are_elected():
    d = demote.plan_demotion(_snap([
        ("t", 0, [1, 2, 3], 1, [1, 2, 3]),  # preferred and leader: reordered, elected
        ("t", 1, [2, 1, 3], 2, [1, 2, 3]),  # a follower in the middle: last (Cruise Control's order)
        ("t", 2, [2, 3, 1], 1, [1, 2, 3]),  # leads though last already: elected only
        ("t", 3, [2, 3, 4], 2, [2, 3, 4]),  # not on broker 1: untouched
        ("t", 4, [1, 4], 4, [1, 4]),        # preferred, not leading: reordered, nothing to elect
    ]), [1])
    assert d.reorders == {("t", 0): [2, 3, 1], ("t", 1): [2, 3, 1], ("t", 4): [4, 1]}
    assert d.originals == {("t", 0): [1, 2, 3], ("t", 1): [2, 1, 3], ("t", 4): [1, 4]}
    assert d.elect == [("t", 0), ("t", 2)]
    assert d.leaders_after == {("t", 0): 2, ("t", 2): 2}
    assert not d.leader_stays and not d.skipped
    # The same sets: a reassignment that adds and removes nothing, one metadata wave.
    for tp, new in d.reorders.items():
        assert sorted(new) == sorted(d.originals[tp])
    b = d.batches()
    assert [w["kind"] for w in b["waves"]] == ["metadata"] and b["moves"] == 0 and b["bytes"] == 0
    assert b["waves"][0]["partitions"] == d.reassignment()["partitions"]
    r = d.report()
    assert r["partitions_reordered_only"] == 3 and r["moves"] == 0 and r["leaderships_to_move"] == 2
    assert r["rollback"] == {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2, 3]},
                                                          {"topic": "t", "partition": 1, "replicas": [2, 1, 3]},
                                                          {"topic": "t", "partition": 4, "replicas": [1, 4]}]}
    assert r["elect"][0] == {"topic": "t", "partition": 0, "leader_now": 1, "leader_after": 2}


def test_several_brokers_keep_their_order_at_the_end():
    d = demote.plan_demotion(_snap([("t", 0, [3, 1, 4, 2], 3, [1, 2, 3, 4]),
                                    ("t", 1, [1, 3], 1, [1, 3])]), [3, 1])
    assert d.brokers == [1, 3]
    assert d.reorders[("t", 0)] == [4, 2, 3, 1]
    assert ("t", 1) not in d.reorders  # every replica demoted: nothing changes ...
    assert d.leader_stays == [{"topic": "t", "partition": 1, "leader": 1, "reason": demote.STAYS_NO_OTHER}]
    assert d.elect == [("t", 0)]  # ... and it keeps its leader


def test_a_first_replica_that_cannot_lead_gives_way_to_the_first_that_can():
    # Broker 2 is in the ISR but not registered (the ISR lags a death): 3 leads after the demotion.
    d = demote.plan_demotion(_snap([("t", 0, [1, 2, 3], 1, [1, 2, 3])], alive=(1, 3, 4), down=(2,)), [1])
    assert d.reorders[("t", 0)] == [3, 2, 1] and d.elect == [("t", 0)] and d.leaders_after[("t", 0)] == 3
    assert demote.demoted_order([1, 2, 3], {1}, {2, 3}) == [2, 3, 1]
    assert demote.demoted_order([1, 2, 3], {1}, {3}) == [3, 2, 1]
    assert demote.demoted_order([1, 2, 3], {1}, set()) == [2, 3, 1]


def test_moving_stateless_and_under_replicated_partitions_are_left_and_named():
    d = demote.plan_demotion(_snap([
        ("t", 0, [1, 2], 1, [1, 2], True),   # being reassigned
        ("t", 1, [1, 2], 1, None),           # no state
        ("t", 2, [1, 2, 3], 1, [1, 2]),      # under-replicated: the reorder would wait for 3
        ("t", 3, [2, 3, 1], 2, [2, 3]),      # under-replicated, but nothing to change: not listed
    ]), [1])
    assert not d.reorders and not d.elect
    assert [(x["partition"], x["reason"]) for x in d.skipped] == [
        (0, demote.SKIP_MOVING), (1, demote.SKIP_NO_STATE), (2, demote.SKIP_UNDER_REPLICATED)]
    assert len(d.report()["warnings"]) == 3
    assert d.batches()["waves"] == []


@pytest.mark.parametrize("brokers, message", [([], "at least one"), ([1, 1], "twice"), ([9], "not registered"),
                                              ([2], "not registered")])
def test_bad_broker_lists_are_refused(brokers, message):
    with pytest.raises(PlanError, match=message):
        demote.plan_demotion(_snap([("t", 0, [1, 2], 1, [1, 2])], alive=(1, 3), down=(2,)), brokers)
