"""Movement strategies per request, from the client to the controller: ReassignPartitions v1's
tagged MovementStrategies (AdminClient.reassign_partitions(movement_strategies=...)) and
kafka-reassign --execute --movement-strategy (both doors) put ``"movement_strategies"`` in the
entries of /admin/reassign_partitions, and the controller starts the request's moves in that
order (controller.core.move_order); unknown names are refused where they are typed."""

from __future__ import annotations

import asyncio

import pytest

from client.admin import AdminClient
from client.errors import InputError
from controller.core.config import ControllerConfig
from protocol.errors import ErrorCode
from protocol.messages import decode_body, encode_body
from tests.admin.cluster import AdminCluster

pytestmark = pytest.mark.zk

TOPICS = {"orders": {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}}
# One move at a time, and the simulated cluster has no brokers to finish it: the move that
# starts is the one the order put first.
ONE_AT_A_TIME = ControllerConfig(zk_session_timeout_s=4.0, request_timeout_s=1.0, retry_backoff_s=0.5,
                                 max_cluster_moves=1)


def test_the_tag_is_v1_only_and_defaults_to_empty():
    body = {"topic_reassignments": [{"topic": "t", "partition_reassignments": [{"partition_id": 0, "broker": [1]}]}],
            "timeout": 1000, "validate_only": False, "throttle": 1, "remove_throttle": True}
    assert decode_body(10000, 1, "request", encode_body(10000, 1, "request", body))["movement_strategies"] == []
    chosen = {**body, "movement_strategies": ["smallest_first", "under_replicated_last"]}
    assert decode_body(10000, 1, "request", encode_body(10000, 1, "request", chosen))["movement_strategies"] == [
        "smallest_first", "under_replicated_last"]
    # v0 has no such field: not sent, read as the default.
    assert decode_body(10000, 0, "request", encode_body(10000, 0, "request", chosen))["movement_strategies"] == []


async def test_a_request_s_strategies_reach_the_entries_and_order_its_moves(zk_hosts):
    c = AdminCluster(zk_hosts, controllers=(101,), topics=TOPICS, config=ONE_AT_A_TIME)
    # orders-0's ISR is short (2 of 3, above the default floor of 1: it may start).
    c.set_json("/brokers/topics/orders/partitions/0/state",
               {"controller_epoch": 1, "leader": 1, "version": 1, "leader_epoch": 0, "isr": [1, 2]})
    async with c:
        await c.wait_active()
        host, port = c.addr(101)
        async with AdminClient(f"{host}:{port}") as admin:
            with pytest.raises(InputError, match="unknown movement strategy 'fastest'"):
                await admin.reassign_partitions({("orders", 0): [1, 2, 4]}, movement_strategies=["fastest"])
            moves = {("orders", 0): [1, 2, 4], ("orders", 1): [2, 3, 4]}
            result = await admin.reassign_partitions(moves, movement_strategies=["under_replicated_last"])
            assert result.errors == {}
            async with asyncio.timeout(10):
                while set(await admin.list_reassignments()) != {("orders", 1)}:  # not orders-0, asked first
                    await asyncio.sleep(0.05)
            assert (await admin.reassign_partitions({("orders", 2): [3, 1, 4]}, additional=True)).errors == {}
        entries = {e["partition"]: e for e in c.get_json("/admin/reassign_partitions")["partitions"]}
        assert entries[0]["movement_strategies"] == entries[1]["movement_strategies"] == ["under_replicated_last"]
        assert "movement_strategies" not in entries[2]
        # A raw v1 request naming a strategy the controller does not know: refused, nothing written.
        answer = await c.call(101, 10000, 1, {
            "topic_reassignments": [{"topic": "orders", "partition_reassignments": [{"partition_id": 2, "broker": [4, 1, 2]}]}],
            "timeout": 1000, "validate_only": False, "throttle": 2**63 - 1, "remove_throttle": True,
            "movement_strategies": ["smallest_first", "fastest"]})
        (partition,) = answer["reassign_partition_result"][0]["partition_error"]
        assert partition["error_code"] == ErrorCode.INVALID_REQUEST
        assert "unknown movement strategy 'fastest'; known: order_given" in partition["error_message"]
        assert {e["partition"]: e["replicas"] for e in c.get_json("/admin/reassign_partitions")["partitions"]}[2] == [3, 1, 4]


def test_kafka_reassign_movement_strategy_through_both_doors(zk_hosts, tmp_path):
    from tests.client.cluster_zk import KafkaZk, plan, run_cli, write_json

    k = KafkaZk(zk_hosts)
    k.populate()
    try:
        f = write_json(tmp_path, "plan.json", plan(("orders", 0, [3, 4])))
        r = run_cli("--zookeeper", k.hosts, "--execute", "--movement-strategy", "smallest_first,fastest",
                    "--reassignment-json-file", f)
        assert r.returncode == 2 and "--movement-strategy: unknown movement strategy 'fastest'" in r.stderr
        assert not k.zk.exists("/admin/reassign_partitions")
        r = run_cli("--zookeeper", k.hosts, "--execute", "--movement-strategy", "largest_first, leader_moves_first",
                    "--reassignment-json-file", f)
        assert r.returncode == 0, r.stderr
        assert k.get_json("/admin/reassign_partitions")["partitions"] == [
            {"topic": "orders", "partition": 0, "replicas": [3, 4], "original_replicas": [1, 2],
             "movement_strategies": ["largest_first", "leader_moves_first"]}]
        r = run_cli("--zookeeper", k.hosts, "--verify", "--movement-strategy", "largest_first",
                    "--reassignment-json-file", f)
        assert r.returncode == 2 and "--movement-strategy" in r.stderr  # --execute's option only
    finally:
        k.close()


async def test_kafka_reassign_bootstrap_server_sends_the_strategies(zk_hosts, tmp_path):
    from tests.client.cluster_zk import plan, run_cli, write_json

    async with AdminCluster(zk_hosts, controllers=(101,), topics=TOPICS) as c:
        await c.wait_active()
        host, port = c.addr(101)
        f = write_json(tmp_path, "plan.json", plan(("orders", 0, [1, 2, 4]), ("orders", 1, [2, 3, 4])))
        r = await asyncio.to_thread(run_cli, "--bootstrap-server", f"{host}:{port}", "--execute",
                                    "--movement-strategy", "leader_moves_first,smallest_first",
                                    "--reassignment-json-file", f)
        assert r.returncode == 0, r.stderr
        entries = c.get_json("/admin/reassign_partitions")["partitions"]
        assert [e.get("movement_strategies") for e in entries] == [["leader_moves_first", "smallest_first"]] * 2
