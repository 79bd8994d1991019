"""Kafka's ZooKeeper door to preferred leader elections: a tool
(``kafka-preferred-replica-election.sh --zookeeper``) creates ``/admin/preferred_replica_election``
listing partitions; the active controller gives each its preferred leader (the first replica)
and deletes the znode, as Kafka's controller does (controller.core.elections step 5)."""

from __future__ import annotations

import json

from tests.controller.harness import Harness
from znodes import paths


def state(h: Harness, tp) -> dict:
    return h.json(paths.partition_state(*tp))


def ask(partitions) -> bytes:
    return json.dumps({"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]}).encode()


async def lead_elsewhere(h: Harness, tp) -> int:
    """Bounce the partition's preferred leader: another replica leads, the preferred one comes
    back into the ISR as a follower."""
    preferred = h.assignments[tp][0]
    await h.cluster.stop_broker(preferred)
    for _ in range(40):
        await h.tick()
    await h.cluster.start_broker(preferred)
    for _ in range(200):
        await h.tick()
        s = state(h, tp)
        if s["leader"] != preferred and preferred in s["isr"]:
            return preferred
    raise AssertionError(f"{tp}: {state(h, tp)}")


async def test_the_znode_elects_the_preferred_leaders_and_is_deleted():
    h = Harness(topics=("t:2:3:64KiB",))
    await h.start()
    try:
        await h.start_controller(101)
        await h.tick()
        tp, other = ("t", 0), ("t", 1)
        preferred = await lead_elsewhere(h, tp)
        epoch = state(h, tp)["leader_epoch"]
        before_other = state(h, other)
        # Named twice, with an unknown partition: Kafka reads a set and skips the unknown one.
        await h.admin.create(paths.PREFERRED_REPLICA_ELECTION, ask([tp, tp, ("t", 9), ("nope", 0)]))
        for _ in range(20):
            await h.tick()
            if h.server.exists(paths.PREFERRED_REPLICA_ELECTION) is None:
                break
        assert h.server.exists(paths.PREFERRED_REPLICA_ELECTION) is None
        after = state(h, tp)
        assert after["leader"] == preferred and after["leader_epoch"] == epoch + 1
        assert state(h, other)["leader"] == before_other["leader"]  # not asked for
        # A second request is a new znode, taken the same way.
        await h.admin.create(paths.PREFERRED_REPLICA_ELECTION, ask([tp, other]))
        for _ in range(20):
            await h.tick()
        assert h.server.exists(paths.PREFERRED_REPLICA_ELECTION) is None
        assert state(h, tp)["leader_epoch"] == epoch + 1  # already led by its preferred replica
        h.check_invariants()
    finally:
        await h.close()


async def test_a_znode_that_does_not_decode_is_left_and_elects_nothing():
    h = Harness(topics=("t:1:3:64KiB",))
    await h.start()
    try:
        await h.start_controller(101)
        await h.tick()
        tp = ("t", 0)
        await lead_elsewhere(h, tp)
        before = state(h, tp)
        await h.admin.create(paths.PREFERRED_REPLICA_ELECTION, b'{"version":1,"partitions":[{"topic":"t"}]}')
        for _ in range(10):
            await h.tick()
        assert h.server.exists(paths.PREFERRED_REPLICA_ELECTION) is not None
        assert state(h, tp) == before
        # Fixed by the operator: taken then.
        await h.admin.set(paths.PREFERRED_REPLICA_ELECTION, ask([tp]))
        for _ in range(10):
            await h.tick()
        assert h.server.exists(paths.PREFERRED_REPLICA_ELECTION) is None
        assert state(h, tp)["leader"] == h.assignments[tp][0]
    finally:
        await h.close()


async def test_a_znode_written_while_no_controller_ran_is_taken_at_the_election():
    h = Harness(topics=("t:1:3:64KiB",))
    await h.start()
    try:
        first = await h.start_controller(101)
        await h.tick()
        tp = ("t", 0)
        await lead_elsewhere(h, tp)
        await first.stop()
        await h.admin.create(paths.PREFERRED_REPLICA_ELECTION, ask([tp]))
        await h.start_controller(102)
        for _ in range(20):
            await h.tick()
        assert h.server.exists(paths.PREFERRED_REPLICA_ELECTION) is None
        assert state(h, tp)["leader"] == h.assignments[tp][0]
    finally:
        await h.close()
