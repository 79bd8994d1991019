"""``python -m spark_jobs.plan --rebalance-disks`` on real simulated brokers with two log
directories each (issue 23 item 4): every replica is first pushed into /data/d1, the command
asks the brokers for their directories (DescribeLogDirs) and writes intra-broker moves
(replicas unchanged, log_dirs naming /data/d2); ``kafka-reassign --execute`` runs them and the
directories end balanced; planned again, nothing moves. With a directory offline, its broker
gets no move and the report says why.

Real ZooKeeper (the session fixture), ``reassignd sim`` and one ``reassignd controller``.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from client.admin import AdminClient
from reassignd.plan import main as plan_main
from spark_jobs import disks
from spark_jobs import snapshot as snapshots
from tests.e2e.processes import running_cluster, sim_status, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(180)]

BIN = Path(sys.executable).parent / "kafka-reassign"
CLI = [str(BIN)] if BIN.exists() else [sys.executable, "-m", "client.cli"]
D1, D2 = "/data/d1", "/data/d2"
DISK = 64 * 1024 * 1024  # each directory's volume: the sizes below are percents of it
# big-0..3 at 2 MiB and small-0..3 at 256 KiB, both on brokers 1 and 2: 9 MiB per broker
SIM_ARGS = ["--brokers", "2", "--topics", "big:4:2:2MiB", "small:4:2:256KiB", "--log-dirs", f"{D1},{D2}",
            "--disk-bytes", str(DISK), "--bandwidth", "100MiB", "--produce-rate", "0", "--tick-ms", "50"]


def placement(control_port: int) -> dict[tuple[str, int, int], tuple[str, dict | None]]:
    return {(r["topic"], r["partition"], int(b)): (r["log_dir"], r["future"])
            for b, info in sim_status(control_port)["brokers"].items() for r in info["replicas"]}


def control(control_port: int, line: str) -> str:
    with socket.create_connection(("127.0.0.1", control_port), timeout=5) as s:
        s.sendall(line.encode() + b"\n")
        with s.makefile("rb") as answer:
            return answer.readline().decode()


async def push_into(bootstrap: str, keys, directory: str) -> None:
    async with AdminClient(bootstrap) as admin:
        result = await admin.alter_replica_log_dirs({k: directory for k in keys})
    assert all(err is None for err in result.values()), result


def plan(zk_hosts: str, tmp: Path, name: str) -> tuple[dict, dict]:
    snap = tmp / f"{name}.snapshot.json"
    snapshots.dump(asyncio.run(snapshots.read_cluster(zk_hosts)), snap)
    out, report = tmp / f"{name}.plan.json", tmp / f"{name}.report.json"
    assert plan_main(["--snapshot", str(snap), "--rebalance-disks", "--out", str(out), "--report", str(report)]) == 0
    return json.loads(out.read_text()), json.loads(report.read_text())


def bytes_per_dir(control_port: int) -> dict[int, dict[str, int]]:
    out: dict[int, dict[str, int]] = {}
    for b, info in sim_status(control_port)["brokers"].items():
        dirs = out.setdefault(int(b), {D1: 0, D2: 0})
        for r in info["replicas"]:
            dirs[r["log_dir"]] += r["size"]
    return out


def test_rebalance_disks_plans_intra_broker_moves_that_kafka_reassign_executes(zk_hosts, tmp_path):
    with running_cluster(zk_hosts, tmp_path, sim_args=SIM_ARGS, controller_ids=(101,)) as c:
        bootstrap = c.listeners[101]
        port = c.control_port
        everything = sorted(placement(port))
        asyncio.run(push_into(bootstrap, everything, D1))
        wait_for(lambda: all(d == D1 and f is None for d, f in placement(port).values()), 60,
                 "every replica in /data/d1")

        reassignment, report = plan(zk_hosts, tmp_path, "first")
        assert report["moves"] > 0 and not report["brokers_skipped"]
        for e in reassignment["partitions"]:
            assert e["replicas"] == c.replicas(e["topic"], e["partition"])  # replicas unchanged
            assert set(e["log_dirs"]) <= {D2, "any"} and D2 in e["log_dirs"]
        # the fewest moves: two or three big replicas per broker, no small one needed first
        assert all(b["balanced_after"] for b in report["brokers"])
        assert report["moves"] <= 6

        path = tmp_path / "first.plan.json"
        r = subprocess.run([*CLI, "--bootstrap-server", bootstrap, "--execute", "--reassignment-json-file", str(path)],
                           capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
        assert r.returncode == 0, r.stderr + r.stdout
        wait_for(lambda: all(f is None for _, f in placement(port).values())
                 and all(placement(port)[(m["topic"], m["partition"], m["broker"])][0] == m["to"]
                         for m in report["moves_listed"]), 60, "the planned moves to finish")
        for b, dirs in bytes_per_dir(port).items():
            mean = (dirs[D1] + dirs[D2]) / 2
            assert all(abs(v - mean) <= disks.DEFAULT_BAND * mean for v in dirs.values()), (b, dirs)

        # Planned again from the balanced layout: nothing to do.
        again, report = plan(zk_hosts, tmp_path, "again")
        assert again["partitions"] == [] and report["moves"] == 0

        # A directory offline on broker 2: no move there (Kafka refuses every future log on it).
        asyncio.run(push_into(bootstrap, [k for k in everything if k[2] == 1], D1))
        wait_for(lambda: all(d == D1 and f is None for (_, _, b), (d, f) in placement(port).items() if b == 1), 60,
                 "broker 1's replicas back in /data/d1")
        in_d2 = {(t, p) for (t, p, b), (d, _) in placement(port).items() if b == 2 and d == D2}
        assert in_d2
        assert control(port, f"fail-dir 2 {D2}").startswith("OK")
        reassignment, report = plan(zk_hosts, tmp_path, "offline")
        assert {m["broker"] for m in report["moves_listed"]} == {1}
        assert report["brokers_skipped"] == [{"broker": 2, "reason": disks.SKIP_OFFLINE.format(dirs=D2)}]
        offline = {(u["topic"], u["partition"]) for u in report["unmovable"] if u["broker"] == 2}
        assert offline == in_d2  # DescribeLogDirs lists none of them: the assignment does
        assert all(u["reason"] == disks.WHY_OFFLINE.format(dirs=D2) for u in report["unmovable"] if u["broker"] == 2)
