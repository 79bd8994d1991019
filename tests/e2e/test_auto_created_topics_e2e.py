"""A topic a broker auto-creates, end to end with real processes: ``reassignd sim
--auto-create-topics`` brokers place a new topic's replicas over their metadata cache, as Kafka's
ZooKeeper-mode brokers do (``ZkAdminManager.createTopics``), and the reassignd controller puts
its instances in that cache (UpdateMetadata's live brokers, so that Kafka 3.x brokers find it):
with num.partitions 8 at a factor of 1 over 6 brokers and 2 instances, Kafka's round robin gives
an instance some of the partitions. The active controller places those again over the
registered brokers before giving them states (engine step 10a): every partition ends led by a
broker, and the Metadata answer says so."""

from __future__ import annotations

import struct
import socket

import pytest

import protocol
from protocol import ApiKey
from tests.e2e.processes import running_cluster, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.zk, pytest.mark.timeout(120)]

SIM = ["--brokers", "6", "--topics", "orders:2:2:1KiB", "--bandwidth", "1GiB", "--produce-rate", "0",
       "--auto-create-topics", "--num-partitions", "8", "--default-replication-factor", "1"]
BROKERS = set(range(1, 7))


def metadata(address: str, topic: str) -> dict:
    """Metadata v9 for ``topic`` from the broker at ``address``, creation allowed (a producer's)."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(protocol.encode_request(ApiKey.METADATA, 9, 1, "producer", {
            "topics": [{"name": topic}], "allow_auto_topic_creation": True,
            "include_cluster_authorized_operations": False, "include_topic_authorized_operations": False}))
        head = s.recv(4, socket.MSG_WAITALL)
        (size,) = struct.unpack(">i", head)
        body = b""
        while len(body) < size:
            body += s.recv(size - len(body))
        return protocol.decode_response(ApiKey.METADATA, 9, head + body)[1]


def test_a_topic_a_broker_auto_creates_is_led_by_brokers_only(zk_hosts, tmp_path):
    with running_cluster(zk_hosts, tmp_path, sim_args=SIM, controller_ids=(101, 102)) as c:
        broker = c.brokers[1]
        # The broker's metadata cache holds the instances once an UpdateMetadata came.
        wait_for(lambda: {101, 102} <= {b["node_id"] for b in metadata(broker, "orders")["brokers"]}, 30,
                 "the controller instances among the broker's live nodes")
        [answer] = metadata(broker, "auto")["topics"]
        assert answer["error_code"] == 5  # LEADER_NOT_AVAILABLE: created, leaders being elected

        def placed():
            return all(c.zk.exists(f"/brokers/topics/auto/partitions/{p}/state") for p in range(8))

        wait_for(placed, 30, "every auto-created partition's state")
        replicas = {int(p): rs for p, rs in c.topic("auto")["partitions"].items()}
        assert sorted(replicas) == list(range(8)) and all(len(rs) == 1 and set(rs) <= BROKERS for rs in replicas.values()), replicas
        wait_for(lambda: all(p["error_code"] == 0 and p["leader_id"] in BROKERS
                             for p in metadata(broker, "auto")["topics"][0]["partitions"]), 30,
                 "every partition led by a broker in the broker's Metadata")
        assert "named controller instance(s)" in (c.controller_log(c.active_controller()).read_text())
