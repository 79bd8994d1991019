"""CreatePartitions (KIP-195, issue 14 item 3) on the ZooKeeper twin with simulated brokers:
new partitions placed like a new topic's (or as given), led and hosted when the answer comes,
Kafka's errors per topic, nothing written for a refused topic."""

from __future__ import annotations

import collections

from controller.shell.admin.create_partitions import handle_create_partitions
from protocol.errors import ErrorCode
from tests.admin.test_kip179 import context
from tests.controller.fixtures import harness_fixture
from tests.controller.test_topic_creation import assert_created
from znodes import paths


def body(*topics, validate_only=False, timeout_ms=10_000) -> dict:
    return {"topics": [{"name": n, "count": c, "assignments": None if a is None else [{"broker_ids": list(x)} for x in a]}
                       for n, c, a in topics], "timeout_ms": timeout_ms, "validate_only": validate_only}


def codes(answer) -> list[int]:
    return [r["error_code"] for r in answer["results"]]


h = harness_fixture("t:3:3:64KiB", "u:2:2:64KiB")


async def test_new_partitions_are_placed_led_and_hosted(h):
    await h.start_controller(101)
    await h.tick()
    answer = await handle_create_partitions(context(h), 3, body(("t", 7, None), ("u", 3, [(5, 6)])))
    assert codes(answer) == [0, 0]
    t = await assert_created(h, "t", 7)
    assert {p: rs for p, rs in t.items() if int(p) < 3} == {str(p): h.assignments[("t", p)] for p in range(3)}
    assert (await assert_created(h, "u", 3))["2"] == [5, 6]
    # t's 4 new partitions x 3 (12) + the 9 + 4 + 2 before = 27 replicas on 6 brokers: 4 or 5 each.
    counts = collections.Counter(b for name in ("t", "u") for rs in h.json(paths.topic(name))["partitions"].values() for b in rs)
    assert max(counts.values()) - min(counts.values()) <= 1, counts
    assert not h.violations


async def test_errors_per_topic_and_nothing_written(h):
    c = await h.start_controller(101)
    await h.tick()
    before = h.server.dump()
    answer = await handle_create_partitions(context(h), 0, body(
        ("t", 3, None), ("t2", 2, None), ("u", 1, None), ("u", 4, None)))
    assert codes(answer) == [37, 3, 42, 42]
    answer = await handle_create_partitions(context(h), 2, body(
        ("t", 5, [(1, 2, 3)]), ("u", 3, [(1, 9)]), ("u", 3, None)))
    assert codes(answer)[:2] == [39, 42]
    answer = await handle_create_partitions(context(h), 1, body(("t", 5, [(1, 2, 3)])))
    assert codes(answer) == [ErrorCode.INVALID_REPLICA_ASSIGNMENT]
    answer = await handle_create_partitions(context(h), 1, body(("u", 3, [(1, 9)]), ("t", 4, [(1, 1, 2)])))
    assert codes(answer) == [39, 39]
    answer = await handle_create_partitions(context(h), 1, body(("t", 9, None), validate_only=True))
    assert codes(answer) == [0]
    assert h.server.dump() == before
    # A topic being reassigned: REASSIGNMENT_IN_PROGRESS, as Kafka.
    tp = ("t", 0)
    await h.submit({tp: [b for b in range(1, 7) if b not in h.assignments[tp]]})
    await h.tick()
    assert tp in c.active.state.tasks
    answer = await handle_create_partitions(context(h), 3, body(("t", 4, None)))
    assert codes(answer) == [ErrorCode.REASSIGNMENT_IN_PROGRESS]
