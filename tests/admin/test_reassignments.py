"""ListPartitionReassignments (KIP-455), ListReassignments and DescribeReassignments (KIP-240)
against in-process controllers on a real ZooKeeper, through sockets.

The brokers are registered but never answer, so a started move stays running: exactly the
window these APIs describe.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.admin.cluster import AdminCluster

pytestmark = pytest.mark.zk

TOPICS = {"orders": {0: [1, 2], 1: [2, 3], 2: [3, 1]}, "audit": {0: [1, 2, 3]}}
UNTHROTTLED = 2**63 - 1
MOVES = {("orders", 0): [3, 4], ("orders", 2): [3, 4], ("audit", 0): [1, 2, 4]}


async def _running(c: AdminCluster) -> int:
    active = await c.wait_active()
    c.submit(MOVES)
    await c.wait_running(active, list(MOVES))
    return active


async def test_list_partition_reassignments_kafka_semantics(zk_hosts):
    async with AdminCluster(zk_hosts, topics=TOPICS) as c:
        active = await _running(c)
        body = await c.call(active, 46, 0, {"timeout_ms": 1000, "topics": None})
        assert body["error_code"] == 0
        got = {(t["name"], p["partition_index"]): (p["replicas"], p["adding_replicas"], p["removing_replicas"])
               for t in body["topics"] for p in t["partitions"]}
        assert got == {
            ("audit", 0): ([1, 2, 4, 3], [4], [3]),
            ("orders", 0): ([3, 4, 1, 2], [3, 4], [1, 2]),
            ("orders", 2): ([3, 4, 1], [4], [1]),
        }
        # the topic znode says the same (RS, AR, RR written before memory)
        znode = c.get_json("/brokers/topics/orders")
        assert znode["partitions"]["0"] == [3, 4, 1, 2] and znode["adding_replicas"]["0"] == [3, 4]
        # listed partitions: not moving (orders-1) and unknown ones (nope-0, orders-9) are absent
        body = await c.call(active, 46, 0, {"topics": [
            {"name": "orders", "partition_indexes": [0, 1, 9]}, {"name": "nope", "partition_indexes": [0]}]})
        assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in body["topics"]] == [("orders", [0])]
        # the whole-list answer is reused while nothing changes, rebuilt when a move starts
        again = await c.call(active, 46, 0, {"timeout_ms": 1000, "topics": None})
        assert again["topics"] == (await c.call(active, 46, 0, {"topics": None}))["topics"]
        c.submit({**MOVES, ("orders", 1): [4, 3]})
        await c.wait_running(active, [("orders", 1)])
        body = await c.call(active, 46, 0, {"topics": None})
        orders = next(t for t in body["topics"] if t["name"] == "orders")
        assert [p["partition_index"] for p in orders["partitions"]] == [0, 1, 2]
        assert orders["partitions"][1]["adding_replicas"] == [4]
        # a standby answers NOT_CONTROLLER
        body = await c.call(c.standby(active), 46, 0, {"topics": None})
        assert body["error_code"] == 41 and body["topics"] == []


async def test_list_then_describe_with_throttles_and_stale_ids(zk_hosts):
    async with AdminCluster(zk_hosts, topics=TOPICS) as c:
        active = await _running(c)
        # throttles as KIP-179 sets them: leader side on the original replicas, follower side on
        # the new ones; rates on brokers (broker 4 through the cluster-wide default)
        lead0 = c.get_json("/brokers/topics/orders/partitions/0/state")["leader"]
        lead2 = c.get_json("/brokers/topics/orders/partitions/2/state")["leader"]
        c.set_json("/config/topics/orders", {"version": 1, "config": {
            "leader.replication.throttled.replicas": f"0:{lead0},2:{lead2}",
            "follower.replication.throttled.replicas": "0:3,0:4,2:4"}})
        c.set_json("/config/brokers/1", {"version": 1, "config": {"leader.replication.throttled.rate": "1000"}})
        c.set_json("/config/brokers/2", {"version": 1, "config": {"leader.replication.throttled.rate": "2000"}})
        c.set_json("/config/brokers/3", {"version": 1, "config": {
            "leader.replication.throttled.rate": "3000", "follower.replication.throttled.rate": "3333"}})
        c.set_json("/config/brokers/<default>", {"version": 1, "config": {"follower.replication.throttled.rate": "444"}})
        listed = await c.call(active, 10003, 1, {"timeout_ms": 1000, "topic_partition": None})
        assert listed["error_code"] == 0
        ids = {(t["topic"], r["partition_id"]): r["reassignment_id"]
               for t in listed["reassignment"] for r in t["topic_reassignments"]}
        assert set(ids) == set(MOVES)
        for (t, p), rid in ids.items():
            stat = c.kafka.zk.exists(f"/admin/reassignments/{t}/{p}")
            assert stat.czxid == rid
        # v0 and a partition list: the same ids; a not-moving partition is absent
        listed0 = await c.call(active, 10003, 0, {"topic_partition": [{"topic": "orders", "partition_id": [0, 1]}]})
        assert listed0["reassignment"] == [{"topic": "orders", "topic_reassignments": [
            {"partition_id": 0, "reassignment_id": ids[("orders", 0)]}]}]
        # an unknown partition is the KIP's UNKNOWN_TOPIC_OR_PARTITION
        bad = await c.call(active, 10003, 1, {"topic_partition": [{"topic": "orders", "partition_id": [7]}]})
        assert bad["error_code"] == 3 and "orders-7" in bad["error_message"]

        refs = [{"topic": t, "reassignment": {"partition_id": p, "reassignment_id": rid}} for (t, p), rid in ids.items()]
        refs.append({"topic": "orders", "reassignment": {"partition_id": 1, "reassignment_id": 12345}})  # never ran
        refs.append({"topic": "audit", "reassignment": {"partition_id": 0, "reassignment_id": ids[("audit", 0)] + 1}})
        described = await c.call(active, 10004, 1, {"topic_reassignment": refs, "timeout_ms": 1000})
        assert described["error_code"] == 0
        # One multi-op starts all three moves, so their records share a czxid: descriptions come
        # in request order, stale or unknown ids omitted (not errors).
        assert [d["reassignment_id"] for d in described["description"]] == list(ids.values())
        by_tp = dict(zip(ids, described["description"]))
        o0 = by_tp[("orders", 0)]
        ctime = c.kafka.zk.exists("/admin/reassignments/orders/0").ctime
        assert o0["start_time"] == ctime and o0["leader_id"] == lead0
        assert o0["leader_throttle"] == {1: 1000, 2: 2000, 3: 3000, 4: UNTHROTTLED}[lead0]
        assert o0["new_assigned"] == [{"broker_id": 3, "follower_throttle": 3333}, {"broker_id": 4, "follower_throttle": 444}]
        o2 = by_tp[("orders", 2)]
        assert o2["leader_id"] == lead2
        assert o2["leader_throttle"] == {1: 1000, 2: 2000, 3: 3000, 4: UNTHROTTLED}[lead2]
        # broker 3 already holds orders-2: not a throttled follower
        assert o2["new_assigned"] == [{"broker_id": 3, "follower_throttle": UNTHROTTLED},
                                      {"broker_id": 4, "follower_throttle": 444}]
        a0 = by_tp[("audit", 0)]  # no topic throttles at all
        assert a0["leader_throttle"] == UNTHROTTLED and {n["follower_throttle"] for n in a0["new_assigned"]} == {UNTHROTTLED}
        # standbys refuse both
        standby = c.standby(active)
        assert (await c.call(standby, 10003, 1, {"topic_partition": None}))["error_code"] == 41
        assert (await c.call(standby, 10004, 0, {"topic_reassignment": refs}))["error_code"] == 41


async def test_describe_omits_a_finished_reassignment_and_a_new_one_has_a_new_id(zk_hosts):
    async with AdminCluster(zk_hosts, controllers=(101,), topics=TOPICS) as c:
        active = await _running(c)
        listed = await c.call(active, 10003, 1, {"topic_partition": [{"topic": "orders", "partition_id": [0]}]})
        old = listed["reassignment"][0]["topic_reassignments"][0]["reassignment_id"]
        # the partition's record is replaced, as by a completed move followed by a new one
        zk = c.kafka.zk
        data = zk.get("/admin/reassignments/orders/0")[0]
        zk.delete("/admin/reassignments/orders/0")
        zk.create("/admin/reassignments/orders/0", data)
        ref = {"topic": "orders", "reassignment": {"partition_id": 0, "reassignment_id": old}}
        described = await c.call(active, 10004, 0, {"topic_reassignment": [ref]})
        assert described == {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "description": []}
        # the controller's memory still holds the same move, so ListReassignments' cached id is
        # refreshed only when the move changes; a restart of the controller reads it afresh
        await c.stop(101)
        await c.start(101)
        await c.wait_active()
        await c.wait_running(101, [("orders", 0)])
        listed = await c.call(101, 10003, 1, {"topic_partition": None})
        new = {(t["topic"], r["partition_id"]): r["reassignment_id"] for t in listed["reassignment"]
               for r in t["topic_reassignments"]}[("orders", 0)]
        assert new != old and new == zk.exists("/admin/reassignments/orders/0").czxid
        ref["reassignment"]["reassignment_id"] = new
        described = await c.call(101, 10004, 1, {"topic_reassignment": [ref]})
        assert [d["reassignment_id"] for d in described["description"]] == [new]


async def test_list_is_answered_while_requests_pipeline(zk_hosts):
    """Many ListPartitionReassignments on one connection: answers in order, same content."""
    from tests.admin.cluster import Wire

    async with AdminCluster(zk_hosts, controllers=(101,), topics=TOPICS) as c:
        active = await _running(c)
        wire = await Wire.open(c.addr(active))
        try:
            sent = [wire.send(46 if i % 2 else 10003, 0, {"topics": None} if i % 2 else {"topic_partition": None})
                    for i in range(40)]
            for i, cid in enumerate(sent):
                header, body = await wire.recv(46 if i % 2 else 10003, 0)
                assert header["correlation_id"] == cid and body["error_code"] == 0
        finally:
            await wire.close()
        await asyncio.sleep(0)


def test_ongoing_view_of_the_state_pending_running_and_cancelling():
    from controller.core.state import ClusterState
    from controller.core.task import Move, Phase
    from controller.shell.admin.kip455_list import ongoing
    from znodes.values import Assignment

    state = ClusterState(controller_id=1, epoch=1)
    state.assignments[("t", 0)] = Assignment((4, 5, 1, 2), adding=(4, 5), removing=(1, 2))
    state.tasks[("t", 0)] = Move(("t", 0), (4, 5), Phase.REPLICATING, original=(1, 2))
    state.assignments[("t", 1)] = Assignment((1, 2))  # its rollback already rewrote the znode
    state.tasks[("t", 1)] = Move(("t", 1), (3, 4), Phase.CANCELLING, original=(1, 2))
    state.assignments[("t", 2)] = Assignment((1, 2))
    state.tasks[("t", 2)] = Move(("t", 2), (2, 3))  # accepted, waiting for a slot
    view = {p["partition_index"]: (p["replicas"], p["adding_replicas"], p["removing_replicas"])
            for t in ongoing(state, None) for p in t["partitions"]}
    # A waiting move is listed as Kafka lists every accepted one: reassignTo(target).
    assert view == {0: ([4, 5, 1, 2], [4, 5], [1, 2]), 1: ([1, 2, 3, 4], [], [3, 4]), 2: ([2, 3, 1], [3], [1])}
    assert [p["partition_index"] for t in ongoing(state, [("t", 2), ("u", 0)]) for p in t["partitions"]] == [2]
