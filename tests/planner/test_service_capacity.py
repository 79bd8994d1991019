"""Disk capacity in the planner service: the model keeps each broker's disk from DescribeLogDirs
(total_bytes), plans from a snapshot carrying it, and ``/load`` shows capacity, limit and use now
and after the last proposal; ``reassignd planner serve --capacity FILE --disk-threshold F``. The
last test runs the service on simulated brokers whose disks the count-only plan would overfill."""

from __future__ import annotations

import json

import pytest

from planner_service.model import ClusterModel
from reassignd import planner as cli
from spark_jobs import api
from spark_jobs.capacity import CapacitySpec
from spark_jobs.logdirs import BrokerLogDirs
from spark_jobs.snapshot import validate
from znodes.values import Assignment, Broker, LeaderIsr


def _model() -> ClusterModel:
    m = ClusterModel()
    m.set_brokers({b: Broker(b, "127.0.0.1", 9000 + b, None) for b in (1, 2, 3)}, now=0.0)
    m.set_topic("orders", {0: Assignment((1, 2)), 1: Assignment((2, 3))})
    for p, r in ((0, (1, 2)), (1, (2, 3))):
        m.set_state("orders", p, LeaderIsr(r[0], 0, 1, r, 0))
    return m


def _found(sizes: dict, disk: int | None) -> BrokerLogDirs:
    out = BrokerLogDirs(sizes)
    out.disk_bytes = disk
    return out


def test_model_keeps_reported_disks_in_the_snapshot_and_load():
    m = _model()
    v0 = m.version
    assert m.set_sizes({1: _found({("orders", 0): 100}, 1000), 2: _found({("orders", 0): 100, ("orders", 1): 50}, 2000),
                        3: _found({("orders", 1): 50}, None)})
    assert m.version > v0
    snap = m.snapshot(1)
    assert validate(snap) == snap
    assert [b.get("disk_bytes") for b in snap["brokers"]] == [1000, 2000, None]
    rows = {x["broker"]: x for x in m.load()}
    assert rows[1]["disk_capacity"] == 1000 and rows[1]["disk_capacity_source"] == "describe_log_dirs"
    assert rows[1]["disk_limit"] == 800 and rows[1]["disk_use"] == 0.1
    assert rows[2]["disk_use"] == 0.075
    assert rows[3]["disk_capacity"] is None and rows[3]["disk_use"] is None
    assert rows[1]["bytes_planned"] is None
    # a disk that changes alone is a change too (the plan's limits move with it)
    v1 = m.version
    assert m.set_sizes({1: _found({("orders", 0): 100}, 4000), 2: _found({("orders", 0): 100, ("orders", 1): 50}, 2000),
                        3: _found({("orders", 1): 50}, None)})
    assert m.version > v1 and m.snapshot(2)["brokers"][0]["disk_bytes"] == 4000


def test_load_shows_the_capacity_file_and_the_last_proposal():
    m = _model()
    m.set_sizes({1: _found({("orders", 0): 100}, 1000), 2: _found({("orders", 0): 100, ("orders", 1): 50}, 2000),
                 3: _found({("orders", 1): 50}, None)})
    m.capacity = CapacitySpec(brokers={2: 500}, default=250)
    m.disk_threshold = 0.9
    result = api.plan(m.snapshot(1), "rebalance", capacity=m.capacity, disk_threshold=m.disk_threshold,
                      assume_valid=True)
    m.set_planned(result.report["per_broker"])
    rows = {x["broker"]: x for x in m.load()}
    assert [rows[b]["disk_capacity"] for b in (1, 2, 3)] == [1000, 500, 250]
    assert [rows[b]["disk_capacity_source"] for b in (1, 2, 3)] == ["describe_log_dirs", "file", "file_default"]
    assert rows[3]["disk_limit"] == 225 and rows[3]["disk_use"] == 0.2
    per = {b["broker"]: b for b in result.report["per_broker"]}
    for b in (1, 2, 3):
        assert rows[b]["bytes_planned"] == per[b]["bytes_after"]
        assert rows[b]["disk_use_planned"] == round(per[b]["bytes_after"] / rows[b]["disk_capacity"], 4)
        assert rows[b]["bytes_planned"] <= rows[b]["disk_limit"]


def test_serve_reads_the_capacity_file_and_threshold(tmp_path, capsys):
    good = tmp_path / "capacity.json"
    good.write_text(json.dumps({"brokerCapacities": [{"brokerId": "-1", "capacity": {"DISK": "1024"}}]}))
    args = cli.build_parser().parse_args(["--zookeeper", "h:1", "--listen", "127.0.0.1:0", "--capacity", str(good),
                                    "--disk-threshold", "0.7"])
    assert args.capacity == str(good) and args.disk_threshold == 0.7
    assert cli.build_parser().parse_args(["--zookeeper", "h:1", "--listen", "127.0.0.1:0"]).disk_threshold == 0.8
    bad = tmp_path / "bad.json"
    bad.write_text('{"brokerCapacities": [{"brokerId": "1", "capacity": {"DISK": "none"}}]}')
    assert cli.main(["serve", "--zookeeper", "h:1", "--listen", "127.0.0.1:0", "--insecure-no-auth",
                     "--capacity", str(bad)]) == 2
    assert "--capacity" in capsys.readouterr().err
    assert cli.main(["serve", "--zookeeper", "h:1", "--listen", "127.0.0.1:0", "--insecure-no-auth",
                     "--disk-threshold", "2"]) == 2
    assert "fraction in (0, 1]" in capsys.readouterr().err


# ---- the service on simulated brokers -----------------------------------------------------------

SIM = ["--brokers", "6", "--topic-brokers", "1,2,3,4", "--topics", "big:2:2:64MiB", "small:40:2:1MiB",
       "--disk-bytes", "160MiB", "--produce-rate", "0", "--bandwidth", "200MiB"]
DISK = 160 * 1024 * 1024


@pytest.mark.zk
@pytest.mark.e2e
def test_service_proposals_keep_every_disk_under_the_threshold_and_load_shows_it(zk_server, _zk_admin, tmp_path):
    from tests.e2e.processes import wait_for
    from tests.planner.service_http import http, served_cluster

    with served_cluster(zk_server, _zk_admin, tmp_path, SIM, ["--insecure-no-auth", "--spark-min-partitions", "0",
                                                              "--sizes-interval", "1"], prefix="svccap") as c:
        base = c["base"]
        wait_for(lambda: all(x["disk_capacity"] == DISK for x in http(base, "GET", "/load")[1]["brokers"]), 30,
                 "the brokers' disks in /load")
        code, body = http(base, "POST", "/rebalance?brokerid=1,2,3,4,5,6")  # dryrun: planned, not executed
        assert code == 200, body
        prop = body["proposal"]
        cap = prop["report"]["capacity"]
        assert cap["over_threshold_count_plan"] and cap["over_threshold_after"] == []
        assert cap["peak_use_count_plan"] > 0.8 >= cap["peak_use_after"]
        load = {x["broker"]: x for x in http(base, "GET", "/load")[1]["brokers"]}
        per = {b["broker"]: b for b in prop["report"]["per_broker"]}
        assert max(x["disk_use"] for x in load.values()) > 0.8  # now: broker 1 holds both big partitions' replicas
        for b, x in load.items():
            assert x["disk_limit"] == int(DISK * 0.8)
            assert x["bytes_planned"] == per[b]["bytes_after"] <= x["disk_limit"]
            assert x["disk_use_planned"] <= 0.8
