"""AlterPartitionReassignments (45) called on an active controller in the deterministic twin."""

from __future__ import annotations

import asyncio
import json

import pytest

from controller.shell.admin.base import AdminContext, NotController
from controller.shell.admin.kip455_alter import alter_error, handle_alter
from controller.shell.role import Role
from protocol.errors import ErrorCode
from tests.admin.test_kip179 import cluster, context, throttle_configs
from znodes import paths


def body(moves: dict) -> dict:
    topics: dict = {}
    for (t, p), replicas in moves.items():
        topics.setdefault(t, []).append({"partition_index": p, "replicas": None if replicas is None else list(replicas)})
    return {"timeout_ms": 10000, "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}


def codes(answer: dict) -> dict:
    return {(t["name"], p["partition_index"]): p["error_code"] for t in answer["responses"] for p in t["partitions"]}


def other_brokers(h, tp) -> list[int]:
    return [b for b in range(1, 7) if b not in h.assignments[tp]]


async def test_alter_adds_entries_with_original_replicas_and_they_complete():
    h = await cluster()
    try:
        moves = {("t", 0): other_brokers(h, ("t", 0)), ("t", 1): other_brokers(h, ("t", 1))}
        answer = await handle_alter(context(h), 0, body(moves))
        assert answer["error_code"] == 0 and codes(answer) == {("t", 0): 0, ("t", 1): 0}
        entries = json.loads(h.server.read(paths.REASSIGN_PARTITIONS)[0])["partitions"]
        assert {(e["topic"], e["partition"]): (e["replicas"], e["original_replicas"]) for e in entries} == {
            tp: (moves[tp], h.assignments[tp]) for tp in moves
        }
        # A second call adds to the running set instead of being refused.
        more = {("t", 2): other_brokers(h, ("t", 2))}
        assert codes(await handle_alter(context(h), 0, body(more))) == {("t", 2): 0}
        h.requested.update(moves | more)
        await h.run_until_quiet()
        h.check_invariants()
        assert throttle_configs(h) == {}  # KIP-455 sets no throttle
    finally:
        await h.close()


async def test_a_new_target_for_a_moving_partition_takes_effect_in_place_like_kafka():
    """Kafka 2.4+: AlterPartitionReassignments on a partition being reassigned replaces its
    target at once (the original replicas stay the original replicas); the old target's extra
    replicas that are not in the ISR are deleted at once."""
    h = await cluster()
    try:
        tp = ("t", 0)
        original = h.assignments[tp]
        first = other_brokers(h, tp)
        assert codes(await handle_alter(context(h), 0, body({tp: first}))) == {tp: 0}
        await h.settle()
        second = [first[0], *original[:2]]
        assert codes(await handle_alter(context(h), 0, body({tp: second}))) == {tp: 0}
        await h.settle()
        record = json.loads(h.server.read(paths.reassignment(*tp))[0])
        assert (record["replicas"], record["original_replicas"]) == (second, original)
        topic = json.loads(h.server.read(paths.topic("t"))[0])
        assert topic["adding_replicas"]["0"] == [first[0]]
        # The old target's other replicas had not caught up (they are not in the ISR): deleted at
        # once, as Kafka does (docs/DESIGN.md section 4.1), not kept until the end.
        assert topic["removing_replicas"]["0"] == [original[2]]
        assert not set(first[1:]) & set(topic["partitions"]["0"])
        h.requested[tp] = second
        await h.run_until_quiet()
        h.check_invariants()
        assert h.current()[tp] == second
    finally:
        await h.close()


async def test_alter_error_codes_change_nothing():
    h = await cluster()
    try:
        answer = await handle_alter(
            context(h),
            0,
            body({("nope", 0): [1, 2, 3], ("t", 7): [1, 2, 3], ("t", 0): [], ("t", 1): [2, 2, 3], ("t", 2): [1, 2, 42]}),
        )
        assert answer["error_code"] == 0
        assert codes(answer) == {
            ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("t", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("t", 0): ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            ("t", 1): ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            ("t", 2): ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        }
        assert h.server.exists(paths.REASSIGN_PARTITIONS) is None
        twice = body({("t", 0): [4, 5, 6]})
        twice["topics"][0]["partitions"].append({"partition_index": 0, "replicas": [1, 2, 3]})
        assert codes(await handle_alter(context(h), 0, twice)) == {("t", 0): ErrorCode.INVALID_REQUEST}
        assert h.server.exists(paths.REASSIGN_PARTITIONS) is None
    finally:
        await h.close()


async def test_null_replicas_cancel_and_a_partition_not_moving_is_no_reassignment_in_progress():
    h = await cluster(topics=("t:4:3:4MiB",))
    try:
        target = other_brokers(h, ("t", 0))
        assert codes(await handle_alter(context(h), 0, body({("t", 0): target}))) == {("t", 0): 0}
        for _ in range(400):  # until the move has started
            move = context(h).role.active.state.tasks.get(("t", 0))
            if move is not None and move.started:
                break
            await h.tick()
        answer = await asyncio.wait_for(handle_alter(context(h), 0, body({("t", 0): None, ("t", 1): None})), 30)
        assert codes(answer) == {("t", 0): 0, ("t", 1): ErrorCode.NO_REASSIGNMENT_IN_PROGRESS}
        await h.run_until_quiet()
        h.check_invariants(expected={("t", 0): h.assignments[("t", 0)]})
    finally:
        await h.close()


async def test_standby_and_whole_request_errors():
    h = await cluster()
    try:
        with pytest.raises(NotController):
            await handle_alter(AdminContext(Role(5), h.config), 0, body({("t", 0): [4, 5, 6]}))
        answer = alter_error(0, body({("t", 0): [4, 5, 6], ("t", 1): None}), ErrorCode.NOT_CONTROLLER, "standby")
        assert answer["error_code"] == ErrorCode.NOT_CONTROLLER
        assert set(codes(answer).values()) == {ErrorCode.NOT_CONTROLLER}
    finally:
        await h.close()


async def test_v1_allow_replication_factor_change_false_refuses_a_new_replica_count():
    """KIP-860 (v1): with the flag off, a target of another length than the partition's
    replication factor is INVALID_REPLICATION_FACTOR and writes nothing; the same length is
    accepted; the flag on (its default) and v0 allow any length. The response echoes the flag."""
    h = await cluster()
    try:
        grow, keep = ("t", 0), ("t", 1)
        rf = len(h.assignments[grow])
        moves = {grow: list(h.assignments[grow]) + other_brokers(h, grow)[:1], keep: other_brokers(h, keep)[:rf]}
        assert len(moves[grow]) == rf + 1 and len(moves[keep]) == rf
        answer = await handle_alter(context(h), 1, {**body(moves), "allow_replication_factor_change": False})
        assert answer["allow_replication_factor_change"] is False
        assert codes(answer) == {grow: ErrorCode.INVALID_REPLICATION_FACTOR, keep: 0}
        entries = json.loads(h.server.read(paths.REASSIGN_PARTITIONS)[0])["partitions"]
        assert [(e["topic"], e["partition"]) for e in entries] == [keep]
        for version, extra in ((1, {"allow_replication_factor_change": True}), (1, {}), (0, {})):
            grown = list(h.assignments[("t", 2)]) + other_brokers(h, ("t", 2))[:1]
            answer = await handle_alter(context(h), version, {**body({("t", 2): grown}), **extra})
            assert codes(answer) == {("t", 2): 0} and answer["allow_replication_factor_change"] is True
    finally:
        await h.close()
