"""ISR-aware execution's waiting reason where operators look: ListReassignments v1's tagged
Waiting (AdminClient.waiting_reassignments) from in-process controllers on a real ZooKeeper,
and kafka-reassign --progress's rows (client.progress) for a partition held back."""

from __future__ import annotations

import asyncio

import pytest

from client import progress
from client.admin import AdminClient
from tests.admin.cluster import AdminCluster

TOPICS = {"orders": {0: [1, 2, 3], 1: [2, 3, 1]}}
REASON = "ISR [1] at or under min.insync.replicas=1"


@pytest.mark.zk
async def test_list_reassignments_v1_tags_the_moves_waiting_for_their_isr(zk_hosts):
    c = AdminCluster(zk_hosts, controllers=(101,), topics=TOPICS)
    # orders-0's ISR is down to its leader (at the default floor of 1); orders-1's is full.
    c.set_json("/brokers/topics/orders/partitions/0/state",
               {"controller_epoch": 1, "leader": 1, "version": 1, "leader_epoch": 0, "isr": [1]})
    async with c:
        await c.wait_active()
        c.submit({("orders", 0): [1, 2, 4], ("orders", 1): [2, 4, 1]})
        await c.wait_running(101, [("orders", 1)])
        host, port = c.addr(101)
        async with AdminClient(f"{host}:{port}") as admin:
            async with asyncio.timeout(10):
                while (waiting := await admin.waiting_reassignments()) != {("orders", 0): REASON}:
                    await asyncio.sleep(0.05)
            assert await admin.waiting_reassignments([("orders", 1)]) == {}
            assert await admin.waiting_reassignments([("orders", 0), ("orders", 1)]) == waiting
            assert set(await admin.list_reassignments()) == {("orders", 1)}  # the started ones, as before
        # v0 (the KIP's layout) has no such field.
        answer = await c.call(101, 10003, 0, {"timeout_ms": 1000, "topic_partition": None})
        assert "waiting" not in answer or answer["waiting"] == []


def test_progress_shows_the_waiting_reason_for_replicas_not_in_sync():
    sample = progress.Sample(
        time=0.0, brokers={1, 2, 3, 4}, topics={"orders": {0: (1, [1, 2, 3])}},
        logs={1: {("orders", 0): progress.ReplicaLog(1000, 0)}, 2: {}, 3: {}, 4: {}},
        waiting={("orders", 0): REASON},
    )
    report = progress.compute({("orders", 0): [1, 2, 4]}, sample)
    assert [(r.broker, r.status) for r in report.rows] == [
        (1, "In sync"), (2, f"Waiting: {REASON}"), (4, f"Waiting: {REASON}")]
    assert report.as_json()["partitions"][0]["waiting"] == REASON and not report.done
    assert f"Waiting: {REASON}" in progress.render_table(report)
    plain = progress.compute({("orders", 0): [1, 2, 4]}, progress.Sample(
        time=0.0, brokers=sample.brokers, topics=sample.topics, logs=sample.logs))
    assert plain.rows[1].status == progress.NOT_HOSTED and plain.as_json()["partitions"][0]["waiting"] is None
