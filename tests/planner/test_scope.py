"""Issue 24 item 2: excluded_topics and excluded_brokers_for_replica_move, through the planner
service's planning call (planner_service.scope around spark_jobs.api.plan) on snapshots built
here: what is excluded stays where it is, nothing lands on an excluded broker, and the rest is
planned fairly."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from planner_service.scope import Scope, ScopeError, restrict
from planner_service.service import Options, PlannerService
from spark_jobs import api, snapshot as snapshots


def _snap(brokers, topics) -> dict:
    """brokers: ids (all alive); topics: name -> [replica lists]."""
    return snapshots.validate({
        "version": 1,
        "brokers": [{"id": b, "host": None, "port": None, "rack": None, "alive": True} for b in brokers],
        "topics": [{"name": t, "partitions": [{"partition": i, "replicas": r, "leader": r[0], "isr": r,
                                               "reassigning": False, "sizes": [1000 * (i + 1)] * len(r)}
                                              for i, r in enumerate(parts)]}
                   for t, parts in topics.items()],
    })


ROTATION = [[1, 2], [2, 3], [3, 4], [4, 1], [1, 3], [2, 4], [3, 1], [4, 2]]


@pytest.fixture(scope="module")
def service():
    svc = PlannerService(Options(zookeeper="127.0.0.1:1", sizes=False))
    yield svc
    svc.executor.shutdown(wait=False)


def _plan(svc, snap, scope, mode, **kw):
    result, _ = svc._plan_sync(snap, {"mode": mode, "max_in": 2, "max_out": 2, "throttle": None, **kw}, scope)
    return result


def _after(snap, result) -> dict:
    now = {(t["name"], p["partition"]): p["replicas"] for t in snap["topics"] for p in t["partitions"]}
    now.update({(e["topic"], e["partition"]): e["replicas"] for e in result.reassignment["partitions"]})
    return now


def _waves_match(result) -> None:
    planned = {(e["topic"], e["partition"]): e["replicas"] for e in result.reassignment["partitions"]}
    sent = {(p["topic"], p["partition"]): p["replicas"] for w in result.batches["waves"] for p in w["partitions"]}
    assert sent == planned


def test_excluded_topics_stay_and_the_rest_is_balanced(service):
    snap = _snap([1, 2, 3, 4, 5], {"orders": ROTATION, "__consumer_offsets": ROTATION})
    result = _plan(service, snap, Scope(re.compile("__.*")), "rebalance")
    assert result.reassignment["partitions"] and all(e["topic"] == "orders" for e in result.reassignment["partitions"])
    after = _after(snap, result)
    counts = Counter(b for (t, _), r in after.items() if t == "orders" for b in r)
    assert set(counts) == {1, 2, 3, 4, 5} and max(counts.values()) - min(counts.values()) <= 1, counts
    assert result.report["scope"]["topics_excluded"] == ["__consumer_offsets"]
    assert result.report["scope"]["partitions_left_in_place"] == len(ROTATION)
    _waves_match(result)
    # The regex matches whole names (Java's matches): "order" leaves "orders" in.
    assert _plan(service, snap, Scope(re.compile("order")), "rebalance").report["scope"]["topics_excluded"] == []


def test_an_excluded_topic_still_leaves_a_removed_broker(service):
    snap = _snap([1, 2, 3, 4, 5], {"orders": ROTATION, "__consumer_offsets": ROTATION})
    result = _plan(service, snap, Scope(re.compile("__.*")), "decommission", brokers=[4])
    after = _after(snap, result)
    assert not any(4 in r for r in after.values())  # Cruise Control moves them off too
    for (t, p), r in after.items():
        if t == "__consumer_offsets" and 4 not in ROTATION[p]:
            assert r == ROTATION[p]  # not on the removed broker: left in place


def test_nothing_lands_on_an_excluded_broker(service):
    snap = _snap([1, 2, 3, 4, 5, 6], {"orders": ROTATION, "audit": ROTATION})
    plain = api.plan(snap, "rebalance")
    assert any(5 in e["replicas"] for e in plain.reassignment["partitions"])  # without the exclusion, 5 receives
    result = _plan(service, snap, Scope(None, frozenset({5})), "rebalance")
    after = _after(snap, result)
    assert not any(5 in r for r in after.values())
    counts = Counter(b for r in after.values() for b in r)
    assert counts[6] > 0  # 6 receives; 5 receives nothing
    assert max(counts[b] for b in (1, 2, 3, 4, 6)) - min(counts[b] for b in (1, 2, 3, 4, 6)) <= 1, counts
    _waves_match(result)


def test_an_excluded_brokers_replicas_stay_in_place_while_another_is_drained(service):
    snap = _snap([1, 2, 3, 4, 5], {"orders": ROTATION, "audit": ROTATION})
    result = _plan(service, snap, Scope(None, frozenset({1})), "decommission", brokers=[4])
    after = _after(snap, result)
    assert not any(4 in r for r in after.values())
    before = {(t["name"], p["partition"]): p["replicas"] for t in snap["topics"] for p in t["partitions"]}
    for tp, r in after.items():
        if 1 in before[tp]:
            assert r.index(1) == before[tp].index(1), (tp, before[tp], r)  # kept, at its place
        else:
            assert 1 not in r, (tp, before[tp], r)
        assert len(r) == len(set(r)) == len(before[tp])
    _waves_match(result)
    assert result.report["scope"]["replicas_hidden"] == sum(1 in r for r in before.values())


def test_contradictions_are_refused(service):
    snap = _snap([1, 2, 3, 4, 5], {"orders": ROTATION})
    with pytest.raises(ScopeError, match="being removed"):
        restrict(snap, Scope(None, frozenset({4})), "decommission", [4], None)
    with pytest.raises(ScopeError, match="being added"):
        restrict(snap, Scope(None, frozenset({5})), "add-brokers", [5], None)
    with pytest.raises(ScopeError, match="both asked for"):
        restrict(snap, Scope(re.compile("orders")), "rebalance", None, None, ["orders"])
    with pytest.raises(ScopeError, match="every broker"):
        restrict(snap, Scope(None, frozenset({1, 2, 3, 4, 5})), "rebalance", None, None)


def test_no_scope_is_the_plain_plan(service):
    snap = _snap([1, 2, 3, 4, 5], {"orders": ROTATION})
    assert _plan(service, snap, None, "rebalance").reassignment == api.plan(snap, "rebalance").reassignment


def test_a_rack_repeated_with_a_hidden_replica_is_named():
    snap = snapshots.validate({
        "version": 1,
        "brokers": [{"id": b, "host": None, "port": None, "rack": rack, "alive": True}
                    for b, rack in ((1, "r1"), (2, "r2"), (3, "r1"), (4, "r2"))],
        "topics": [{"name": "t", "partitions": [{"partition": i, "replicas": [1, 2], "leader": 1, "isr": [1, 2],
                                                 "reassigning": False, "sizes": None} for i in range(4)]}],
    })
    svc = PlannerService(Options(zookeeper="127.0.0.1:1", sizes=False))
    try:
        result = _plan(svc, snap, Scope(None, frozenset({1})), "decommission", brokers=[2])
    finally:
        svc.executor.shutdown(wait=False)
    after = _after(snap, result)
    rack = {1: "r1", 2: "r2", 3: "r1", 4: "r2"}
    repeated = sorted(f"t-{p}" for (_, p), r in after.items() if len({rack[b] for b in r}) < len(r))
    assert all(r[0] == 1 and 2 not in r for r in after.values())
    assert repeated and result.report["scope"]["rack_conflicts"] == repeated
    assert any("rack of one kept on an excluded broker" in w for w in result.report["warnings"])
