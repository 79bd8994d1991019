"""Kafka's old --generate, waves under per-broker caps, and the PNG chart."""

from __future__ import annotations

import random
import struct
import zlib
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_jobs import api, legacy_generate
from spark_jobs.batching import make_batches
from spark_jobs.chart import ChartError, render, write_chart
from spark_jobs.errors import PlanError
from spark_jobs.legacy import assign_aware, assign_unaware
from tests.planner.strategies import clusters


def test_unaware_layout_matches_kafkas_fixed_start_example():
    # Kafka's AdminUtils with 5 brokers, 10 partitions, RF 3 and fixed start index 0.
    expected = [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 0], [4, 0, 1],
                [0, 2, 3], [1, 3, 4], [2, 4, 0], [3, 0, 1], [4, 1, 2]]
    assert assign_unaware(10, 3, [0, 1, 2, 3, 4], random.Random(0), fixed=0) == expected


def test_aware_layout_spreads_over_racks_and_rotates_leaders():
    racks = {0: "a", 1: "c", 2: "c", 3: "b", 4: "c", 5: "a"}
    layout = assign_aware(12, 3, racks, random.Random(0), fixed=0)
    # Leaders follow the rack-alternated list: a, b, c, a, c, c.
    assert [row[0] for row in layout[:6]] == [0, 3, 1, 5, 2, 4]
    for row in layout:
        assert len(set(row)) == 3
        assert len({racks[b] for b in row}) == 3


def test_legacy_generate_is_seeded_and_lists_every_partition():
    snap = {"version": 1, "brokers": [{"id": b} for b in range(4)],
            "topics": [{"name": "t", "partitions": [{"partition": p, "replicas": [0, 1]} for p in range(6)]}]}
    a = legacy_generate(snap, ["t"], [0, 1, 2, 3], seed=7)
    assert a == legacy_generate(snap, ["t"], [3, 2, 1, 0], seed=7)
    assert [e["partition"] for e in a["partitions"]] == list(range(6))
    assert all(len(set(e["replicas"])) == 2 for e in a["partitions"])
    leaders = Counter(e["replicas"][0] for e in a["partitions"])
    assert sorted(leaders.values()) == [1, 1, 2, 2]  # round-robin leaders
    seeds = {str(legacy_generate(snap, ["t"], [0, 1, 2, 3], seed=s)) for s in range(10)}
    assert len(seeds) > 1  # the start index and shift are random
    with pytest.raises(PlanError, match="replication factor 2 larger than 1"):
        legacy_generate(snap, ["t"], [0])
    with pytest.raises(PlanError, match="topics not in the snapshot"):
        legacy_generate(snap, ["x"], [0, 1])


@given(clusters(racks=False), st.integers(1, 3), st.integers(1, 3))
def test_waves_respect_caps_and_cover_the_plan(generated, max_in, max_out):
    snap, _ = generated
    result = api.plan(snap, "rebalance", max_in=max_in, max_out=max_out, throttle=1000)
    old = {(t["name"], p["partition"]): p["replicas"] for t in snap["topics"] for p in t["partitions"]}
    seen = []
    for wave in result.batches["waves"]:
        ins, outs = Counter(), Counter()
        for e in wave["partitions"]:
            seen.append((e["topic"], e["partition"], tuple(e["replicas"])))
            before = old[(e["topic"], e["partition"])]
            ins.update(b for b in e["replicas"] if b not in before)
            outs.update(b for b in before if b not in e["replicas"])
        if wave["kind"] == "data":
            fits = all(v <= max_in for v in ins.values()) and all(v <= max_out for v in outs.values())
            assert fits or len(wave["partitions"]) == 1
        else:
            assert not ins and not outs
    planned = [(e["topic"], e["partition"], tuple(e["replicas"])) for e in result.reassignment["partitions"]]
    assert sorted(seen) == sorted(planned)
    b = result.batches
    if b["sizes_known"]:
        assert b["estimated_seconds"] >= b["lower_bound_seconds"] - 1e-9


def test_waves_group_similar_sizes():
    moves = [{"topic": "t", "partition": p, "old": [0], "new": [p % 4 + 1], "adds": 1, "bytes": s, "size": s, "leader": 0}
             for p, s in enumerate([10, 10_000, 20, 9_000, 30, 11_000, 40, 12_000])]
    b = make_batches(moves, max_in=4, max_out=4, throttle=100)
    assert [w["largest_partition_bytes"] for w in b["waves"]] == [12_000, 40]
    assert b["waves"][0]["smallest_partition_bytes"] == 9_000
    assert b["lower_bound_seconds"] == pytest.approx(sum(s for m in moves for s in [m["size"]]) / 100)
    with pytest.raises(ValueError, match="--max-in"):
        make_batches(moves, max_in=0)


def _png_size(data: bytes):
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR"
    w, h = struct.unpack(">II", data[16:24])
    crc = struct.unpack(">I", data[16 + length:20 + length])[0]
    assert crc == zlib.crc32(data[12:16 + length]) & 0xFFFFFFFF
    return w, h


def test_chart_is_a_valid_png_for_small_and_large_clusters():
    small = {"version": 1, "brokers": [{"id": b} for b in range(4)],
             "topics": [{"name": "t", "partitions": [{"partition": p, "replicas": [p % 2]} for p in range(13)]}]}
    w, h = _png_size(render(api.plan(small, "rebalance").report))
    assert w >= 500 and h > 500
    big_report = {"mode": "rebalance", "moves": 1, "lower_bound": 1, "replica_target": [3, 4], "leader_target": [1, 2],
                  "per_broker": [{"broker": b, "replicas_before": b % 7, "replicas_after": 3, "leaders_before": 1,
                                  "leaders_after": 1} for b in range(1050)]}
    w, h = _png_size(render(big_report))
    assert w <= 1400


def _svg_text(data: bytes) -> str:
    import xml.etree.ElementTree as ET

    root = ET.fromstring(data)  # well-formed SVG
    assert root.tag.endswith("svg")
    return " ".join(t.strip() for t in root.itertext() if t.strip())


def test_chart_shows_every_measure_with_targets_and_the_lower_bound(tmp_path):
    report = {"mode": "rebalance", "moves": 7, "lower_bound": 6, "rack_fix_moves": 1, "replica_target": [3, 4],
              "leader_target": [1, 2],
              "per_broker": [{"broker": b, "rack": f"rack-{b % 2}", "replicas_before": b, "replicas_after": 3,
                              "leaders_before": 1, "leaders_after": 1, "bytes_before": b * 2**30,
                              "bytes_after": 2 * 2**30} for b in (11, 12, 13)]}
    text = _svg_text(render(report, "svg"))
    for words in ("rebalance: 7 moves, lower bound 6", "1 of them to make partitions rack-valid",
                  "replicas per broker", "preferred leaders per broker", "bytes on disk per broker", "GiB",
                  "R = 3", "R+1 = 4", "R = 1", "R+1 = 2", "before", "after", "rack-1", "11", "13"):
        assert words in text, words
    assert "disk use" not in text  # no capacities known
    # With capacities, disk use against them and the capacity goal's threshold.
    with_caps = dict(report, capacity={"threshold": 0.8}, per_broker=[
        dict(r, disk_capacity=4 * 2**30, disk_use_before=r["bytes_before"] / (4 * 2**30),
             disk_use_after=r["bytes_after"] / (4 * 2**30)) for r in report["per_broker"]])
    caps_text = _svg_text(render(with_caps, "svg"))
    assert "disk use, % of capacity" in caps_text and "threshold 80%" in caps_text
    # Sizes unknown (every byte count 0): no bytes panel rather than a panel of zeros.
    unsized = dict(report, per_broker=[dict(r, bytes_before=0, bytes_after=0) for r in report["per_broker"]])
    assert "bytes on disk" not in _svg_text(render(unsized, "svg"))
    # The same report draws the same SVG (no date, fixed ids): charts can be compared and committed.
    assert render(report, "svg") == render(report, "svg")
    write_chart(report, tmp_path / "c.svg")
    write_chart(report, tmp_path / "c.png")
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(ChartError, match=".png or .svg"):
        write_chart(report, tmp_path / "c.jpg")
    assert not (tmp_path / "c.jpg").exists()

