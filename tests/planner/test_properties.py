"""Property tests of the planner over generated clusters, judged against an independent optimum."""

from __future__ import annotations

import json
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from spark_jobs import api
from spark_jobs.outputs import plan_json
from tests.planner import oracle
from tests.planner.strategies import clusters, requests


def _rows(snap: dict) -> dict:
    return {(t["name"], p["partition"]): list(p["replicas"]) for t in snap["topics"] for p in t["partitions"]}


def _final(snap: dict, result) -> dict:
    rows = _rows(snap)
    for e in result.reassignment["partitions"]:
        rows[(e["topic"], e["partition"])] = list(e["replicas"])
    return rows


def _valid(row, rack_of, racks) -> bool:
    k = len(racks)
    lo, hi = len(row) // k, -(-len(row) // k)
    c = Counter(rack_of[b] for b in row)
    return all(lo <= c.get(x, 0) <= hi for x in racks)


def _check(snap, rack_of, mode, kwargs):
    result = api.plan(snap, mode, **kwargs)
    report = result.report
    before = _rows(snap)
    after = _final(snap, result)
    targets = report["target_brokers"]
    tset = set(targets)
    keys = sorted(before)
    new_rf = {key: kwargs.get("replication_factor") or len(before[key]) for key in keys}

    # Hard constraints.
    for key in keys:
        row = after[key]
        assert len(row) == len(set(row)), (key, row)
        assert set(row) <= tset, (key, row, targets)
        assert len(row) == new_rf[key]
    for e in result.reassignment["partitions"]:
        assert before[(e["topic"], e["partition"])] != e["replicas"]  # only changed lists
    if rack_of:
        racks = sorted({rack_of[b] for b in targets})
        for key in keys:
            old, new = before[key], after[key]
            if set(old) == set(new):
                continue
            spread_old = len({rack_of[b] for b in old if rack_of[b] in racks})
            spread_new = len({rack_of[b] for b in new})
            assert spread_new >= min(spread_old, new_rf[key]), (key, old, new)
            if _valid(old, rack_of, racks):
                assert _valid(new, rack_of, racks), (key, old, new)

    # A lower replication factor keeps each partition's live leader (spark_jobs.core): a hard
    # rule, so the optimum is over the plans that keep it.
    leaders = {(t["name"], p["partition"]): p.get("leader", -1) for t in snap["topics"] for p in t["partitions"]}
    keep = [leaders[k] if new_rf[k] < len(before[k]) and leaders[k] in tset else None for k in keys]
    for key, kept in zip(keys, keep):
        assert kept is None or kept in after[key], (key, kept, after[key])

    # Fairness and minimal moves, against the independent optimum.
    opt = oracle.min_moves([before[k] for k in keys], [new_rf[k] for k in keys], targets, rack_of, keep)
    counts = Counter(b for k in keys for b in after[k])
    total = sum(new_rf.values())
    low = total // len(targets)
    fair = all(counts.get(b, 0) in (low, low + 1) for b in targets)
    assert fair == report["fair"]
    moves = sum(len(set(after[k]) - set(before[k])) for k in keys)
    assert moves == report["moves"]
    if fair:
        assert moves >= report["lower_bound"]
    all_valid = not rack_of or all(_valid(before[k], rack_of, sorted({rack_of[b] for b in targets})) for k in keys)
    if opt is None:
        assert not fair
    elif all_valid:
        assert fair, (opt, report)
        assert moves == opt, (moves, opt, report["lower_bound"])
        if opt == report["lower_bound"]:
            assert report["moves_at_lower_bound"]
    else:
        assert not fair or moves >= opt

    # Leaders: R or R+1 whenever the final replica sets allow it.
    final_rows = [after[k] for k in keys]
    assert report["leaders_fair"] == oracle.leaders_feasible(final_rows, targets)
    return result, before, after


@given(st.data())
def test_plans_without_racks(data):
    snap, rack_of = data.draw(clusters(racks=False))
    mode, kwargs = data.draw(requests(snap, rack_of))
    result, before, after = _check(snap, rack_of, mode, kwargs)
    if mode in ("rebalance", "add-brokers"):
        # Every move goes from a broker holding more of its topic to one holding fewer, so
        # no topic's spread over the brokers grows.
        targets = result.report["target_brokers"]
        for t in snap["topics"]:
            keys = [(t["name"], p["partition"]) for p in t["partitions"]]
            cb = Counter(b for k in keys for b in before[k])
            ca = Counter(b for k in keys for b in after[k])
            spread_b = max(cb.get(b, 0) for b in targets) - min(cb.get(b, 0) for b in targets)
            spread_a = max(ca.get(b, 0) for b in targets) - min(ca.get(b, 0) for b in targets)
            assert spread_a <= spread_b, (t["name"], cb, ca)
            assert sum(v * v for v in ca.values()) <= sum(v * v for v in cb.values())


@given(st.data())
def test_plans_with_racks(data):
    snap, rack_of = data.draw(clusters(racks=True, rack_valid=data.draw(st.booleans())))
    mode, kwargs = data.draw(requests(snap, rack_of))
    _check(snap, rack_of, mode, kwargs)


@given(st.data())
def test_same_snapshot_same_plan_bytes(data):
    snap, rack_of = data.draw(clusters(racks=data.draw(st.booleans()), rack_valid=False))
    mode, kwargs = data.draw(requests(snap, rack_of))
    a = api.plan(snap, mode, **kwargs)
    b = api.plan(json.loads(json.dumps(snap)), mode, **kwargs)
    assert plan_json(a.reassignment) == plan_json(b.reassignment)
    assert json.dumps(a.report, sort_keys=True) == json.dumps(b.report, sort_keys=True)
    assert json.dumps(a.batches, sort_keys=True) == json.dumps(b.batches, sort_keys=True)


@given(st.data())
def test_fix_racks_repairs_violations_and_counts_them_apart(data):
    snap, rack_of = data.draw(clusters(racks=True, rack_valid=False))
    result = api.plan(snap, "rebalance", fix_racks=True)
    report = result.report
    racks = report["racks"]
    assert racks["invalid_partitions_after"] <= racks["invalid_partitions_before"]
    per_rack = Counter(rack_of.values())
    max_rf = max(len(p["replicas"]) for t in snap["topics"] for p in t["partitions"])
    if min(per_rack.values()) >= max_rf:  # room in every rack: every violation can be repaired
        assert racks["invalid_partitions_after"] == 0
    if racks["invalid_partitions_before"] == 0:
        assert report["rack_fix_moves"] == 0
    assert report["total_moves"] <= report["rack_fix_moves"] + report["moves"]
    plain = api.plan(snap, "rebalance")
    assert plain.report["rack_fix_moves"] == 0
