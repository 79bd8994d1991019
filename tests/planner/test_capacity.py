"""The disk goals (issue 24 item 3): the capacity file, where each broker's capacity comes from,
the hard capacity goal (no target broker above threshold x capacity, or the plan is refused
with the reason), its moves and their reasons, and the count goal's guarantees kept when the
capacity goal is not binding."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from reassignd import plan as plan_command
from spark_jobs import api, capacity, logdirs, snapshot
from spark_jobs.capacity import MIB, CapacityError, CapacitySpec
from spark_jobs.errors import PlanError, SnapshotError


def skewed(n_brokers=6, seed=1, big_topics=2, topics=8, parts=6, rf=3, big=30_000, small=1_000, racks=None) -> dict:
    """Kafka-like random placement; the first ``big_topics`` topics are 30x the others."""
    rng = random.Random(seed)
    out = []
    for t in range(topics):
        ps = []
        for p in range(parts):
            reps = rng.sample(range(n_brokers), rf)
            size = big if t < big_topics else small
            ps.append({"partition": p, "replicas": reps, "leader": reps[0], "sizes": [size] * rf})
        out.append({"name": f"t{t}", "partitions": ps})
    brokers = [{"id": b, "rack": (racks or {}).get(b)} for b in range(n_brokers)]
    return snapshot.validate({"version": 1, "brokers": brokers, "topics": out})


def bytes_after(snap, result) -> Counter:
    rows = {(t["name"], p["partition"]): (p["replicas"], p["sizes"][0]) for t in snap["topics"] for p in t["partitions"]}
    for e in result.reassignment["partitions"]:
        rows[(e["topic"], e["partition"])] = (e["replicas"], rows[(e["topic"], e["partition"])][1])
    out = Counter()
    for reps, size in rows.values():
        for b in reps:
            out[b] += size
    return out


def counts_after(snap, result) -> Counter:
    rows = {(t["name"], p["partition"]): p["replicas"] for t in snap["topics"] for p in t["partitions"]}
    for e in result.reassignment["partitions"]:
        rows[(e["topic"], e["partition"])] = e["replicas"]
    return Counter(b for r in rows.values() for b in r)


def tight_capacity(snap, slack=1.02, threshold=capacity.DEFAULT_THRESHOLD) -> int:
    """A per-broker capacity at which the mean broker would sit just under the threshold."""
    total = sum(s for t in snap["topics"] for p in t["partitions"] for s in p["sizes"])
    return int(total / len(snap["brokers"]) / threshold * slack)


# ---- the capacity file -----------------------------------------------------------------------------


def test_cruise_controls_capacity_file_default_broker_entries_and_jbod():
    doc = {"brokerCapacities": [
        {"brokerId": "-1", "capacity": {"DISK": "100000", "CPU": "100", "NW_IN": "10000", "NW_OUT": "10000"},
         "doc": "the default"},
        {"brokerId": "3", "capacity": {"DISK": "2000.5"}},
        {"brokerId": "4", "capacity": {"DISK": {"/data1": "1000", "/data2": 500}}},
    ]}
    spec = capacity.parse(doc, "cap.json")
    assert spec.default == 100000 * MIB  # DISK in MiB, as Cruise Control reads it
    assert spec.brokers == {3: int(2000.5 * MIB), 4: 1500 * MIB}


@pytest.mark.parametrize("doc, message", [
    ([], "brokerCapacities"),
    ({"brokerCapacities": {}}, "brokerCapacities"),
    ({"brokerCapacities": [{"brokerId": "x", "capacity": {"DISK": "1"}}]}, "brokerCapacities[0].brokerId"),
    ({"brokerCapacities": [{"brokerId": "-2", "capacity": {"DISK": "1"}}]}, "brokerCapacities[0].brokerId"),
    ({"brokerCapacities": [{"brokerId": "1", "capacity": {"CPU": "1"}}]}, "with DISK"),
    ({"brokerCapacities": [{"brokerId": "1", "capacity": {"DISK": "-5"}}]}, "positive number of MiB"),
    ({"brokerCapacities": [{"brokerId": "1", "capacity": {"DISK": "lots"}}]}, "number of MiB"),
    ({"brokerCapacities": [{"brokerId": "1", "capacity": {"DISK": {}}}]}, "no log directories"),
    ({"brokerCapacities": [{"brokerId": "1", "capacity": {"DISK": "1"}},
                           {"brokerId": 1, "capacity": {"DISK": "2"}}]}, "broker 1 listed twice"),
    ({"brokerCapacities": [{"brokerId": "-1", "capacity": {"DISK": "1"}},
                           {"brokerId": "-1", "capacity": {"DISK": "2"}}]}, "second default"),
])
def test_a_bad_capacity_file_is_refused_naming_the_element(doc, message):
    with pytest.raises(CapacityError, match="cap.json") as e:
        capacity.parse(doc, "cap.json")
    assert message in str(e.value)


def test_capacity_sources_in_order_file_entry_then_reported_then_default():
    spec = CapacitySpec(brokers={1: 111}, default=999)
    caps, sources = capacity.resolve([1, 2, 3], {1: 5, 2: 222, 3: None}, spec)
    assert caps.tolist() == [111, 222, 999]
    assert sources == ["file", "describe_log_dirs", "file_default"]
    caps, sources = capacity.resolve([1, 2], {2: 222}, None)
    assert caps.tolist() == [-1, 222] and sources == [None, "describe_log_dirs"]


def test_describe_log_dirs_total_bytes_become_the_brokers_disk():
    def answer(*totals, error=0):
        return {"error_code": 0, "results": [
            {"error_code": error, "log_dir": f"/d{i}", "total_bytes": t, "usable_bytes": 0,
             "topics": [{"name": "a", "partitions": [{"partition_index": i, "partition_size": 7,
                                                       "offset_lag": 0, "is_future_key": False}]}]}
            for i, t in enumerate(totals)]}

    found = logdirs.sizes_from_answer(answer(1000, 500))
    assert found == {("a", 0): 7, ("a", 1): 7} and found.disk_bytes == 1500
    assert logdirs.sizes_from_answer(answer(1000, -1)).disk_bytes is None  # one dir does not say
    v3 = {"error_code": 0, "results": [{"error_code": 0, "log_dir": "/d", "topics": []}]}
    assert logdirs.sizes_from_answer(v3).disk_bytes is None


def test_a_snapshot_keeps_a_brokers_disk_bytes_and_refuses_a_bad_one():
    base = {"version": 1, "brokers": [{"id": 1, "disk_bytes": 4096}, {"id": 2}],
            "topics": [{"name": "a", "partitions": [{"partition": 0, "replicas": [1]}]}]}
    snap = snapshot.validate(base)
    assert snap["brokers"][0]["disk_bytes"] == 4096 and "disk_bytes" not in snap["brokers"][1]
    for bad in (0, -3, "4096", 1.5):
        with pytest.raises(SnapshotError, match=r"brokers\[0\].disk_bytes"):
            snapshot.validate({**base, "brokers": [{"id": 1, "disk_bytes": bad}]})


# ---- the capacity goal ------------------------------------------------------------------------------


def test_skewed_cluster_the_count_plan_breaks_the_threshold_and_the_capacity_plan_does_not():
    snap = skewed()
    cap = tight_capacity(snap)
    count_only = api.plan(snap, "rebalance")
    limit = cap * capacity.DEFAULT_THRESHOLD
    assert max(bytes_after(snap, count_only).values()) > limit  # the count plan alone breaks it
    result = api.plan(snap, "rebalance", capacity=CapacitySpec(default=cap))
    after = bytes_after(snap, result)
    assert max(after.values()) <= limit
    c = result.report["capacity"]
    assert c["over_threshold_count_plan"] and c["over_threshold_after"] == []
    assert c["peak_use_count_plan"] > 0.8 >= c["peak_use_after"]
    # the count goal holds (swaps and R+1 -> R moves keep it), the extra moves are reported
    low = sum(counts_after(snap, result).values()) // 6
    assert set(counts_after(snap, result).values()) <= {low, low + 1} and result.report["fair"]
    assert c["count_goal_kept"] and c["extra_moves"] == result.report["moves"] - c["count_plan_moves"] > 0
    assert not result.report["moves_at_lower_bound"]
    assert c["steps"] and all("over its limit" in s["reason"] for s in c["steps"])
    per = {b["broker"]: b for b in result.report["per_broker"]}
    assert all(per[b]["disk_capacity"] == cap and per[b]["disk_use_after"] <= 0.8 for b in range(6))
    assert per[0]["disk_capacity_source"] == "file_default"
    assert abs(per[0]["disk_use_after"] - after[0] / cap) < 1e-3
    assert c["band_after"]["brokers_outside"] <= c["band_before"]["brokers_outside"]


def test_capacity_not_binding_gives_the_count_plan_unchanged():
    snap = skewed(seed=4)
    plain = api.plan(snap, "rebalance")
    roomy = api.plan(snap, "rebalance", capacity=CapacitySpec(default=10**12))
    assert roomy.reassignment == plain.reassignment
    assert roomy.report["moves"] == plain.report["moves"] == plain.report["lower_bound"]
    assert roomy.report["moves_at_lower_bound"] and roomy.report["fair"]
    c = roomy.report["capacity"]
    assert c["extra_moves"] == 0 and c["steps"] == [] and c["over_threshold_after"] == []
    assert plain.report["capacity"] is None  # nothing known, nothing claimed


def test_a_cluster_over_its_total_limit_is_refused_with_the_reason():
    snap = skewed()
    cap = tight_capacity(snap, slack=0.9)  # the mean broker alone is over the threshold
    with pytest.raises(PlanError, match="disk capacity goal: the target brokers hold .* limits add up to"):
        api.plan(snap, "rebalance", capacity=CapacitySpec(default=cap))


def test_a_partition_too_large_for_any_other_broker_is_refused_naming_it():
    # one 900-byte partition; every broker's limit is 800 bytes
    snap = snapshot.validate({"version": 1, "brokers": [{"id": b} for b in range(3)], "topics": [
        {"name": "huge", "partitions": [{"partition": 0, "replicas": [0], "sizes": [900]}]},
        {"name": "tiny", "partitions": [{"partition": p, "replicas": [p % 3], "sizes": [1]} for p in range(5)]},
    ]})
    with pytest.raises(PlanError, match=r"huge-0 holds 900 bytes, more than any target broker's limit \(largest 800\)"):
        api.plan(snap, "rebalance", capacity=CapacitySpec(default=1000))
    # it fits on broker 1's bigger disk, but broker 1 already holds its other replica
    snap2 = snapshot.validate({"version": 1, "brokers": [{"id": b} for b in range(3)], "topics": [
        {"name": "huge", "partitions": [{"partition": 0, "replicas": [0, 1], "sizes": [900, 900]}]},
        {"name": "tiny", "partitions": [{"partition": p, "replicas": [p % 3, (p + 1) % 3], "sizes": [1, 1]}
                                        for p in range(5)]},
    ]})
    spec = CapacitySpec(brokers={1: 2000}, default=1000)
    with pytest.raises(PlanError, match=r"broker [02] at 90\d bytes is over its limit 800.*huge-0, 900 bytes"):
        api.plan(snap2, "rebalance", capacity=spec)


def test_counts_leave_r_r1_only_when_no_move_or_swap_within_them_fits_and_it_is_reported():
    # Broker 0 has a small disk: two of the equal-sized partitions (its fair share) do not fit.
    snap = snapshot.validate({"version": 1, "brokers": [{"id": 0}, {"id": 1}], "topics": [
        {"name": "t", "partitions": [{"partition": p, "replicas": [p % 2], "sizes": [6]} for p in range(4)]}]})
    spec = CapacitySpec(brokers={0: 10}, default=1000)  # limit 8 bytes on broker 0
    result = api.plan(snap, "rebalance", capacity=spec)
    assert counts_after(snap, result)[0] == 1 and counts_after(snap, result)[1] == 3
    assert not result.report["fair"]
    c = result.report["capacity"]
    assert not c["count_goal_kept"] and c["over_threshold_after"] == []
    assert [s["kind"] for s in c["steps"]] == ["move"] and "count_relaxed" in c["steps"][0]["reason"]
    assert any("leave R/R+1" in w for w in result.report["warnings"])


def test_a_replica_that_fits_nowhere_yet_goes_where_another_makes_room_for_it():
    # The count plan puts a0 on broker 0 (limit 5 bytes). a0 (8 bytes) fits only on broker 1,
    # once broker 1's own 8-byte a1 has gone on to broker 2: a two-step chain, no move or swap.
    snap = snapshot.validate({"version": 1, "brokers": [{"id": b} for b in range(3)], "topics": [
        {"name": "a", "partitions": [{"partition": 0, "replicas": [2, 1], "sizes": [8, 8]},
                                     {"partition": 1, "replicas": [1], "sizes": [8]}]}]})
    spec = CapacitySpec(brokers={0: 7, 1: 17, 2: 37})  # limits 5, 13, 29
    assert 0 in api.plan(snap, "rebalance").reassignment["partitions"][0]["replicas"]
    result = api.plan(snap, "rebalance", capacity=spec)
    c = result.report["capacity"]
    assert [(s["partition"], s["from"], s["to"], s["kind"]) for s in c["steps"]] == [(1, 1, 2, "chain"), (0, 0, 1, "chain")]
    after = bytes_after(snap, result)
    assert after[0] <= 5 and after[1] <= 13 and after[2] <= 29
    assert c["over_threshold_after"] == [] and not c["count_goal_kept"]


def test_capacity_moves_keep_the_rack_rule():
    racks = {b: f"r{b % 3}" for b in range(6)}
    snap = skewed(racks=racks, seed=2)
    count_only = api.plan(snap, "rebalance", fix_racks=True)
    assert count_only.report["racks"]["invalid_partitions_before"] > 0
    assert count_only.report["capacity"] is None
    result = api.plan(snap, "rebalance", fix_racks=True, capacity=CapacitySpec(default=tight_capacity(snap, slack=1.05)))
    assert result.report["racks"]["invalid_partitions_after"] == 0
    assert result.report["capacity"]["steps"]
    assert result.report["capacity"]["over_threshold_after"] == []
    assert max(bytes_after(snap, result).values()) <= tight_capacity(snap, slack=1.05) * 0.8


def test_partitions_without_a_size_are_named_as_counting_nothing():
    snap = skewed()
    snap["topics"][3]["partitions"][0]["sizes"] = None
    result = api.plan(snapshot.validate(snap), "rebalance", capacity=CapacitySpec(default=10**9))
    assert result.report["capacity"]["partitions_without_size"] == 1
    assert "1 partitions have no known size and count 0 bytes" in " ".join(result.report["warnings"])
    assert api.plan(skewed(), "rebalance", capacity=CapacitySpec(default=10**9)).report["capacity"]["partitions_without_size"] == 0


def test_the_threshold_is_configurable_and_checked():
    snap = skewed()
    cap = tight_capacity(snap, slack=1.3)
    at_80 = api.plan(snap, "rebalance", capacity=CapacitySpec(default=cap))
    at_65 = api.plan(snap, "rebalance", capacity=CapacitySpec(default=cap), disk_threshold=0.65)
    assert at_65.report["capacity"]["threshold"] == 0.65
    assert max(bytes_after(snap, at_65).values()) <= cap * 0.65
    assert at_65.report["capacity"]["peak_use_after"] <= 0.65 < at_80.report["capacity"]["peak_use_count_plan"]
    for bad in (0, 1.5, -0.1, True):
        with pytest.raises(PlanError, match="disk threshold"):
            api.plan(snap, "rebalance", capacity=CapacitySpec(default=cap), disk_threshold=bad)


def test_reported_disk_sizes_alone_turn_the_goal_on():
    snap = skewed()
    cap = tight_capacity(snap)
    for b in snap["brokers"]:
        b["disk_bytes"] = cap
    result = api.plan(snapshot.validate(snap), "rebalance")
    assert result.report["capacity"]["over_threshold_after"] == []
    assert {b["disk_capacity_source"] for b in result.report["per_broker"]} == {"describe_log_dirs"}


def test_decommission_with_capacity_drains_and_stays_under():
    snap = skewed(n_brokers=7, seed=3)
    total = sum(s for t in snap["topics"] for p in t["partitions"] for s in p["sizes"])
    cap = int(total / 6 / 0.8 * 1.03)
    count_only = api.plan(snap, "decommission", brokers=[6])
    result = api.plan(snap, "decommission", brokers=[6], capacity=CapacitySpec(default=cap))
    after = bytes_after(snap, result)
    assert after[6] == 0 and max(after.values()) <= cap * 0.8
    assert result.report["capacity"]["peak_use_count_plan"] == pytest.approx(max(bytes_after(snap, count_only).values()) / cap, abs=1e-3)


# ---- the command line --------------------------------------------------------------------------------


def test_plan_command_reads_the_capacity_file(spark, tmp_path):
    snap = skewed()
    cap = tight_capacity(snap)
    src = tmp_path / "cluster.json"
    snapshot.dump(snap, src)
    capfile = tmp_path / "capacity.json"
    capfile.write_text(json.dumps({"brokerCapacities": [{"brokerId": "-1", "capacity": {"DISK": str(cap / MIB)}}]}))
    out, report = tmp_path / "plan.json", tmp_path / "report.json"
    rc = plan_command.main(["--snapshot", str(src), "--rebalance", "--capacity", str(capfile), "--out", str(out),
                    "--report", str(report)], spark=spark)
    assert rc == 0
    r = json.loads(report.read_text())
    assert r["capacity"]["over_threshold_after"] == [] and r["capacity"]["over_threshold_count_plan"]


def test_plan_command_refuses_a_bad_capacity_file_or_threshold_and_writes_nothing(spark, tmp_path, capsys):
    src = tmp_path / "cluster.json"
    snapshot.dump(skewed(), src)
    capfile = tmp_path / "capacity.json"
    capfile.write_text('{"brokerCapacities": [{"brokerId": "1", "capacity": {"DISK": "-1"}}]}')
    out = tmp_path / "plan.json"
    rc = plan_command.main(["--snapshot", str(src), "--rebalance", "--capacity", str(capfile), "--out", str(out)], spark=spark)
    assert rc == 1 and not out.exists()
    assert "brokerCapacities[0].capacity.DISK" in capsys.readouterr().err
    rc = plan_command.main(["--snapshot", str(src), "--rebalance", "--disk-threshold", "1.5", "--out", str(out)], spark=spark)
    assert rc == 2 and not out.exists()
    tight = tmp_path / "tight.json"
    tight.write_text(json.dumps({"brokerCapacities": [{"brokerId": "-1", "capacity": {"DISK": "0.01"}}]}))
    rc = plan_command.main(["--snapshot", str(src), "--rebalance", "--capacity", str(tight), "--out", str(out)], spark=spark)
    assert rc == 1 and not out.exists()
    assert "disk capacity goal" in capsys.readouterr().err


# ---- properties ------------------------------------------------------------------------------------

from hypothesis import given, strategies as st  # noqa: E402

from tests.planner.strategies import clusters, requests  # noqa: E402


@given(st.data(), st.booleans(), st.floats(0.3, 3.0))
def test_capacity_plans_meet_every_limit_or_are_refused_and_never_bind_needlessly(data, racks, factor):
    raw, rack_of = data.draw(clusters(racks=racks))
    snap = snapshot.validate(raw)
    mode, kwargs = data.draw(requests(snap, rack_of))
    count_only = api.plan(snap, mode, **kwargs)
    per = count_only.report["per_broker"]
    targets = [b for b in per if b["target"]]
    peak = max(b["bytes_after"] for b in targets)
    # a capacity at which the count plan's fullest broker sits at factor x the threshold
    cap = max(1, int(peak / 0.8 / factor)) if peak else 1
    try:
        result = api.plan(snap, mode, capacity=CapacitySpec(default=cap), **kwargs)
    except PlanError as e:
        assert "disk capacity goal" in str(e) and peak > int(cap * 0.8)  # a disk the count plan fits never refuses
        return
    after = {b["broker"]: b for b in result.report["per_broker"]}
    limit = int(cap * 0.8)
    assert all(b["bytes_after"] <= limit for b in after.values() if b["target"])
    for e in result.reassignment["partitions"]:
        assert len(set(e["replicas"])) == len(e["replicas"])
    assert all(b["replicas_after"] == 0 for b in after.values() if not b["target"])
    assert result.report["racks"]["invalid_partitions_after"] <= count_only.report["racks"]["invalid_partitions_after"]
    c = result.report["capacity"]
    if peak <= limit:  # not binding: the count plan itself, with its guarantees
        assert result.reassignment == count_only.reassignment and c["steps"] == [] and c["extra_moves"] == 0
    else:
        assert c["over_threshold_count_plan"] and c["steps"]
