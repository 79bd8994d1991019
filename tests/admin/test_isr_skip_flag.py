"""ISR-aware execution's per-request flag through both doors of kafka-reassign --execute: the
AdminClient's ReassignPartitions (v1's tagged SkipIsrCheck, API 10000 being this project's own)
and --zookeeper's direct write both put ``"skip_isr_check": true`` in the entry of
/admin/reassign_partitions that the controller reads (controller.core.isr_health); without the
flag the entry has no such key."""

from __future__ import annotations

import pytest

from client.admin import AdminClient
from protocol.messages import decode_body, encode_body
from tests.admin.cluster import AdminCluster

pytestmark = pytest.mark.zk

TOPICS = {"orders": {0: [1, 2], 1: [2, 3], 2: [3, 1]}}


def test_the_tagged_field_is_v1_only_and_defaults_to_false():
    body = {"topic_reassignments": [{"topic": "t", "partition_reassignments": [{"partition_id": 0, "broker": [1]}]}],
            "timeout": 1000, "validate_only": False, "throttle": 1, "remove_throttle": True}
    assert decode_body(10000, 1, "request", encode_body(10000, 1, "request", body))["skip_isr_check"] is False
    flagged = decode_body(10000, 1, "request", encode_body(10000, 1, "request", {**body, "skip_isr_check": True}))
    assert flagged["skip_isr_check"] is True


async def test_reassign_partitions_carries_skip_isr_check_into_the_znode_entry(zk_hosts):
    async with AdminCluster(zk_hosts, controllers=(101,), topics=TOPICS) as c:
        await c.wait_active()
        host, port = c.addr(101)
        async with AdminClient(f"{host}:{port}") as admin:
            assert (await admin.reassign_partitions({("orders", 0): [3, 4]}, skip_isr_check=True))[("orders", 0)] is None
            assert (await admin.reassign_partitions({("orders", 1): [4, 1]}, additional=True))[("orders", 1)] is None
        entries = {e["partition"]: e for e in c.get_json("/admin/reassign_partitions")["partitions"]}
        assert entries[0].get("skip_isr_check") is True
        assert "skip_isr_check" not in entries[1]


def test_kafka_reassign_zookeeper_execute_skip_isr_check_writes_the_key(zk_hosts, tmp_path):
    from tests.client.cluster_zk import KafkaZk, plan, run_cli, write_json

    k = KafkaZk(zk_hosts)
    k.populate()
    try:
        f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 4])))
        r = run_cli("--zookeeper", k.hosts, "--execute", "--skip-isr-check", "--reassignment-json-file", f)
        assert r.returncode == 0, r.stderr
        assert k.get_json("/admin/reassign_partitions")["partitions"] == [
            {"topic": "orders", "partition": 0, "replicas": [3, 4], "original_replicas": [1, 2], "skip_isr_check": True}]
        r = run_cli("--zookeeper", k.hosts, "--verify", "--skip-isr-check", "--reassignment-json-file", f)
        assert r.returncode == 2 and "--skip-isr-check" in r.stderr  # --execute's option only
    finally:
        k.close()
