"""DescribeReassignments when several moves share one reassignment id (KIP-240).

The controller starts the moves of one step with one ZooKeeper multi-op: one transaction, one
zxid, so their ``/admin/reassignments/T/P`` records share a czxid and therefore a
``reassignment_id``. Each partition asked about must still get its own description: v1 names
it (tagged ``topic`` / ``partition_id``), v0 keeps request order. Real ZooKeeper, in-process
controllers, brokers that never answer (so the moves stay running).
"""

from __future__ import annotations

import pytest

from tests.admin.cluster import AdminCluster

pytestmark = pytest.mark.zk

# Every partition has a different leader (its first replica), kept in its target, so a
# description matched to the wrong partition shows the wrong leader.
TOPICS = {"orders": {0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1, 3]}, "audit": {0: [4, 1]}}
MOVES = {("orders", 0): [1, 4], ("orders", 1): [2, 4], ("orders", 2): [3, 4], ("audit", 0): [4, 2]}
# Asked in an order that is neither the moves' nor sorted.
ASKED = [("orders", 2), ("audit", 0), ("orders", 0), ("orders", 1)]


def _ref(tp, rid):
    return {"topic": tp[0], "reassignment": {"partition_id": tp[1], "reassignment_id": rid}}


async def _started_together(c: AdminCluster) -> tuple[int, int]:
    """(active controller, the one id all the moves share)."""
    active = await c.wait_active()
    c.submit(MOVES)
    await c.wait_running(active, list(MOVES))
    czxids = {tp: c.kafka.zk.exists(f"/admin/reassignments/{tp[0]}/{tp[1]}").czxid for tp in MOVES}
    assert len(set(czxids.values())) == 1, f"the moves were not started in one multi-op: {czxids}"
    return active, czxids[ASKED[0]]


def _leader(c: AdminCluster, tp) -> int:
    return c.get_json(f"/brokers/topics/{tp[0]}/partitions/{tp[1]}/state")["leader"]


async def test_each_partition_sharing_an_id_is_described_as_itself(zk_hosts):
    async with AdminCluster(zk_hosts, controllers=(101,), topics=TOPICS) as c:
        active, rid = await _started_together(c)
        leaders = {tp: _leader(c, tp) for tp in ASKED}
        assert len(set(leaders.values())) == len(ASKED)  # else a mix-up could go unseen
        listed = await c.call(active, 10003, 1, {"topic_partition": None})
        assert {r["reassignment_id"] for t in listed["reassignment"] for r in t["topic_reassignments"]} == {rid}

        refs = [_ref(tp, rid) for tp in ASKED]
        v1 = await c.call(active, 10004, 1, {"topic_reassignment": refs, "timeout_ms": 1000})
        assert v1["error_code"] == 0
        got = [(d["topic"], d["partition_id"]) for d in v1["description"]]
        assert got == ASKED  # every one, in request order, each naming its partition
        for d in v1["description"]:
            tp = (d["topic"], d["partition_id"])
            ctime = c.kafka.zk.exists(f"/admin/reassignments/{tp[0]}/{tp[1]}").ctime
            assert (d["reassignment_id"], d["start_time"], d["leader_id"]) == (rid, ctime, leaders[tp])
            assert [n["broker_id"] for n in d["new_assigned"]] == MOVES[tp]

        # v0: the KIP's layout carries no partition; the same descriptions in the same order
        v0 = await c.call(active, 10004, 0, {"topic_reassignment": refs})
        assert [(d["topic"], d["partition_id"]) for d in v0["description"]] == [("", -1)] * len(ASKED)
        assert [d["leader_id"] for d in v0["description"]] == [leaders[tp] for tp in ASKED]
        assert [[n["broker_id"] for n in d["new_assigned"]] for d in v0["description"]] == [MOVES[tp] for tp in ASKED]


async def test_only_entries_whose_record_has_that_id_are_described(zk_hosts):
    async with AdminCluster(zk_hosts, controllers=(101,), topics=TOPICS) as c:
        active, rid = await _started_together(c)
        refs = [
            _ref(("orders", 3), rid),      # exists, not moving: no record
            _ref(("orders", 1), rid + 1),  # moving, but another id
            _ref(("orders", 1), rid),
            _ref(("nope", 0), rid),        # no such topic
            _ref(("orders", 0), rid),
            _ref(("orders", 1), rid),      # asked twice: described once
            _ref(("audit", 0), rid - 1),
        ]
        body = await c.call(active, 10004, 1, {"topic_reassignment": refs})
        assert body["error_code"] == 0
        assert [(d["topic"], d["partition_id"], d["reassignment_id"]) for d in body["description"]] == [
            ("orders", 1, rid), ("orders", 0, rid)]
        assert [d["leader_id"] for d in body["description"]] == [_leader(c, ("orders", 1)), _leader(c, ("orders", 0))]
        # bad entries of every kind change nothing: the moves still run, the records are intact
        assert (await c.call(active, 10004, 1, {"topic_reassignment": [
            {"topic": "", "reassignment": {"partition_id": 0, "reassignment_id": rid}},
            {"topic": "orders", "reassignment": {"partition_id": -1, "reassignment_id": rid}},
            {"topic": "a/b", "reassignment": {"partition_id": 0, "reassignment_id": rid}},
        ]}))["description"] == []
        assert all(c.kafka.zk.exists(f"/admin/reassignments/{t}/{p}").czxid == rid for t, p in MOVES)
