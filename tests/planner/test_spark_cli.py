"""The planner on Spark: same plans as in-process, fleet mode in one job, the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import msgpack
import pytest

from reassignd import plan as plan_command
from spark_jobs import api, outputs, snapshot

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]


def make_cluster(n_brokers: int, n_topics: int, parts: int, rf: int, used: int, racks: int = 0) -> dict:
    """Topics laid out round-robin over the first ``used`` brokers; the rest start empty."""
    brokers = [{"id": b, "host": "127.0.0.1", "port": 9092, "rack": f"r{b % racks}" if racks else None} for b in range(n_brokers)]
    topics = []
    for t in range(n_topics):
        ps = []
        for p in range(parts):
            first = (t * 3 + p) % used
            reps = [(first + j * (1 + t % 2)) % used for j in range(rf)]
            if len(set(reps)) < rf:
                reps = [(first + j) % used for j in range(rf)]
            ps.append({"partition": p, "replicas": reps, "leader": reps[0], "sizes": [1000 * (p + 1)] * rf})
        topics.append({"name": f"topic-{t:03d}", "partitions": ps})
    return {"version": 1, "brokers": brokers, "topics": topics}


def test_spark_and_in_process_plans_are_identical(spark):
    snap = make_cluster(12, 150, 8, 3, 9)  # 150 topics: several Spark tasks of topic chunks
    on_spark = api.plan(snap, "rebalance", spark=spark)
    local = api.plan(snap, "rebalance")
    assert outputs.plan_json(on_spark.reassignment) == outputs.plan_json(local.reassignment)
    assert json.dumps(on_spark.report, sort_keys=True) == json.dumps(local.report, sort_keys=True)
    assert on_spark.report["fair"] and on_spark.report["moves"] == on_spark.report["lower_bound"]


def test_command_writes_plan_report_batches_chart(spark, tmp_path):
    src = tmp_path / "cluster.msgpack"
    snapshot.dump(make_cluster(8, 6, 10, 2, 6), src)
    out, rep, bat, png = (tmp_path / n for n in ("plan.json", "report.json", "batches.json", "chart.png"))
    code = plan_command.main(
        ["--snapshot", str(src), "--rebalance", "--out", str(out), "--report", str(rep), "--batches", str(bat),
         "--chart", str(png), "--max-in", "1", "--max-out", "1", "--throttle", "1000000"],
        spark=spark,
    )
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["version"] == 1 and doc["partitions"]
    assert set(doc["partitions"][0]) == {"topic", "partition", "replicas"}
    report = json.loads(rep.read_text())
    assert report["fair"] and report["moves"] == report["lower_bound"] > 0
    assert report["partitions_changed"] == len(doc["partitions"])
    batches = json.loads(bat.read_text())
    assert batches["throttle_bytes_per_s"] == 1000000 and batches["estimated_seconds"] > 0
    assert png.read_bytes()[:4] == b"\x89PNG"
    # Same input, same bytes.
    again = tmp_path / "again.json"
    assert plan_command.main(["--snapshot", str(src), "--rebalance", "--out", str(again)], spark=spark) == 0
    assert again.read_bytes() == out.read_bytes()


def test_impossible_plan_writes_nothing(spark, tmp_path):
    src = tmp_path / "c.json"
    snapshot.dump(make_cluster(3, 2, 4, 3, 3), src)
    out = tmp_path / "plan.json"
    assert plan_command.main(["--snapshot", str(src), "--decommission-broker", "0", "--out", str(out)], spark=spark) == 1
    assert not out.exists()


def test_fleet_mode_plans_every_cluster_in_one_job(spark, tmp_path):
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    snapshot.dump(make_cluster(6, 4, 6, 2, 4), fleet / "east.json")
    snapshot.dump(make_cluster(9, 5, 9, 3, 6, racks=3), fleet / "west.msgpack")
    (fleet / "broken.mpk").write_bytes(msgpack.packb({"version": 1, "brokers": []}))
    (fleet / "notes.txt").write_text("ignored")
    out = tmp_path / "plans"
    charts = tmp_path / "charts"
    code = plan_command.main(["--snapshot", str(fleet), "--rebalance", "--out", str(out), "--chart", str(charts)], spark=spark)
    assert code == 1  # one cluster failed; the others are still planned
    names = sorted(p.name for p in out.iterdir())
    assert names == ["east.batches.json", "east.plan.json", "east.report.json", "fleet.json",
                     "west.batches.json", "west.plan.json", "west.report.json"]
    assert sorted(p.name for p in charts.iterdir()) == ["east.png", "west.png"]
    summary = json.loads((out / "fleet.json").read_text())["clusters"]
    assert [c["snapshot"] for c in summary] == ["broken.mpk", "east.json", "west.msgpack"]
    assert "missing 'topics'" in summary[0]["error"]
    for c in summary[1:]:
        assert c["fair"] and c["moves"] == c["lower_bound"]
    # Each cluster's plan equals its single-cluster plan.
    single = api.plan(snapshot.load(fleet / "west.msgpack"), "rebalance")
    assert (out / "west.plan.json").read_bytes() == outputs.plan_json(single.reassignment)


def _cli(*args, timeout=120):
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    return subprocess.run([sys.executable, "-m", "spark_jobs.plan", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env=env)


def test_command_line_errors(tmp_path):
    good = tmp_path / "c.json"
    snapshot.dump(make_cluster(3, 1, 2, 1, 3), good)
    out = tmp_path / "plan.json"
    cases = [
        ((), 2, "the following arguments are required"),
        (("--snapshot", str(good), "--out", str(out)), 2, "one of the arguments"),
        (("--snapshot", str(good), "--rebalance", "--decommission-broker", "1", "--out", str(out)), 2, "not allowed with"),
        (("--snapshot", str(good), "--decommission-broker", "1,x", "--out", str(out)), 2, "comma-separated"),
        (("--snapshot", str(good), "--replication-factor", "0", "--out", str(out)), 2, "positive integer"),
        (("--snapshot", str(tmp_path / "none.json"), "--rebalance", "--out", str(out)), 1, "no such file"),
        (("--snapshot", str(tmp_path / "c.txt"), "--rebalance", "--out", str(out)), 1, "unknown snapshot extension"),
    ]
    (tmp_path / "bad.json").write_text('{"version": 1, "brokers": [{"id": 1}, {"id": 1}], "topics": []}')
    cases.append((("--snapshot", str(tmp_path / "bad.json"), "--rebalance", "--out", str(out)), 1, "duplicate broker 1"))
    for args, code, message in cases:
        proc = _cli(*args)
        assert proc.returncode == code, (args, proc.stderr)
        assert message in proc.stderr, (args, proc.stderr)
    assert not out.exists()


def test_spark_submit_runs_the_planner(tmp_path):
    src = tmp_path / "c.json"
    snapshot.dump(make_cluster(6, 3, 6, 2, 5), src)
    out = tmp_path / "plan.json"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    submit = Path(sys.executable).parent / "spark-submit"
    proc = subprocess.run(
        [str(submit), "--master", "local[1]", "--conf", "spark.ui.enabled=false", str(ROOT / "spark_jobs" / "plan.py"),
         "--snapshot", str(src), "--decommission-broker", "4", "--out", str(out), "--master", "local[1]"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "decommission:" in proc.stdout
    doc = json.loads(out.read_text())
    assert all(4 not in e["replicas"] for e in doc["partitions"])


def test_unwritable_output_leaves_nothing_behind(spark, tmp_path):
    src = tmp_path / "c.json"
    snapshot.dump(make_cluster(4, 2, 4, 2, 3), src)
    out = tmp_path / "plan.json"
    code = plan_command.main(["--snapshot", str(src), "--rebalance", "--out", str(out),
                      "--report", str(tmp_path / "missing-dir" / "report.json")], spark=spark)
    assert code == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json"]
