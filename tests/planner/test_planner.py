"""Worked examples: KIP-6's own, decommission, expansion, RF change, leaders, bad requests."""

from __future__ import annotations

from collections import Counter

import pytest

from spark_jobs import api
from spark_jobs.errors import PlanError


def cluster(assignment: dict, brokers, racks=None, sizes=None) -> dict:
    """assignment: {(topic, partition): [replicas]}."""
    topics: dict = {}
    for (t, p), reps in sorted(assignment.items()):
        entry = {"partition": p, "replicas": reps, "leader": reps[0]}
        if sizes is not None:
            entry["sizes"] = [sizes.get((t, p), 0)] * len(reps)
        topics.setdefault(t, []).append(entry)
    return {
        "version": 1,
        "brokers": [{"id": b, "rack": (racks or {}).get(b)} for b in brokers],
        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
    }


def counts_after(snap, result) -> Counter:
    rows = {(t["name"], p["partition"]): p["replicas"] for t in snap["topics"] for p in t["partitions"]}
    for e in result.reassignment["partitions"]:
        rows[(e["topic"], e["partition"])] = e["replicas"]
    return Counter(b for r in rows.values() for b in r)


def test_kip6_example_7_6_0_0_becomes_4_3_3_3_in_6_moves():
    # Brokers 2 and 3 were just added; 0 and 1 hold 7 and 6 single-replica partitions.
    assignment = {("t", p): [0] for p in range(7)}
    assignment.update({("t", 7 + p): [1] for p in range(6)})
    snap = cluster(assignment, [0, 1, 2, 3])
    result = api.plan(snap, "rebalance")
    after = counts_after(snap, result)
    assert [after[b] for b in range(4)] == [4, 3, 3, 3]
    assert result.report["moves"] == 6
    assert result.report["lower_bound"] == 6
    assert result.report["moves_at_lower_bound"]
    per = {x["broker"]: x for x in result.report["per_broker"]}
    assert [per[b]["replicas_before"] for b in range(4)] == [7, 6, 0, 0]
    assert [per[b]["replicas_after"] for b in range(4)] == [4, 3, 3, 3]


def test_decommission_empties_the_broker_with_one_move_per_replica():
    assignment = {("a", p): [p % 4, (p + 1) % 4, (p + 2) % 4] for p in range(12)}
    snap = cluster(assignment, [0, 1, 2, 3, 4])
    result = api.plan(snap, "decommission", brokers=[2])
    after = counts_after(snap, result)
    assert after[2] == 0
    assert sorted(after[b] for b in (0, 1, 3, 4)) == [9, 9, 9, 9]
    assert result.report["moves"] == 9 == result.report["lower_bound"]
    assert result.report["drained_brokers"] == [2]
    assert result.report["leaders_fair"]


def test_add_brokers_not_yet_registered():
    assignment = {("a", p): [p % 3, (p + 1) % 3] for p in range(9)}
    snap = cluster(assignment, [0, 1, 2])
    result = api.plan(snap, "add-brokers", brokers=[10, 11])
    after = counts_after(snap, result)
    assert sorted(after.values()) == [3, 3, 4, 4, 4]
    assert result.report["target_brokers"] == [0, 1, 2, 10, 11]
    assert result.report["moves"] == result.report["lower_bound"] == 6


def test_replication_factor_change_keeps_rack_spread():
    racks = {0: "a", 1: "a", 2: "b", 3: "b", 4: "c", 5: "c"}
    assignment = {("t", p): [p % 6] for p in range(6)}
    snap = cluster(assignment, list(racks), racks)
    result = api.plan(snap, "replication-factor", replication_factor=3)
    rows = {(e["topic"], e["partition"]): e["replicas"] for e in result.reassignment["partitions"]}
    assert len(rows) == 6
    for p in range(6):
        reps = rows[("t", p)]
        assert reps[0] == p % 6 or p % 6 in reps  # the existing replica stays
        assert {racks[b] for b in reps} == {"a", "b", "c"}
    assert result.report["moves"] == 12 == result.report["lower_bound"]
    assert result.report["fair"]


def test_only_changed_partitions_are_listed_and_order_counts():
    # Balanced replicas, but broker 0 leads everything: the fix is reordering only.
    assignment = {("t", 0): [0, 1], ("t", 1): [0, 1], ("t", 2): [0, 1], ("t", 3): [1, 0]}
    snap = cluster(assignment, [0, 1])
    result = api.plan(snap, "rebalance")
    assert result.report["moves"] == 0
    assert result.report["leaders_fair"]
    changed = result.reassignment["partitions"]
    assert len(changed) == 1 and sorted(changed[0]["replicas"]) == [0, 1]
    assert changed[0]["replicas"][0] == 1
    assert result.report["partitions_reordered_only"] == 1
    assert result.batches["waves"][-1]["kind"] == "metadata"


def test_topics_scope_leaves_other_topics_alone():
    assignment = {("a", p): [0] for p in range(4)}
    assignment.update({("b", p): [0] for p in range(4)})
    snap = cluster(assignment, [0, 1])
    result = api.plan(snap, "rebalance", topics=["a"])
    assert {e["topic"] for e in result.reassignment["partitions"]} == {"a"}
    assert result.report["moves"] == 2


def test_bytes_even_out_and_batches_from_sizes():
    assignment = {("t", p): [0] for p in range(6)}
    sizes = {("t", p): (p + 1) * 1000 for p in range(6)}
    snap = cluster(assignment, [0, 1, 2], sizes=sizes)
    result = api.plan(snap, "rebalance", max_in=1, max_out=1, throttle=1000)
    moved = [e["partition"] for e in result.reassignment["partitions"]]
    assert result.report["bytes_to_move"] == sum(sizes[("t", p)] for p in moved)
    # Bytes are the objective after counts and moves: 21,000 bytes over three brokers end
    # 7,000 each (broker 0 keeps 1,000 + 6,000), where moving the smallest four would leave
    # broker 0 with 11,000.
    assert result.report["moves"] == result.report["lower_bound"] == 4
    assert (result.report["bytes_spread_before"], result.report["bytes_spread_after"]) == (21_000, 0)
    assert sorted(moved) == [1, 2, 3, 4]
    assert {b["broker"]: b["bytes_after"] for b in result.report["per_broker"]} == {0: 7000, 1: 7000, 2: 7000}
    b = result.batches
    assert b["moves"] == 4 and b["bytes"] == 14_000
    assert b["lower_bound_seconds"] == 14.0  # broker 0 sends all 14,000 bytes at 1000 B/s
    assert b["estimated_seconds"] >= b["lower_bound_seconds"]
    for wave in b["waves"]:
        ins = Counter(r for e in wave["partitions"] for r in e["replicas"] if r != 0)
        assert max(ins.values()) <= 1
        assert len(wave["partitions"]) <= 1  # one move out of broker 0 per wave


@pytest.mark.parametrize(
    "mode,kwargs,message",
    [
        ("decommission", {"brokers": [9]}, "broker 9 is not in the snapshot"),
        ("decommission", {"brokers": [0, 1]}, "needs 2 replicas but only 1 brokers"),
        ("rebalance", {"topics": ["nope"]}, "topics not in the snapshot: nope"),
        ("replication-factor", {"replication_factor": 0}, "must be a positive int"),
        ("replication-factor", {"replication_factor": 4}, "needs 4 replicas but only 3 brokers"),
        ("shuffle", {}, "unknown mode"),
        ("add-brokers", {"brokers": []}, "needs at least one broker id"),
    ],
)
def test_impossible_requests_are_refused_clearly(mode, kwargs, message):
    snap = cluster({("t", 0): [0, 1], ("t", 1): [1, 2]}, [0, 1, 2])
    with pytest.raises(PlanError, match=message):
        api.plan(snap, mode, **kwargs)


def test_mixed_racks_are_refused():
    snap = cluster({("t", 0): [0, 1]}, [0, 1, 2], racks={0: "a", 1: "b"})
    with pytest.raises(PlanError, match="no rack while"):
        api.plan(snap, "rebalance")


def test_large_cluster_reaches_bound_and_stays_even_per_topic():
    brokers = list(range(30))
    assignment = {}
    for t in range(20):
        for p in range(30):
            first = (t * 7 + p) % 24  # brokers 24..29 are new and empty
            step = 1 + t % 5
            assignment[(f"topic-{t:02d}", p)] = [first, (first + step) % 24, (first + 2 * step) % 24]
    snap = cluster(assignment, brokers)
    result = api.plan(snap, "rebalance")
    r = result.report
    assert r["fair"] and r["leaders_fair"]
    assert r["moves"] == r["lower_bound"]
    assert r["topic_evenness"]["topics_less_even"] == 0
    assert r["topic_evenness"]["max_spread_after"] <= r["topic_evenness"]["max_spread_before"]


def test_broker_list_drains_brokers_left_out():
    assignment = {("t", p): [p % 4, (p + 1) % 4] for p in range(8)}
    snap = cluster(assignment, [0, 1, 2, 3])
    result = api.plan(snap, "rebalance", broker_list=[0, 1, 2])
    after = counts_after(snap, result)
    assert after[3] == 0 and sorted(after[b] for b in (0, 1, 2)) == [5, 5, 6]
    assert result.report["drained_brokers"] == [3]
    assert result.report["moves"] == result.report["lower_bound"] == 4


def test_snapshot_is_not_modified_by_planning():
    import json

    snap = cluster({("t", p): [0, 1] for p in range(6)}, [0, 1, 2])
    before = json.dumps(snap, sort_keys=True)
    api.plan(snap, "rebalance")
    assert json.dumps(snap, sort_keys=True) == before


def test_bytes_objective_keeps_counts_moves_and_topic_evenness():
    """An expansion with skewed sizes: the bytes pass only re-picks which partition of a topic
    makes a move, so the counts, the move count and the per-topic spread are those of the plan
    without it, and the bytes spread drops."""
    import random

    from spark_jobs import core
    from spark_jobs.legacy import assign_unaware

    rng = random.Random(3)
    assignment, sizes = {}, {}
    for t in range(12):
        for p, r in enumerate(assign_unaware(20, 3, list(range(6)), rng)):
            assignment[(f"t{t}", p)] = r
            sizes[(f"t{t}", p)] = rng.choice([1, 5, 20, 100]) * 10**6
    snap = cluster(assignment, list(range(8)), sizes=sizes)
    with_bytes = api.plan(snap, "rebalance").report
    budget = core.BYTES_SWAP_BUDGET
    core.BYTES_SWAP_BUDGET = 0  # the same plan without the bytes pass
    try:
        without = api.plan(snap, "rebalance").report
    finally:
        core.BYTES_SWAP_BUDGET = budget
    assert with_bytes["bytes_swaps"] > 0 == without["bytes_swaps"]
    assert with_bytes["moves"] == without["moves"] == with_bytes["lower_bound"]
    assert with_bytes["fair"] and with_bytes["topic_evenness"] == without["topic_evenness"]
    assert [b["replicas_after"] for b in with_bytes["per_broker"]] == [b["replicas_after"] for b in without["per_broker"]]
    assert with_bytes["bytes_spread_after"] < without["bytes_spread_after"] / 2
    assert with_bytes["bytes_spread_after"] < with_bytes["bytes_spread_before"]


def test_brokers_excluded_from_leadership_lead_nothing_and_the_others_share_the_leaders():
    """Cruise Control's recently demoted brokers: they keep their replicas (counts as any
    rebalance), lead nothing the plan orders, and the other targets lead L or L+1 each."""
    assignment = {("t", p): [p % 5, (p + 1) % 5, (p + 2) % 5] for p in range(20)}
    snap = cluster(assignment, [0, 1, 2, 3, 4])
    plain = api.plan(snap, "rebalance")
    assert plain.report["leaders_excluded"] == [] and plain.report["moves"] == 0
    result = api.plan(snap, "rebalance", leaders_excluded=[2])
    rows = {(t["name"], p["partition"]): p["replicas"] for t in snap["topics"] for p in t["partitions"]}
    for e in result.reassignment["partitions"]:
        assert sorted(e["replicas"]) == sorted(rows[(e["topic"], e["partition"])])  # reorders only
        rows[(e["topic"], e["partition"])] = e["replicas"]
    assert result.report["moves"] == 0 and result.report["leaders_excluded"] == [2]
    leads = Counter(r[0] for r in rows.values())
    assert leads[2] == 0 and sorted(leads[b] for b in (0, 1, 3, 4)) == [5, 5, 5, 5]
    assert result.report["leaders_fair"] and result.report["leader_target"] == [5, 6]
    assert counts_after(snap, result) == counts_after(snap, plain)
    with pytest.raises(PlanError, match="excluded from leadership"):
        api.plan(snap, "rebalance", leaders_excluded=[0, 1, 2, 3, 4])
