"""Lowering a replication factor drops followers only: the partition's current leader keeps its
replica, so the plan makes the controller elect no one (Cruise Control's topic_configuration,
and what a Kafka operator expects).

The planner's replication-factor mode (spark_jobs.core: change_replication, _settle_replication,
and every later step that moves replicas) once removed the replica on the broker most above its
target count, the first replica only on a tie, so a leader could leave. These tests hold the
rule on the core's steps (no Spark: the local mapper), on whole plans, on generated clusters
(racks or not, leaders anywhere in the list or none), through the exact solver, through
planner_service.topic_config's report, and once on Spark.
"""

from __future__ import annotations

import random
import re
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner_service.topic_config import select_topics, summary
from spark_jobs import api, core, exact, snapshot
from spark_jobs.racks import RackRule
from tests.planner.strategies import clusters


def snap_of(partitions: dict, racks: dict, leaders: dict | None = None) -> dict:
    """A snapshot: partitions {(topic, p): replicas}, racks {broker: rack or None}, leaders
    {(topic, p): broker or -1} (default: the first replica)."""
    leaders = leaders or {}
    topics: dict = {}
    for (t, p), reps in sorted(partitions.items()):
        topics.setdefault(t, []).append({"partition": p, "replicas": reps, "leader": leaders.get((t, p), reps[0])})
    return {"version": 1, "brokers": [{"id": b, "rack": r} for b, r in sorted(racks.items())],
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}


def lowered_rows(snap: dict, rf: int) -> dict:
    """The core's rows right after its replication change (change_replication and the settling
    chains), as broker ids, by (topic, partition)."""
    planner = core._Planner(snapshot.validate(snap), core.PlanRequest("replication-factor", replication_factor=rf),
                            core.local_mapper)
    planner.choose_target_counts()
    planner.change_replication()
    ids = planner.c.broker_ids.tolist()
    c = planner.c
    return {(c.topics[c.part_topic[r]], int(c.part_num[r])): [ids[b] for b in planner.rep[r].tolist() if b >= 0]
            for r in range(c.n_partitions)}


def final_rows(snap: dict, result) -> dict:
    rows = {(t["name"], p["partition"]): list(p["replicas"]) for t in snap["topics"] for p in t["partitions"]}
    for e in result.reassignment["partitions"]:
        rows[(e["topic"], e["partition"])] = list(e["replicas"])
    return rows


def leaders_of(snap: dict) -> dict:
    return {(t["name"], p["partition"]): p["leader"] for t in snap["topics"] for p in t["partitions"]}


def is_subsequence(short: list, long: list) -> bool:
    it = iter(long)
    return all(b in it for b in short)


def assert_leaders_kept(snap: dict, rows: dict, rf: int) -> None:
    """Every partition lowered to rf with a live leader keeps it, and what remains keeps its
    order (a leader first, the preferred leader, stays first)."""
    before = {(t["name"], p["partition"]): p["replicas"] for t in snap["topics"] for p in t["partitions"]}
    for key, lead in leaders_of(snap).items():
        if len(before[key]) <= rf:
            continue
        assert len(rows[key]) == rf, (key, rows[key])
        if lead >= 0:
            assert lead in rows[key], (key, before[key], lead, rows[key])
            if before[key][0] == lead:
                assert rows[key][0] == lead, (key, before[key], rows[key])


def rack_valid(row: list, racks: dict, names: list) -> bool:
    lo, hi = len(row) // len(names), -(-len(row) // len(names))
    per = Counter(racks[b] for b in row)
    return all(lo <= per.get(x, 0) <= hi for x in names)


def fair(rows: dict, targets: list) -> bool:
    counts = Counter(b for row in rows.values() for b in row)
    low = sum(counts.values()) // len(targets)
    return all(counts.get(b, 0) in (low, low + 1) for b in targets)


# ---- the core's replication change ----------------------------------------------------------


def test_a_leader_above_its_target_count_keeps_its_replica():
    """Two partitions on brokers 0-2 led by their first replicas, 2 and 0, down to one replica:
    two replicas over three brokers give the +1 slots to brokers 0 and 1 (equal counts, lowest
    ids), so broker 2 is the one above its target and the old key dropped it, the leader of t-0
    (and t-1 lost its leader 0 to the evening out that followed). Keeping each leader is fair
    and moves nothing."""
    snap = snap_of({("t", 0): [2, 0, 1], ("t", 1): [0, 1, 2]}, {0: None, 1: None, 2: None})
    assert lowered_rows(snap, 1) == {("t", 0): [2], ("t", 1): [0]}
    result = api.plan(snap, "replication-factor", replication_factor=1)
    assert final_rows(snap, result) == {("t", 0): [2], ("t", 1): [0]}
    assert result.report["fair"] and result.report["moves"] == 0


def test_a_leader_sharing_its_rack_with_a_follower_keeps_its_replica():
    """Rack a holds the leader (broker 0, first) and a follower (broker 3) of t-0: going to two
    replicas over three racks, rack a gives one. The old key gave the leader (broker 0 holds the
    most); the follower goes, and the counts are still evened out: t-1, at two replicas already
    (nothing lowered, so nothing kept), gives its replica on 0 to 3, in the same rack."""
    racks = {0: "a", 1: "b", 2: "c", 3: "a"}
    snap = snap_of({("t", 0): [0, 2, 3], ("t", 1): [0, 1]}, racks)
    assert lowered_rows(snap, 2)[("t", 0)] == [0, 2]
    result = api.plan(snap, "replication-factor", replication_factor=2)
    rows = final_rows(snap, result)
    assert 0 in rows[("t", 0)], rows
    assert all(rack_valid(r, racks, ["a", "b", "c"]) for r in rows.values()), rows
    assert result.report["fair"] and result.report["racks"]["invalid_partitions_after"] == 0


def test_a_leader_that_is_not_first_keeps_its_replica_and_the_order_stays():
    """[0, 1, 2] led by 2 down to two replicas: on a tie the old key dropped the last replica,
    the leader. Broker 1 goes instead and the rest keeps its order."""
    snap = snap_of({("t", 0): [0, 1, 2]}, {0: None, 1: None, 2: None}, {("t", 0): 2})
    assert lowered_rows(snap, 2) == {("t", 0): [0, 2]}
    result = api.plan(snap, "replication-factor", replication_factor=2)
    assert final_rows(snap, result) == {("t", 0): [0, 2]}
    assert result.report["fair"] and result.report["moves"] == 0


@pytest.mark.parametrize("racks", [{0: "r0", 1: "r1", 2: "r2"}, {0: None, 1: None, 2: None}])
def test_the_settling_chains_never_swap_a_leader_out(racks):
    """After the removals, _settle_replication swaps a removed replica back in place of a kept
    one to even the counts out. Broker 2 leads all three partitions: it must stay in the two
    lowered ones (t-0 and t-2, first in t-2 where it was first), what remains keeps its order,
    and the counts are still evened out."""
    parts = {("t", 0): [1, 0, 2], ("t", 1): [1, 2], ("t", 2): [2, 1, 0]}
    snap = snap_of(parts, racks, {k: 2 for k in parts})
    rows = lowered_rows(snap, 2)
    assert_leaders_kept(snap, rows, 2)
    for key in (("t", 0), ("t", 2)):
        assert is_subsequence(rows[key], parts[key]), (key, rows[key])
    result = api.plan(snap, "replication-factor", replication_factor=2)
    after = final_rows(snap, result)
    assert 2 in after[("t", 0)] and 2 in after[("t", 2)], after
    assert result.report["fair"], result.report  # t-1 (not lowered) relocates its replica on 2


def test_when_the_leaders_pin_the_counts_the_plan_says_so():
    """Broker 1 leads all four partitions (three replicas, down to two): it keeps its replica in
    each, four where R/R+1 is 2 or 3. The leaders are a hard rule, the counts are not: the plan
    is not fair, and says why."""
    parts = {("t", p): r for p, r in enumerate([[1, 2, 3], [1, 3, 4], [1, 4, 2], [1, 2, 3]])}
    snap = snap_of(parts, {b: None for b in range(1, 5)})
    result = api.plan(snap, "replication-factor", replication_factor=2)
    rows = final_rows(snap, result)
    assert all(1 in r and len(r) == 2 for r in rows.values()), rows
    assert not result.report["fair"]
    assert any("keep their current leader" in w for w in result.report["warnings"]), result.report["warnings"]
    # the followers left are as even as broker 1's four allow: one or two each
    assert sorted(Counter(b for r in rows.values() for b in r if b != 1).values()) == [1, 1, 2]


def test_without_a_live_leader_the_first_replica_is_only_preferred():
    """No leader (-1): nothing is kept, the fullest broker gives as before, the first replica
    only on a tie. Here broker 0 holds every partition and goes from two of them."""
    parts = {("t", p): [0, 1 + p % 2] for p in range(4)}
    snap = snap_of(parts, {0: None, 1: None, 2: None}, {k: -1 for k in parts})
    result = api.plan(snap, "replication-factor", replication_factor=1)
    rows = final_rows(snap, result)
    assert result.report["fair"] and result.report["moves"] == 0
    assert sorted(Counter(r[0] for r in rows.values()).values()) == [1, 1, 2]


def test_a_leader_on_a_broker_being_left_out_is_not_kept():
    """A leader on a broker outside --broker-list must go anyway: lowering drops it first."""
    snap = snap_of({("t", 0): [3, 0, 1]}, {0: None, 1: None, 2: None, 3: None})
    result = api.plan(snap, "replication-factor", brokers=[0, 1, 2], replication_factor=2)
    assert final_rows(snap, result) == {("t", 0): [0, 1]}
    assert result.report["moves"] == 0


# ---- the exact solver ---------------------------------------------------------------------


def test_the_exact_solver_keeps_what_it_is_told_to_keep():
    target = np.ones(3, dtype=bool)
    rule = RackRule.build([None] * 3, target)
    rows = np.array([[0, 1, 2]] * 3, dtype=np.int32)
    new_rf = np.ones(3, dtype=np.int32)
    out = exact.solve(rows, new_rf, target, rule, keep=np.array([0, 1, 2]))
    assert out is not None and out[:, 0].tolist() == [0, 1, 2]
    out = exact.solve(rows, new_rf, target, rule, keep=np.array([2, 0, 1]))
    assert out[:, 0].tolist() == [2, 0, 1]
    # broker 0 kept in both rows of two brokers: one replica each cannot be fair
    two = np.ones(2, dtype=bool)
    assert exact.solve(np.array([[0, 1], [0, 1]], dtype=np.int32), np.ones(2, dtype=np.int32), two,
                       RackRule.build([None] * 2, two), keep=np.array([0, 0])) is None


def test_the_exact_solver_never_narrows_a_lowered_partition_below_its_new_spread():
    """Partitions breaking the rack rule (rack r0 holds two or more of each) going down to two
    replicas: each spans two racks or more, so its two replicas end in two racks. The solver
    once let a rack keep as many as it held ([1, 3, 2, 0, 4] ended [0, 4], both in r0), which
    the planner's lowering never does; this lowering runs the solver more often now that kept
    leaders can leave the greedy plan above its lower bound."""
    racks = ["r0", "r1", "r2", "r0", "r0"]
    target = np.ones(5, dtype=bool)
    rule = RackRule.build(racks, target)
    rows = np.array([[0, 2, 4, -1, -1], [2, 0, 1, -1, -1], [1, 3, 2, 0, 4], [2, 4, 1, 0, 3]], dtype=np.int32)
    out = exact.solve(rows, np.full(4, 2, dtype=np.int32), target, rule)
    assert out is not None
    for old, new in zip(rows.tolist(), out.tolist()):
        new = [b for b in new if b >= 0]
        assert len(new) == 2 and len({racks[b] for b in new}) == 2, (old, new)


# ---- generated clusters -----------------------------------------------------------------------


@st.composite
def lowerings(draw):
    """A cluster (racks or not, rack-valid or not) with leaders anywhere in each list or none
    (-1), and a replication factor below its largest one."""
    with_racks = draw(st.booleans())
    snap, rack_of = draw(clusters(racks=with_racks, rack_valid=draw(st.booleans())))
    for t in snap["topics"]:
        for p in t["partitions"]:
            p["leader"] = draw(st.sampled_from(p["replicas"] + [-1]))
    top = max(len(p["replicas"]) for t in snap["topics"] for p in t["partitions"])
    if top == 1:  # nothing to lower: give one partition a second replica
        p = snap["topics"][0]["partitions"][0]
        p["replicas"] = p["replicas"] + [next(b["id"] for b in snap["brokers"] if b["id"] not in p["replicas"])]
        if p["sizes"] is not None:
            p["sizes"] = p["sizes"] + p["sizes"][:1]
        top = 2
    return snap, rack_of, draw(st.integers(1, top - 1))


@given(lowerings())
def test_lowering_never_removes_a_live_leader_and_keeps_the_rack_rule(case):
    snap, rack_of, rf = case
    assert_leaders_kept(snap, lowered_rows(snap, rf), rf)
    result = api.plan(snap, "replication-factor", replication_factor=rf)
    before = {(t["name"], p["partition"]): p["replicas"] for t in snap["topics"] for p in t["partitions"]}
    after = final_rows(snap, result)
    targets = result.report["target_brokers"]
    for key, lead in leaders_of(snap).items():
        row = after[key]
        assert len(row) == len(set(row)) == rf and set(row) <= set(targets), (key, row)
        if len(before[key]) > rf and lead >= 0:
            assert lead in row, (key, before[key], lead, row)
    if rack_of:
        names = sorted({rack_of[b] for b in targets})
        for key, old in before.items():
            new = after[key]
            spread_old = len({rack_of[b] for b in old})
            assert len({rack_of[b] for b in new}) >= min(spread_old, rf), (key, old, new)
            if rack_valid(old, rack_of, names):
                assert rack_valid(new, rack_of, names), (key, old, new)
    assert result.report["fair"] == fair(after, targets)
    # The same plan twice (the rule adds no randomness).
    again = api.plan(snap, "replication-factor", replication_factor=rf)
    assert again.reassignment == result.reassignment


# ---- the service's report -----------------------------------------------------------------


def test_the_topic_configuration_report_has_no_leader_leaving():
    """planner_service.topic_config's summary over the plan: with every partition led, lowering
    makes no leader leave (the report's leaders_leaving; before, broker 1 left two of the
    partitions it leads here)."""
    rows = [[1, 2, 3], [1, 3, 4], [1, 4, 2], [1, 2, 3], [2, 3, 4], [3, 4, 1]]
    snap = snap_of({("t", p): r for p, r in enumerate(rows)}, {b: None for b in range(1, 5)})
    result = api.plan(snap, "replication-factor", topics=["t"], replication_factor=2)
    selection = select_topics({"t": [3] * len(rows)}, re.compile("t"), 2)
    tc = summary(selection, result.moves, skip_rack_awareness_check=False)
    assert tc["leaders_leaving"] == 0 and tc["leaders_leaving_partitions"] == []
    assert tc["replicas_removed"] == len(rows) and tc["replicas_added"] == 0


# ---- on Spark ---------------------------------------------------------------------------------


@pytest.mark.spark
def test_on_spark_the_per_topic_moves_keep_the_leaders_too(spark):
    """The per-topic moves run as Spark tasks (spark_jobs.realize): the same plan as in-process,
    every lowered leader kept. Eight brokers in two racks, 48 partitions at three replicas led
    from anywhere in their lists, down to two: on this cluster one of the per-topic transfers
    would take a kept leader's replica if realize did not skip it."""
    rng = random.Random(1)
    parts, leaders = {}, {}
    for p in range(48):
        parts[("t", p)] = rng.sample(range(8), 3)
        leaders[("t", p)] = rng.choice(parts[("t", p)])
    snap = snap_of(parts, {b: f"r{b % 2}" for b in range(8)}, leaders)
    local = api.plan(snap, "replication-factor", replication_factor=2)
    on_spark = api.plan(snap, "replication-factor", replication_factor=2, spark=spark)
    assert on_spark.reassignment == local.reassignment
    after = final_rows(snap, on_spark)
    for key, lead in leaders_of(snap).items():
        assert lead in after[key] and len(after[key]) == 2, (key, lead, after[key])
    assert on_spark.report["fair"] and on_spark.report["moves"] > 0
