"""Probes of the KIP-6 planner's plans: hard constraints on odd inputs, brokers that are not
registered, idempotence (a plan applied and planned again gives nothing), clear refusals."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_jobs import api
from spark_jobs.errors import PlanError, SnapshotError
from tests.planner.strategies import clusters
from tests.planner.test_planner import cluster, counts_after


def _rows(snap: dict) -> dict:
    return {(t["name"], p["partition"]): list(p["replicas"]) for t in snap["topics"] for p in t["partitions"]}


def _applied(snap: dict, result) -> dict:
    """``snap`` with the plan's replica lists (and their first replicas leading)."""
    out = json.loads(json.dumps(snap))
    new = {(e["topic"], e["partition"]): e["replicas"] for e in result.reassignment["partitions"]}
    for t in out["topics"]:
        for p in t["partitions"]:
            reps = new.get((t["name"], p["partition"]))
            if reps is not None:
                p["replicas"], p["leader"] = list(reps), reps[0]
                if p.get("sizes") is not None:
                    p["sizes"] = [p["sizes"][0]] * len(reps)
    return out


def _down(snap: dict, *ids) -> dict:
    for b in snap["brokers"]:
        if b["id"] in ids:
            b.update(host=None, port=None, alive=False)
    return snap


# ---- brokers that are not registered ----------------------------------------------------------


@pytest.mark.parametrize(
    "mode,kwargs",
    [
        ("rebalance", {}),
        ("rebalance", {"broker_list": [0, 1, 2, 3, 4]}),
        ("decommission", {"brokers": [1]}),
        ("replication-factor", {"replication_factor": 3}),
        ("add-brokers", {"brokers": [9]}),
    ],
)
def test_a_broker_that_is_not_registered_gets_no_replica_and_is_drained(mode, kwargs):
    # Broker 3 holds a replica but is not in /brokers/ids (the snapshot's alive: false); broker 4
    # is registered and empty. A plan must not copy anything to 3: no broker there to take it.
    assignment = {("t", p): [p % 3, (p + 1) % 3] for p in range(6)}
    assignment[("t", 6)] = [3, 0]
    snap = _down(cluster(assignment, [0, 1, 2, 3, 4]), 3)
    result = api.plan(snap, mode, **kwargs)
    before = _rows(snap)
    for e in result.reassignment["partitions"]:
        added = set(e["replicas"]) - set(before[(e["topic"], e["partition"])])
        assert 3 not in added, e
    after = counts_after(snap, result)
    assert after[3] == 0
    report = result.report
    assert 3 not in report["target_brokers"] and 3 in report["drained_brokers"]
    assert any("not registered" in w and "[3]" in w for w in report["warnings"])
    assert report["fair"]


def test_a_down_broker_without_a_rack_does_not_block_a_racked_rebalance():
    # The snapshot records a broker that is not registered with no rack (its registration, where
    # the rack lives, is gone): it must leave, not make the racked brokers "mixed".
    racks = {0: "a", 1: "b", 2: "c", 4: "a"}
    assignment = {("t", p): [p % 3, (p + 1) % 3] for p in range(6)}
    assignment[("t", 6)] = [3, 1]
    snap = _down(cluster(assignment, [0, 1, 2, 3, 4], racks), 3)
    result = api.plan(snap, "rebalance")
    assert counts_after(snap, result)[3] == 0
    assert result.report["racks"]["invalid_partitions_after"] == 0


def test_too_few_registered_brokers_for_the_replication_factor_is_refused_saying_why():
    snap = _down(cluster({("t", 0): [0, 1, 2], ("t", 1): [1, 2, 0]}, [0, 1, 2]), 2)
    with pytest.raises(PlanError, match=r"needs 3 replicas but only 2 brokers .*\[2\] are not registered"):
        api.plan(snap, "rebalance")


def test_adding_brokers_that_are_not_registered_yet_still_works():
    snap = cluster({("t", p): [p % 2] for p in range(4)}, [0, 1])
    result = api.plan(snap, "add-brokers", brokers=[5])
    assert counts_after(snap, result)[5] == 1 and result.report["warnings"] == []


# ---- refusals and odd inputs --------------------------------------------------------------------


def test_decommission_leaving_fewer_brokers_than_the_replication_factor_is_refused():
    snap = cluster({("t", p): [0, 1, 2] for p in range(3)}, [0, 1, 2])
    with pytest.raises(PlanError, match="t-0 needs 3 replicas but only 2 brokers are in the target set"):
        api.plan(snap, "decommission", brokers=[2])


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda s: s["topics"][0]["partitions"][0].update(replicas=[]), "non-empty array"),
        (lambda s: s["topics"][0]["partitions"][0].update(replicas=[0, 7]), "unknown broker 7"),
        (lambda s: s["topics"][0]["partitions"][0].update(replicas=[0, 0]), "broker listed twice"),
        (lambda s: s["brokers"].append({"id": 1}), "duplicate broker 1"),
    ],
)
def test_malformed_snapshots_are_refused_not_planned(mutate, message):
    snap = cluster({("t", 0): [0, 1], ("t", 1): [1, 0]}, [0, 1, 2])
    mutate(snap)
    with pytest.raises(SnapshotError, match=message):
        api.plan(snap, "rebalance")


def test_topics_without_partitions_and_empty_clusters_plan_nothing():
    snap = cluster({("t", p): [0] for p in range(4)}, [0, 1])
    snap["topics"].append({"name": "empty", "partitions": []})
    result = api.plan(snap, "rebalance")
    assert sorted(counts_after(snap, result).values()) == [2, 2]
    bare = {"version": 1, "brokers": [{"id": 0}, {"id": 1}], "topics": [{"name": "e", "partitions": []}]}
    for mode, kwargs in [("rebalance", {}), ("decommission", {"brokers": [1]})]:
        assert api.plan(bare, mode, **kwargs).reassignment["partitions"] == []


# ---- idempotence ---------------------------------------------------------------------------------


@settings(max_examples=25)
@given(st.data())
def test_a_fair_plan_applied_and_planned_again_is_empty(data):
    snap, rack_of = data.draw(clusters(racks=data.draw(st.booleans()), rack_valid=True))
    first = api.plan(snap, "rebalance")
    second = api.plan(_applied(snap, first), "rebalance")
    if first.report["fair"] and first.report["leaders_fair"]:
        assert second.reassignment["partitions"] == [], (first.report, second.reassignment)
    assert second.report["moves"] == 0 or not first.report["fair"]
    counts = Counter(b for r in _rows(_applied(snap, first)).values() for b in r)
    assert sum(counts.values()) == sum(len(r) for r in _rows(snap).values())


# ---- racks ---------------------------------------------------------------------------------------


def test_adding_brokers_to_a_racked_cluster_says_how_to_give_them_racks():
    # The added brokers are not registered, so no rack is known for them: the old advice ("give
    # every target broker a rack") named nothing the operator could do on this command line.
    snap = cluster({("t", p): [p % 3, (p + 1) % 3] for p in range(6)}, [0, 1, 2], racks={0: "a", 1: "b", 2: "c"})
    with pytest.raises(PlanError, match=r"brokers \[7\] being added are not in the snapshot, so their racks are unknown"):
        api.plan(snap, "add-brokers", brokers=[7])


def test_mixed_racks_are_refused_and_the_refusal_says_racks_are_not_ignored():
    snap = cluster({("t", 0): [0, 1]}, [0, 1, 2], racks={0: "a", 1: "b"})
    with pytest.raises(PlanError, match=r"brokers \[2\] have no rack while .*racks are never ignored"):
        api.plan(snap, "rebalance")
    # Leaving the broker without a rack out of the broker list is the way to plan anyway.
    result = api.plan(snap, "rebalance", broker_list=[0, 1])
    assert result.report["racks"]["count"] == 2 and result.report["moves"] == 0
