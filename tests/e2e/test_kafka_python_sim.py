"""Standard Kafka clients bootstrapped from a SIMULATED BROKER find the reassignd controller:
kafka-python's ``KafkaAdminClient`` (unchanged, no private API) reassigns, lists and describes
a broker's and a topic's configs; ``kcat -L`` names the controller and its listener.

Everything is real: ZooKeeper (the session fixture), ``python -m reassignd sim`` brokers and one
``python -m reassignd controller`` process. A bandwidth of 1 KiB/s keeps a started move running
while the clients look at it.
"""

from __future__ import annotations

import json
import socket
import struct
import subprocess

import pytest

import protocol
from tests.e2e.processes import running_cluster, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(120)]

CONTROLLER_ID = 101
RATE = "follower.replication.throttled.rate"
REPLICAS = "leader.replication.throttled.replicas"
SIM_ARGS = ["--brokers", "3", "--topics", "orders:3:2:64MiB", "--bandwidth", "1KiB", "--produce-rate", "0",
            "--tick-ms", "50"]


def metadata_controller_id(address: str) -> int:
    """The controller_id a node's Metadata (v1, no topics) names."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(protocol.encode_request(3, 1, 1, "e2e", {"topics": []}))
        head = sock.recv(4, socket.MSG_WAITALL)
        (size,) = struct.unpack(">i", head)
        frame = head + sock.recv(size, socket.MSG_WAITALL)
    return protocol.decode_response(3, 1, frame)[1]["controller_id"]


@pytest.fixture
def cluster(zk_hosts, tmp_path):
    """Simulated brokers and one controller (processes.RunningCluster), once every simulated
    broker has seen the controller's election (its watch on /controller fires a moment later)."""
    with running_cluster(zk_hosts, tmp_path, sim_args=SIM_ARGS, controller_ids=(CONTROLLER_ID,)) as c:
        for address in c.brokers.values():
            wait_for(lambda: metadata_controller_id(address) == CONTROLLER_ID, 20,
                     f"the simulated broker at {address} to name the controller")
        yield c


def test_kafka_python_bootstrapped_from_a_simulated_broker(cluster):
    from kafka import KafkaAdminClient, TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType

    brokers = cluster.brokers
    cluster.set_dynamic_config("brokers/2", {RATE: "9000"})
    cluster.set_dynamic_config("topics/orders", {REPLICAS: "*"})
    current = cluster.replicas("orders", 0)
    target = [b for b in (1, 2, 3) if b not in current][:1] + current[:1]
    removing = [b for b in current if b not in target]

    admin = KafkaAdminClient(bootstrap_servers=brokers[1], client_id="kafka-python-sim", request_timeout_ms=20000)
    try:
        tp0 = TopicPartition("orders", 0)
        assert admin.list_partition_reassignments() == {}
        assert admin.alter_partition_reassignments({tp0: target}) == {tp0: None}
        ongoing = wait_for(admin.list_partition_reassignments, 20, "the move to be listed")
        assert ongoing == {tp0: {"replicas": target + removing, "adding_replicas": [target[0]],
                                 "removing_replicas": removing}}

        # A BROKER resource goes to that broker's own node: a simulated broker answers it.
        def broker_config():
            got = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "2")])["broker"]["2"]
            return got if RATE in got else None

        entry = wait_for(broker_config, 20, "broker 2 to learn its config")[RATE]
        assert entry["value"] == "9000" and entry["config_source"] == "DYNAMIC_BROKER_CONFIG"
        topic = wait_for(lambda: admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "orders")])
                         ["topic"]["orders"].get(REPLICAS), 20, "the topic config")
        assert topic["value"] == "*" and topic["config_source"] == "DYNAMIC_TOPIC_CONFIG"

        assert admin.alter_partition_reassignments({tp0: None}) == {tp0: None}
        wait_for(lambda: admin.list_partition_reassignments() == {}, 30, "the cancel to finish")
    finally:
        admin.close()


def test_kcat_asking_a_simulated_broker_shows_the_controller(cluster):
    brokers, listener = cluster.brokers, cluster.listeners[CONTROLLER_ID]
    for broker_id, address in brokers.items():
        out = subprocess.run(["kcat", "-L", "-J", "-b", address, "-m", "10"], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, out.stderr
        meta = json.loads(out.stdout)
        assert meta["controllerid"] == CONTROLLER_ID
        names = {b["id"]: b["name"] for b in meta["brokers"]}
        assert names[CONTROLLER_ID] == listener
        assert {b: names[b] for b in brokers} == brokers, broker_id
    text = subprocess.run(["kcat", "-L", "-b", brokers[3], "-m", "10"], capture_output=True, text=True, timeout=60)
    assert text.returncode == 0, text.stderr
    assert f"broker {CONTROLLER_ID} at {listener} (controller)" in text.stdout, text.stdout
