"""The exact solver on placements that already break the rack rule: it finds the fair plans the
rule's own moves reach (each move to a rack holding the fewest of the partition's other
replicas, so what a partition may end with depends on the order of its moves), and never one
those moves cannot reach."""

from __future__ import annotations

from collections import Counter

import numpy as np

from spark_jobs import api
from spark_jobs.racks import RackRule
from tests.planner.test_plan_probe import _applied, _rows
from tests.planner.test_planner import cluster


def _reached(rule: RackRule, old: list, new: list) -> bool:
    """Can ``old`` become ``new`` by moving each leaving replica straight to a broker of ``new``,
    one at a time, every move one the rule allows?"""
    src = [b for b in old if b not in new]
    dst = [b for b in new if b not in old]
    if not src:
        return True
    return any(
        rule.allowed(old, s, d) and _reached(rule, [d if b == s else b for b in old], new)
        for s in src
        for d in dst
    )


def _plan(assignment: dict, racks: dict, mode: str = "rebalance", drained=()):
    snap = cluster(assignment, list(racks), racks)
    result = api.plan(snap, mode, **({"brokers": list(drained)} if drained else {}))
    target = np.array([b not in drained for b in racks])
    rule = RackRule.build([racks[b] for b in racks], target)
    before, after = _rows(snap), _rows(_applied(snap, result))
    broken = {k: (before[k], after[k]) for k in before if not _reached(rule, before[k], after[k])}
    return snap, result, after, broken


def test_a_partition_its_moves_make_valid_may_then_change_a_broker_in_its_full_rack():
    # r0 {5, 6}, r1 {0, 1, 2, 3, 4, 7}. Brokers 1 and 7 hold 3 replicas, 0 none; the two-replica
    # partitions sit in r1 alone, so their first move must go to r0. t2-8 [7, 1] may do that
    # (1 -> 5) and, valid then, move 7 to 0 inside r1: two moves. The solver barred new brokers
    # from a rack that held "too many" at the start and took three.
    racks = {0: "r1", 1: "r1", 2: "r1", 3: "r1", 4: "r1", 5: "r0", 6: "r0", 7: "r1"}
    assignment = {("t0", 6): [6, 5, 2], ("t2", 2): [3, 2], ("t2", 5): [4, 7], ("t2", 8): [7, 1],
                  ("t2", 11): [1, 4], ("t2", 14): [7, 1]}
    snap, result, after, broken = _plan(assignment, racks)
    assert result.report["fair"] and not broken, broken
    assert result.report["moves"] == 2, result.reassignment
    assert set(Counter(b for r in after.values() for b in r).values()) <= {1, 2}


def test_a_fair_plan_that_only_the_rules_order_of_moves_reaches_is_found():
    # r0 {3, 8}, r1 {0, 1, 2, 4, 5, 6}, r2 {7}: brokers 5, 6 and 8 hold both partitions, so each
    # must give one up. t2-17 [5, 8, 0, 6] (racks [1, 3, 0]) can: 5 -> 7 fills the empty rack,
    # then it is valid and 8 -> 3, 6 -> 1 move inside their racks. The solver held its r0 and r1
    # replicas in place and the plan stayed unfair (a second plan moved again).
    racks = {0: "r1", 1: "r1", 2: "r1", 3: "r0", 4: "r1", 5: "r1", 6: "r1", 7: "r2", 8: "r0"}
    assignment = {("t2", 8): [5, 6, 8], ("t2", 17): [5, 8, 0, 6]}
    snap, result, after, broken = _plan(assignment, racks)
    assert result.report["fair"] and not broken, (result.reassignment, broken)
    assert result.report["moves"] == 3
    assert api.plan(_applied(snap, result), "rebalance").reassignment["partitions"] == []


def test_a_rack_breaking_partition_moves_only_to_the_emptiest_rack():
    # r0 {0, 2, 6}, r1 {1, 3, 5}, r2 {4}. t0-6 [5, 2, 1, 3] holds racks [1, 3, 0]: a replica
    # leaving r1 must go to r2, the rack holding none ([1, 3, 0] may end [1, 2, 1], never
    # [2, 2, 0]). The solver's per-rack bounds let it end [2, 2, 0] (1 -> 0); the one move it
    # needs is 1 -> 3 in t2-8, which is rack-valid.
    racks = {0: "r0", 1: "r1", 2: "r0", 3: "r1", 4: "r2", 5: "r1", 6: "r0"}
    assignment = {("t0", 6): [5, 2, 1, 3], ("t2", 2): [5, 1, 6], ("t2", 8): [1, 0, 4]}
    snap, result, after, broken = _plan(assignment, racks)
    assert result.report["fair"] and not broken, broken
    assert result.report["moves"] == 1


def test_a_drained_replica_of_a_rack_breaking_partition_goes_to_the_emptiest_rack():
    # Draining broker 1 (r1): both partitions hold racks r0 0, r1 3 (one on broker 1), r2 1, so
    # the replica leaving broker 1 must go to r0 (broker 4). The solver sent one to r2 instead
    # (two moves, the rule broken); obeying it takes a third move.
    racks = {0: "r2", 1: "r1", 2: "r1", 3: "r2", 4: "r0", 5: "r1"}
    assignment = {("t0", 3): [2, 1, 5, 3], ("t2", 5): [2, 1, 3, 5]}
    snap, result, after, broken = _plan(assignment, racks, "decommission", drained=[1])
    assert result.report["fair"] and not broken, broken
    assert all(4 in row and 1 not in row for row in after.values())
    assert result.report["moves"] == 3
