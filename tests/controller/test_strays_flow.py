"""Issue 16 item 2 end to end (controller, ZooKeeper twin, simulated brokers): a replica whose
deletion was missed because its broker was down is deleted when that broker registers again
(engine step 9), and an override's dropped replica outside the ISR stops copying at once
(engine step 4b)."""

from __future__ import annotations

import json

from tests.controller.harness import Harness
from znodes import paths


def hosts(h: Harness, tp, broker) -> bool:
    return h.cluster.model.get(tp[0], tp[1], broker) is not None


def moving(h: Harness, tp) -> bool:
    return h.server.exists(paths.reassignment(*tp)) is not None


async def test_a_replica_removed_while_its_broker_was_down_is_deleted_when_it_registers():
    h = Harness(topics=("t:1:3:64KiB",))
    await h.start()
    try:
        tp = ("t", 0)
        ors = h.assignments[tp]
        gone = ors[-1]  # a follower the move removes
        new = next(b for b in range(1, 7) if b not in ors)
        await h.start_controller(101)
        await h.cluster.stop_broker(gone)
        await h.submit({tp: [*ors[:-1], new]})
        await h.run_until_quiet()
        h.check_invariants()
        assert hosts(h, tp, gone)  # its StopReplica could not be sent: left on its disk
        await h.cluster.start_broker(gone)
        for _ in range(4):
            await h.tick()
        assert not hosts(h, tp, gone)
        assert hosts(h, tp, new) and all(hosts(h, tp, b) for b in ors[:-1])
        h.check_invariants()
    finally:
        await h.close()


async def test_an_overridden_replica_out_of_the_isr_stops_copying_at_once():
    h = Harness(topics=("t:1:3:64MiB",))  # 64 MB at 2 MB/s: a copy takes half a minute
    await h.start()
    try:
        tp = ("t", 0)
        ors = h.assignments[tp]
        spare = [b for b in range(1, 7) if b not in ors]
        await h.start_controller(101)
        await h.submit({tp: [*ors[:-1], spare[0]]})
        await h.tick()
        assert hosts(h, tp, spare[0]) and moving(h, tp)
        h.requested[tp] = [*ors[:-1], spare[1]]
        body = {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": h.requested[tp]}]}
        _, stat = await h.admin.get(paths.REASSIGN_PARTITIONS)
        await h.admin.set(paths.REASSIGN_PARTITIONS, json.dumps(body).encode(), stat.version)
        await h.tick()
        assert moving(h, tp)  # the new target is still copying ...
        assert not hosts(h, tp, spare[0])  # ... and the dropped replica is gone already
        assert json.loads(h.server.read(paths.topic("t"))[0])["partitions"]["0"] == [*h.requested[tp], ors[-1]]
        await h.run_until_quiet()
        h.check_invariants()
    finally:
        await h.close()


async def test_an_overridden_replica_on_a_broker_that_was_down_is_deleted_when_it_registers():
    h = Harness(topics=("t:1:3:64KiB",))
    await h.start()
    try:
        tp = ("t", 0)
        ors = h.assignments[tp]
        spare = [b for b in range(1, 7) if b not in ors]
        await h.start_controller(101)
        await h.submit({tp: [*ors[:-1], spare[0]]})
        await h.settle()
        await h.cluster.stop_broker(spare[0])  # before it caught up
        h.requested[tp] = [*ors[:-1], spare[1]]
        body = {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": h.requested[tp]}]}
        _, stat = await h.admin.get(paths.REASSIGN_PARTITIONS)
        await h.admin.set(paths.REASSIGN_PARTITIONS, json.dumps(body).encode(), stat.version)
        await h.run_until_quiet()
        h.check_invariants()
        assert hosts(h, tp, spare[0])
        await h.cluster.start_broker(spare[0])
        for _ in range(4):
            await h.tick()
        assert not hosts(h, tp, spare[0])
        h.check_invariants()
    finally:
        await h.close()


async def test_a_rolled_back_replica_on_a_broker_that_was_down_is_deleted_when_it_registers():
    h = Harness(topics=("t:1:3:64MiB",))
    await h.start()
    try:
        tp = ("t", 0)
        ors = h.assignments[tp]
        new = next(b for b in range(1, 7) if b not in ors)
        await h.start_controller(101)
        await h.submit({tp: [*ors[:-1], new]})
        await h.tick()
        assert hosts(h, tp, new) and moving(h, tp)
        await h.cluster.stop_broker(new)
        await h.admin.create(paths.CANCEL_REASSIGNMENT, b"")  # KIP-236: roll back to ORS
        await h.run_until_quiet()
        h.check_invariants({tp: ors})
        assert hosts(h, tp, new)
        await h.cluster.start_broker(new)
        for _ in range(4):
            await h.tick()
        assert not hosts(h, tp, new)
        h.check_invariants({tp: ors})
    finally:
        await h.close()
