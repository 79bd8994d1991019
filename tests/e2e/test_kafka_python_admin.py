"""kafka-python's ``KafkaAdminClient``, unchanged, against 2 controller processes: bootstrapped
from the STANDBY, it reassigns with ``alter_partition_reassignments`` (KIP-455), lists with
``list_partition_reassignments``, cancels with ``None``, and sees the KIP-179 throttles (set
through this project's AdminClient) with ``describe_configs``.

Everything is real: ZooKeeper (the session fixture), ``python -m reassignd sim`` brokers, two
``python -m reassignd controller`` processes.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from client.admin import AdminClient

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(90)]

REPO = Path(__file__).resolve().parents[2]
CONTROLLER_IDS = (101, 102)
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"


def _spawn(args: list[str], log_path: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "reassignd", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=open(log_path, "wb"),
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def test_kafka_python_alter_list_cancel_describe_from_the_standby(zk_hosts, tmp_path):
    from kafka import KafkaAdminClient, TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType
    from kafka.errors import NoReassignmentInProgressError

    config = tmp_path / "controller.json"
    config.write_text(json.dumps({"zk_session_timeout_s": 2.0, "request_timeout_s": 5.0}))
    # 32 KiB/s per broker: a 256 KiB replica takes 8 s to copy, long enough to look at it.
    procs = [_spawn(["sim", "--zookeeper", zk_hosts, "--brokers", "4", "--topics", "orders:3:2:256KiB",
                     "--bandwidth", "32KiB", "--produce-rate", "0", "--tick-ms", "50"], tmp_path / "sim.log")]
    zk = KazooClient(hosts=zk_hosts, timeout=10)
    zk.start(timeout=30)
    admin = None
    try:
        assert procs[0].stdout.readline(), (tmp_path / "sim.log").read_text()[-3000:]
        for cid in CONTROLLER_IDS:
            procs.append(_spawn(["controller", "--zookeeper", zk_hosts, "--id", str(cid), "--listen", "127.0.0.1:0",
                                 "--config", str(config)], tmp_path / f"controller-{cid}.log"))
        _wait_for(lambda: zk.exists("/controller"), 30, "an active controller")
        _wait_for(lambda: len(zk.get_children("/reassignd/controllers")) == 2, 30, "2 registered controllers")
        active = json.loads(zk.get("/controller")[0])["brokerid"]
        standby = next(c for c in CONTROLLER_IDS if c != active)
        doc = json.loads(zk.get(f"/reassignd/controllers/{standby}")[0])
        bootstrap = f"{doc['host']}:{doc['port']}"

        def replicas(p: int) -> list[int]:
            return json.loads(zk.get("/brokers/topics/orders")[0])["partitions"][str(p)]

        original = {p: replicas(p) for p in range(3)}
        # Replace the partition's second replica: one broker added, one removed.
        target = {p: [original[p][0], next(b for b in (1, 2, 3, 4) if b not in original[p])] for p in range(3)}

        admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kafka-python-e2e", request_timeout_ms=20000)
        # The standby's own BROKER resource (kafka-python sends that to the node itself): a
        # controller instance has no broker configs.
        assert admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, str(standby))]) == {
            "broker": {str(standby): {}}}
        tp0, tp1, tp2 = (TopicPartition("orders", p) for p in range(3))
        assert admin.alter_partition_reassignments({tp0: target[0], tp1: target[1]}) == {tp0: None, tp1: None}

        # list: both running, with Kafka's replicas / adding / removing.
        def listed():
            got = admin.list_partition_reassignments()
            return got if set(got) == {tp0, tp1} else None

        ongoing = _wait_for(listed, 20, "both reassignments to be listed")
        for tp in (tp0, tp1):
            removing = [b for b in original[tp.partition] if b not in target[tp.partition]]
            adding = [b for b in target[tp.partition] if b not in original[tp.partition]]
            assert ongoing[tp] == {"replicas": target[tp.partition] + removing,
                                   "adding_replicas": adding, "removing_replicas": removing}
        entries = json.loads(zk.get("/admin/reassign_partitions")[0])["partitions"]
        assert {e["partition"]: e["original_replicas"] for e in entries} == {0: original[0], 1: original[1]}

        # KIP-179 throttles on partition 1's move, through this project's client (v1: adds to
        # the running set); kafka-python's describe_configs shows them.
        async def throttle():
            async with AdminClient(bootstrap) as ours:
                return dict(await ours.reassign_partitions({("orders", 1): target[1]}, throttle=1_000_000,
                                                           additional=True))

        assert asyncio.run(throttle()) == {("orders", 1): None}
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "orders")])
        topic = described["topic"]["orders"]
        assert topic[LEADER_REPLICAS]["value"] == ",".join(f"1:{b}" for b in sorted(original[1]))
        assert topic[FOLLOWER_REPLICAS]["value"] == ",".join(
            f"1:{b}" for b in sorted(set(target[1]) - set(original[1])))

        # cancel with None; a partition that is not moving is NoReassignmentInProgress.
        assert admin.alter_partition_reassignments({tp0: None}) == {tp0: None}
        assert admin.alter_partition_reassignments({tp2: None}) == {tp2: NoReassignmentInProgressError}
        _wait_for(lambda: set(admin.list_partition_reassignments()) == {tp1}, 20, "the cancel to take")
        _wait_for(lambda: replicas(0) == original[0], 20, "partition 0 back on its original replicas")

        # Partition 1 completes; its throttles go with it.
        _wait_for(lambda: admin.list_partition_reassignments() == {}, 40, "partition 1 to complete")
        assert replicas(1) == target[1]
        _wait_for(lambda: LEADER_REPLICAS not in admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, "orders")])["topic"]["orders"], 20, "the throttles to go")
    finally:
        if admin is not None:
            admin.close()
        zk.stop()
        zk.close()
        for p in reversed(procs):
            _stop(p)
