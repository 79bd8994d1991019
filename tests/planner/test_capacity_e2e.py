"""The capacity goal end to end: ``reassignd sim`` brokers with a 160 MiB disk each (DescribeLogDirs
v4 total_bytes), topics on brokers 1-4 and two brokers added empty, two 64 MiB topics among many
1 MiB ones. ``reassignd snapshot`` reads the cluster and each broker's disk; the count-only plan
would leave a broker above 80% of its disk; the capacity-aware plan (``spark_jobs.plan``) keeps
every broker under it, and once a ``reassignd controller`` has carried it out the brokers' own
DescribeLogDirs answers say so."""

from __future__ import annotations

import asyncio
import copy
import json
import subprocess
import sys
from collections import Counter

import pytest

from reassignd import plan as plan_command
from spark_jobs import api, snapshot
from tests import figures
from tests.e2e.processes import REPO, running_cluster, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(300)]

DISK = 160 * 1024 * 1024
THRESHOLD = 0.8
SIM = ["--brokers", "6", "--topic-brokers", "1,2,3,4", "--topics", "big:2:2:64MiB", "small:40:2:1MiB",
       "--disk-bytes", "160MiB", "--produce-rate", "0", "--bandwidth", "200MiB", "--log-level", "WARNING"]
DONE_TIMEOUT_S = 90


def used(snap: dict, targets: dict | None = None) -> Counter:
    """Bytes per broker: each replica counted at its partition's size."""
    out = Counter({b["id"]: 0 for b in snap["brokers"]})
    for t in snap["topics"]:
        for p in t["partitions"]:
            size = max(s or 0 for s in p["sizes"])
            for b in (targets or {}).get((t["name"], p["partition"]), p["replicas"]):
                out[b] += size
    return out


def take_snapshot(hosts: str, path) -> dict:
    r = subprocess.run([sys.executable, "-m", "reassignd", "snapshot", "--zookeeper", hosts, "--out", str(path)],
                       capture_output=True, text=True, timeout=60, cwd=REPO)
    assert r.returncode == 0, r.stderr
    return snapshot.load(path)


def test_count_plan_breaks_the_disk_threshold_the_capacity_plan_keeps_every_broker_under(zk_hosts, tmp_path, spark):
    with running_cluster(zk_hosts, tmp_path, sim_args=SIM, controller_ids=(101,)) as c:
        snap = take_snapshot(zk_hosts, tmp_path / "before.json")
        assert {b["id"]: b.get("disk_bytes") for b in snap["brokers"]} == {b: DISK for b in range(1, 7)}
        before = used(snap)

        # the count goal alone (the snapshot without the disks the brokers reported)
        blind = copy.deepcopy(snap)
        for b in blind["brokers"]:
            b.pop("disk_bytes")
        count_only = api.plan(blind, "rebalance")
        assert count_only.report["capacity"] is None and count_only.report["fair"]
        targets = {(e["topic"], e["partition"]): e["replicas"] for e in count_only.reassignment["partitions"]}
        count_peak = max(used(snap, targets).values())
        assert count_peak > THRESHOLD * DISK

        # the capacity-aware plan, through the planner command, from the brokers' own disk sizes
        out, report_path = tmp_path / "plan.json", tmp_path / "report.json"
        assert plan_command.main(["--snapshot", str(tmp_path / "before.json"), "--rebalance", "--out", str(out),
                          "--report", str(report_path)], spark=spark) == 0
        report = json.loads(report_path.read_text())
        cap = report["capacity"]
        assert cap["over_threshold_count_plan"] and cap["over_threshold_after"] == []
        assert cap["peak_use_count_plan"] == pytest.approx(count_peak / DISK, abs=1e-3)
        assert report["fair"] and cap["count_goal_kept"] and cap["extra_moves"] >= 1
        planned = {(e["topic"], e["partition"]): e["replicas"] for e in json.loads(out.read_text())["partitions"]}
        assert max(used(snap, planned).values()) <= THRESHOLD * DISK

        # carried out by the controller; the brokers' DescribeLogDirs answers afterwards
        c.submit(planned)
        wait_for(c.reassignments_done, DONE_TIMEOUT_S, "the capacity-aware plan to complete")
        after_snap = take_snapshot(zk_hosts, tmp_path / "after.json")
        reported = asyncio.run(_log_dirs(c.brokers))
        after = {b: sum(sizes.values()) for b, sizes in reported.items()}
        assert set(after) == set(range(1, 7))
        assert max(after.values()) <= THRESHOLD * DISK, after
        assert {b: after[b] for b in after} == dict(used(after_snap))
        figures.record(
            "capacity e2e",
            disk_bytes=DISK,
            peak_use_before=round(max(before.values()) / DISK, 4),
            peak_use_count_plan=round(count_peak / DISK, 4),
            peak_use_after_execution=round(max(after.values()) / DISK, 4),
            count_plan_moves=count_only.report["moves"],
            capacity_plan_moves=report["moves"],
            capacity_extra_moves=cap["extra_moves"],
        )


async def _log_dirs(brokers: dict) -> dict:
    from spark_jobs.logdirs import query_sizes

    endpoints = {b: (addr.rsplit(":", 1)[0], int(addr.rsplit(":", 1)[1])) for b, addr in brokers.items()}
    sizes, warnings = await query_sizes(endpoints, timeout=10)
    assert not warnings, warnings
    return sizes
