"""Standard Kafka clients against the admin listener, unchanged: ``kcat -L`` and kafka-python's
``KafkaAdminClient`` (bootstrapping from the standby controller).

Everything is real: ZooKeeper (the session fixture), two ``python -m reassignd controller``
processes, ``python -m reassignd sim`` brokers with a bandwidth so low that a started move
keeps running while the clients look at it.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.e2e.processes import running_cluster, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(120)]

CONTROLLER_IDS = (101, 102)
SIM_ARGS = ["--brokers", "3", "--topics", "orders:4:2:64MiB", "__consumer_offsets:2:3:1KiB", "--bandwidth", "1KiB",
            "--produce-rate", "0"]


@pytest.fixture
def cluster(zk_hosts, tmp_path):
    """(kazoo client, {id: "host:port"} of the controllers, active id, standby id)."""
    with running_cluster(zk_hosts, tmp_path, sim_args=SIM_ARGS, controller_ids=CONTROLLER_IDS) as c:
        active = c.active_controller()
        yield c.zk, c.listeners, active, next(cid for cid in CONTROLLER_IDS if cid != active)


def test_kcat_lists_brokers_controllers_and_topics(cluster):
    zk, listeners, active, standby = cluster
    address = listeners[standby]
    out = subprocess.run(["kcat", "-L", "-J", "-b", address, "-m", "10"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    meta = json.loads(out.stdout)
    assert {b["id"] for b in meta["brokers"]} == {1, 2, 3, 101, 102}
    assert {b["name"] for b in meta["brokers"] if b["id"] == standby} == {address}
    topics = {t["topic"]: t for t in meta["topics"]}
    assert set(topics) == {"orders", "__consumer_offsets"}
    assert len(topics["orders"]["partitions"]) == 4
    for p in topics["orders"]["partitions"]:
        state = json.loads(zk.get(f"/brokers/topics/orders/partitions/{p['partition']}/state")[0])
        assert p["leader"] == state["leader"]
        assert sorted(r["id"] for r in p["replicas"]) == sorted(
            json.loads(zk.get("/brokers/topics/orders")[0])["partitions"][str(p["partition"])])
    # the plain text listing works too
    text = subprocess.run(["kcat", "-L", "-b", address, "-m", "10"], capture_output=True, text=True, timeout=60)
    assert text.returncode == 0 and 'topic "orders" with 4 partitions' in text.stdout, text.stdout + text.stderr


def test_kafka_python_admin_client_from_the_standby(cluster):
    """alter_partition_reassignments, list_partition_reassignments, cancel with None and
    describe_configs, bootstrapping from the standby (the client finds the active one)."""
    from kafka import KafkaAdminClient, TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType
    from kafka.errors import NoReassignmentInProgressError

    zk, listeners, active, standby = cluster
    assignment = json.loads(zk.get("/brokers/topics/orders")[0])["partitions"]
    current = assignment["0"]
    target = [b for b in (1, 2, 3) if b not in current][:1] + current[:1]
    removing = [b for b in current if b not in target]
    admin = KafkaAdminClient(bootstrap_servers=listeners[standby], client_id="kafka-python-test",
                             request_timeout_ms=20000)
    try:
        # No help for the client: any node it picks (controller instance or simulated broker)
        # names the active controller in Metadata.
        tp0, tp1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
        assert admin.alter_partition_reassignments({tp0: target}) == {tp0: None}
        wait_for(lambda: zk.exists("/admin/reassignments/orders/0"), 30, "the move to start")
        ongoing = admin.list_partition_reassignments()
        assert ongoing == {tp0: {"replicas": target + removing, "adding_replicas": [target[0]],
                                 "removing_replicas": removing}}
        assert admin.list_partition_reassignments([tp1]) == {}
        # None cancels (KIP-455); a partition that is not moving says so
        answer = admin.alter_partition_reassignments({tp0: None, tp1: None})
        assert answer[tp0] is None and answer[tp1] is NoReassignmentInProgressError
        wait_for(lambda: admin.list_partition_reassignments() == {}, 30, "the cancel to finish")
        assert json.loads(zk.get("/brokers/topics/orders")[0])["partitions"]["0"] == current

        # kafka-python sends a BROKER resource to that node, so the controllers' own entities
        # are what it can describe here (a simulated broker does not serve DescribeConfigs).
        zk.create("/config/brokers/101", json.dumps(
            {"version": 1, "config": {"leader.replication.throttled.rate": "7000"}}).encode(), makepath=True)
        configs = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "101"),
                                          ConfigResource(ConfigResourceType.BROKER, "102")])
        assert configs["broker"]["102"] == {}
        entry = configs["broker"]["101"]["leader.replication.throttled.rate"]
        assert entry["value"] == "7000" and entry["config_source"] == "DYNAMIC_BROKER_CONFIG"
    finally:
        admin.close()
