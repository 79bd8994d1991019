"""A standby controller instance is a Metadata node (clients find the controller that way) but
no broker: `kafka-reassign --rebalance` over --bootstrap-server must not plan replicas onto it.
It answers DescribeLogDirs with no log directory; every broker has at least one."""

from __future__ import annotations

import asyncio

from client.metadata import ClusterMetadata, LogDirsResult
from client.planner import snapshot_from_admin


def _dirs(*partitions) -> dict:
    return {"error_code": 0, "results": [{"error_code": 0, "log_dir": "/d1", "topics": [
        {"name": "t", "partitions": [{"partition_index": p, "partition_size": 10, "offset_lag": 0}
                                     for p in partitions]}]}]}


class _Admin:
    """Two brokers holding t-0, an empty new broker 3, and controllers 101 (active) and 102 (standby)."""

    async def describe_cluster(self, topics):
        body = {"brokers": [{"node_id": n, "host": "h", "port": 9000 + n} for n in (1, 2, 3, 101, 102)],
                "controller_id": 101,
                "topics": [{"name": "t", "error_code": 0, "partitions": [
                    {"partition_index": 0, "leader_id": 1, "replica_nodes": [1, 2], "isr_nodes": [1, 2]}]}]}
        return ClusterMetadata.from_body(body)

    async def list_partition_reassignments(self):
        return {}

    async def describe_log_dirs(self):
        result = LogDirsResult()
        for node, body in ((1, _dirs(0)), (2, _dirs(0)), (3, _dirs()), (102, {"error_code": 0, "results": []})):
            result.add_body(node, body)
        return result


def test_a_node_without_log_directories_is_not_a_broker():
    result = asyncio.run(_Admin().describe_log_dirs())
    assert [n for n in (1, 2, 3, 102) if result.hosts_nothing(n)] == [102]
    assert not result.hosts_nothing(101)  # not asked: unknown, not "nothing"
    snap = asyncio.run(snapshot_from_admin(_Admin()))
    assert [b["id"] for b in snap["brokers"]] == [1, 2, 3]  # the empty broker stays, the standby goes
