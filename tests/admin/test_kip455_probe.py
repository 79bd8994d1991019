"""AlterPartitionReassignments (45) and ListPartitionReassignments (46) probed against what
Kafka 2.4-3.x's ZooKeeper-mode controller answers, on the deterministic twin.

Kafka's side is read from its source: KafkaApis.handleAlterPartitionReassignmentsRequest and
handleListPartitionReassignmentsRequest, KafkaController.processApiPartitionReassignment,
validateReplicas (2.6+; 2.4's replicasAreValid makes the same checks without the messages),
maybeBuildReassignment, maybeTriggerPartitionReassignment, processListPartitionReassignments and
ReplicaAssignment.reassignTo / isBeingReassigned. Where this project answers differently on
purpose, or where Kafka's answer is uncertain, the test says so.
"""

from __future__ import annotations

import asyncio
import json

import pytest

import protocol
from controller.core import acl
from controller.core.config import ControllerConfig
from controller.core.state import ClusterState
from controller.core.task import Move, Phase
from controller.shell.admin.base import AdminContext
from controller.shell.admin.handler import AdminHandler
from controller.shell.admin.kip455_list import handle_list, ongoing
from controller.shell.listener import SESSION
from controller.shell.role import Role
from protocol import ApiKey
from protocol.errors import ErrorCode
from tests.admin.test_kip179 import cluster, context
from tests.admin.test_topic_acls import CLUSTER, FixedAcls, OpsSession, grant
from tests.controller.harness import Harness
from znodes import paths
from znodes.values import Assignment

ALTER = {"request_api_key": ApiKey.ALTER_PARTITION_REASSIGNMENTS, "request_api_version": 0}
LIST = {"request_api_key": ApiKey.LIST_PARTITION_REASSIGNMENTS, "request_api_version": 0}


def alter_body(*topics, timeout_ms: int = 10_000) -> dict:
    """``topics``: (name, {partition: replicas or None}) pairs, in order; a name may repeat."""
    return {"timeout_ms": timeout_ms, "topics": [
        {"name": t, "partitions": [{"partition_index": p, "replicas": None if r is None else list(r)} for p, r in parts.items()]}
        for t, parts in topics]}


def results(answer: dict) -> dict:
    return {(t["name"], p["partition_index"]): (p["error_code"], p["error_message"])
            for t in answer["responses"] for p in t["partitions"]}


def codes(answer: dict) -> dict:
    return {tp: code for tp, (code, _) in results(answer).items()}


def listed(answer) -> dict:
    if isinstance(answer, bytes):  # the whole list comes encoded (kip455_list step 4)
        answer = protocol.decode_body(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, "response", bytes(answer))
    return {(t["name"], p["partition_index"]): (p["replicas"], p["adding_replicas"], p["removing_replicas"])
            for t in answer["topics"] for p in t["partitions"]}


def handler(h) -> AdminHandler:
    return AdminHandler(context(h))


def others(h, tp, n: int = 3) -> list[int]:
    return [b for b in range(1, 7) if b not in h.assignments[tp]][:n]


def entries(h) -> dict:
    if h.server.exists(paths.REASSIGN_PARTITIONS) is None:
        return {}
    return {(e["topic"], e["partition"]): e["replicas"]
            for e in json.loads(h.server.read(paths.REASSIGN_PARTITIONS)[0])["partitions"]}


async def started(h, tp, turns: int = 400):
    for _ in range(turns):
        move = context(h).role.active.state.tasks.get(tp)
        if move is not None and move.started:
            return move
        await h.tick()
    raise AssertionError(f"{tp} never started")


def slow_cancels(h, seconds: float):
    """Hold the flush that records a cancel (its record's ``cancelling`` flag) for ``seconds``
    of real time: a controller slowed down by ZooKeeper, as a client waiting on it sees it.
    Once only; ``done`` is set when that write went on."""
    store = next(c for c in h.controllers if c.active is not None).store
    done = asyncio.Event()

    async def before(op):
        if not done.is_set() and b'"cancelling"' in (getattr(op, "data", None) or b""):
            await asyncio.sleep(seconds)
            done.set()
    store.before_op = before
    return done


# ---- AlterPartitionReassignments -------------------------------------------------------------


async def test_bad_input_gets_its_own_error_and_the_rest_of_the_request_proceeds():
    """Kafka: each partition is judged alone (validateReplicas, then maybeTriggerPartitionReassignment):
    empty, duplicate, negative or dead brokers -> INVALID_REPLICA_ASSIGNMENT; an unknown topic
    or partition, or a topic queued for deletion -> UNKNOWN_TOPIC_OR_PARTITION ("The partition
    does not exist."); null replicas for a partition not moving -> NO_REASSIGNMENT_IN_PROGRESS.
    The messages carry Kafka 2.6+'s words (medium confidence on the exact words; 2.4 says only
    "Replica assignment is invalid."), and a negative id is refused as such, not as unknown."""
    h = await cluster(topics=("t:8:3:64KiB", "u:1:3:64KiB"))
    try:
        await h.admin.create(paths.delete_topic("u"), b"", makepath=True)
        good = others(h, ("t", 0))
        answer = await handler(h).handle(ALTER, alter_body(
            ("t", {0: good, 1: [], 2: [1, 1, 2], 3: [-1, 1, 2], 4: [1, 2, 42], 9: [1, 2, 3], 5: None,
                   6: others(h, ("t", 6))}),
            ("nope", {0: [1, 2, 3]}),
            ("u", {0: others(h, ("u", 0))}),
        ))
        got = results(answer)
        assert answer["error_code"] == 0
        assert codes(answer) == {
            ("t", 0): 0,
            ("t", 1): ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            ("t", 2): ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            ("t", 3): ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            ("t", 4): ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            ("t", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("u", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("t", 5): ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
            ("t", 6): 0,
        }
        assert got[("t", 1)][1].startswith("empty replica list specified in partition reassignment")
        assert got[("t", 2)][1].startswith("duplicate broker ids in partition reassignment replica list: [1, 1, 2]")
        assert got[("t", 3)][1].startswith("invalid broker id in replica list: [-1, 1, 2]")
        assert "[42]" in got[("t", 4)][1] and "not alive" in got[("t", 4)][1]
        assert entries(h) == {("t", 0): good, ("t", 6): others(h, ("t", 6))}
    finally:
        await h.close()


async def test_a_topic_listed_twice_is_taken_whole_and_a_partition_named_twice_is_refused_alone():
    """Kafka's ZooKeeper-mode KafkaApis flattens the topics into one map (``.toMap``; high
    confidence): a topic listed twice with different partitions is taken whole (it used to be
    INVALID_REQUEST for every partition of it), and of one partition named twice the last copy
    wins. Here two targets for one partition are INVALID_REQUEST for that partition (a
    deliberate strictness, docs/DESIGN.md 4.11 step 1), and nothing else in the request is lost."""
    h = await cluster()
    try:
        answer = await handler(h).handle(ALTER, alter_body(
            ("t", {0: others(h, ("t", 0)), 1: others(h, ("t", 1))}), ("t", {0: h.assignments[("t", 0)]})))
        assert codes(answer) == {("t", 0): ErrorCode.INVALID_REQUEST, ("t", 1): 0}
        assert entries(h) == {("t", 1): others(h, ("t", 1))}
    finally:
        await h.close()


async def test_a_target_may_keep_a_replica_on_a_dead_broker():
    """Kafka checks only the replicas a target adds for liveness (validateReplicas:
    newAssignment.addingReplicas subsetOf liveBrokerIds). The move is accepted and waits: it
    completes once the kept broker is back and in the ISR (TRS in ISR), not before. A target
    that adds a dead broker is still refused."""
    h = await cluster()
    try:
        tp = ("t", 0)
        kept_dead, *rest = h.assignments[tp]
        await h.cluster.stop_broker(kept_dead)
        await h.tick()
        added = others(h, tp, 1)[0]
        target = [kept_dead, rest[0], added]  # adds one live broker, drops one replica
        answer = await handler(h).handle(ALTER, alter_body(("t", {0: target})))
        assert codes(answer) == {tp: 0}
        await started(h, tp)
        for _ in range(40):
            await h.tick()
        assert h.server.exists(paths.reassignment(*tp)) is not None  # still waiting for the kept broker
        await h.cluster.start_broker(kept_dead)
        await h.run_until_quiet()
        assert h.current()[tp] == target
        assert entries(h) == {}
        h.check_invariants()

        # A target that adds a broker that is down is refused, naming it.
        down = [b for b in range(1, 7) if b not in target][0]
        await h.cluster.stop_broker(down)
        await h.tick()
        answer = await handler(h).handle(ALTER, alter_body(("t", {0: [down, *target[1:]]})))
        code, message = results(answer)[tp]
        assert code == ErrorCode.INVALID_REPLICA_ASSIGNMENT and f"[{down}]" in message
    finally:
        await h.close()


async def test_a_target_equal_to_the_replicas_is_none_and_nothing_is_listed():
    """Kafka: reassignTo(current) adds and removes nothing; the answer is NONE and the partition
    is not listed (isBeingReassigned is false). The same target again for a running move is
    NONE and changes nothing."""
    h = await cluster(topics=("t:4:3:4MiB",))
    try:
        ctx = context(h)
        tp, moving = ("t", 0), ("t", 1)
        target = others(h, moving)
        assert codes(await handler(h).handle(ALTER, alter_body(("t", {1: target})))) == {moving: 0}
        await started(h, moving)
        before = await handle_list(ctx, 0, {"topics": None})
        answer = await handler(h).handle(ALTER, alter_body(("t", {0: h.assignments[tp], 1: target})))
        assert codes(answer) == {tp: 0, moving: 0}
        await h.settle()
        assert entries(h) == {moving: target}
        assert h.server.exists(paths.reassignment(*tp)) is None
        after = await handle_list(ctx, 0, {"topics": None})
        assert listed(after) == listed(before) == {moving: (target + h.assignments[moving], target, h.assignments[moving])}
        await h.run_until_quiet()
        h.check_invariants(expected={tp: h.assignments[tp], moving: target})
    finally:
        await h.close()


async def test_null_replicas_roll_a_running_move_back_and_then_nothing_is_in_progress():
    """KIP-455: a cancel puts the original replicas back and deletes the added ones; a second
    cancel finds nothing to cancel (NO_REASSIGNMENT_IN_PROGRESS, Kafka's maybeBuildReassignment
    returning None)."""
    h = await cluster(topics=("t:4:3:4MiB",))
    try:
        ctx = context(h)
        tp = ("t", 0)
        original, target = h.assignments[tp], [others(h, tp)[0], *h.assignments[tp][:2]]
        assert codes(await handler(h).handle(ALTER, alter_body(("t", {0: target})))) == {tp: 0}
        await started(h, tp)
        added = [b for b in target if b not in original]
        assert listed(await handle_list(ctx, 0, {"topics": None})) == {
            tp: (target + [b for b in original if b not in target], added, [b for b in original if b not in target])}
        h.sent.clear()
        assert codes(await handler(h).handle(ALTER, alter_body(("t", {0: None})))) == {tp: 0}
        await h.run_until_quiet()
        assert h.current()[tp] == original
        deleted = {b for b, key, body in h.sent if key == ApiKey.STOP_REPLICA}
        assert set(added) <= deleted
        assert listed(await handle_list(ctx, 0, {"topics": None})) == {}
        answer = await handler(h).handle(ALTER, alter_body(("t", {0: None})))
        assert codes(answer) == {tp: ErrorCode.NO_REASSIGNMENT_IN_PROGRESS}
        h.check_invariants(expected={tp: original})
    finally:
        await h.close()


async def test_a_new_target_while_moving_is_listed_as_kafka_computes_it_and_original_replicas_cancel():
    """Kafka re-targets in place: RS = TRS ++ (ORS -- TRS), AR = TRS -- ORS, RR = ORS -- TRS
    from the original replicas (reassignTo), the old additions not wanted any more deleted; a
    target equal to ORS is a cancel (maybeBuildReassignment of ORS)."""
    h = await cluster(topics=("t:4:3:4MiB",))
    try:
        ctx = context(h)
        tp, back = ("t", 0), ("t", 1)
        original = h.assignments[tp]
        first = others(h, tp)
        answer = await handler(h).handle(ALTER, alter_body(("t", {0: first, 1: others(h, back)})))
        assert codes(answer) == {tp: 0, back: 0}
        await started(h, tp)
        await started(h, back)
        second = [first[0], *original[:2]]
        answer = await handler(h).handle(ALTER, alter_body(("t", {0: second, 1: h.assignments[back]})))
        assert codes(answer) == {tp: 0, back: 0}
        await h.settle()
        view = listed(await handle_list(ctx, 0, {"topics": [{"name": "t", "partition_indexes": [0]}]}))
        assert view == {tp: (second + [original[2]], [first[0]], [original[2]])}
        await h.run_until_quiet()
        h.check_invariants(expected={tp: second, back: h.assignments[back]})
        assert listed(await handle_list(ctx, 0, {"topics": None})) == {}
    finally:
        await h.close()


async def test_v0_changes_the_replication_factor_both_ways():
    """Kafka 2.4+ lets a reassignment change the replication factor (high confidence; KIP-860's
    v1 flag only lets a client forbid it): one partition grows, one shrinks, both complete."""
    h = await cluster()
    try:
        grow, shrink = ("t", 0), ("t", 1)
        targets = {grow: h.assignments[grow] + others(h, grow, 1), shrink: h.assignments[shrink][1:]}
        answer = await handler(h).handle(ALTER, alter_body(("t", {0: targets[grow], 1: targets[shrink]})))
        assert codes(answer) == {grow: 0, shrink: 0}
        await h.run_until_quiet()
        h.check_invariants(expected=targets)
    finally:
        await h.close()


async def test_a_cancel_with_timeout_zero_is_answered_once_recorded():
    """Kafka's ZooKeeper-mode controller ignores timeout_ms: every request is answered once
    processed (high confidence for 2.4-3.x). A cancel with timeout_ms 0 used to get a one-second
    wait and REQUEST_TIMED_OUT for the whole request while a target got 30 s."""
    h = await cluster(topics=("t:4:3:4MiB",))
    try:
        tp = ("t", 0)
        assert codes(await handler(h).handle(ALTER, alter_body(("t", {0: others(h, tp)})))) == {tp: 0}
        await started(h, tp)
        slow_cancels(h, 1.5)
        answer = await handler(h).handle(ALTER, alter_body(("t", {0: None}), timeout_ms=0))
        assert answer["error_code"] == 0 and codes(answer) == {tp: 0}
        await h.run_until_quiet()
        h.check_invariants(expected={tp: h.assignments[tp]})
    finally:
        await h.close()


async def test_a_cancel_that_times_out_keeps_the_targets_answers():
    """The targets landed and were answered by the controller before the cancels were sent: a
    timeout of the cancels is theirs alone, and the request is not failed as a whole (Kafka's
    ZooKeeper mode never times out here; its KRaft mode fails the whole request - low confidence
    either matters to a client, which retries REQUEST_TIMED_OUT per partition)."""
    h = await cluster(topics=("t:4:3:4MiB",))
    try:
        moving, fresh = ("t", 0), ("t", 1)
        assert codes(await handler(h).handle(ALTER, alter_body(("t", {0: others(h, moving)})))) == {moving: 0}
        await started(h, moving)
        held = slow_cancels(h, 1.5)
        answer = await handler(h).handle(ALTER, alter_body(("t", {0: None, 1: others(h, fresh)}), timeout_ms=1))
        assert answer["error_code"] == 0
        assert codes(answer) == {moving: ErrorCode.REQUEST_TIMED_OUT, fresh: 0}
        assert fresh in entries(h)
        await asyncio.wait_for(held.wait(), 10)
        await h.run_until_quiet()  # the slow cancel still lands: a timed-out request may be taken
        h.check_invariants(expected={moving: h.assignments[moving], fresh: others(h, fresh)})
    finally:
        await h.close()


async def test_authorization_and_standby_answers():
    """Kafka: Alter needs ALTER on the cluster, List DESCRIBE on it; the refusal is
    CLUSTER_AUTHORIZATION_FAILED request-wide and on every partition (getErrorResponse). A
    standby answers NOT_CONTROLLER (Kafka's controller callback sets it request-wide only; here
    every partition carries it too, which clients ignore)."""
    h = await cluster()
    try:
        SESSION.set(OpsSession())
        ctx = context(h)
        ctx.authorizer = FixedAcls(*grant(CLUSTER, acl.DESCRIBE))
        body = alter_body(("t", {0: others(h, ("t", 0)), 1: None}))
        answer = await AdminHandler(ctx).handle(ALTER, body)
        assert answer["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert set(codes(answer).values()) == {ErrorCode.CLUSTER_AUTHORIZATION_FAILED} and len(codes(answer)) == 2
        assert (await AdminHandler(ctx).handle(LIST, {"topics": []}))["error_code"] == 0
        ctx.authorizer = FixedAcls(*grant(CLUSTER, acl.CREATE))  # ALTER would imply DESCRIBE, as in Kafka
        assert (await AdminHandler(ctx).handle(LIST, {"topics": None}))["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert entries(h) == {}
        standby = AdminHandler(AdminContext(Role(5), h.config))
        answer = await standby.handle(ALTER, body)
        assert answer["error_code"] == ErrorCode.NOT_CONTROLLER
        assert (await standby.handle(LIST, {"topics": None}))["error_code"] == ErrorCode.NOT_CONTROLLER
    finally:
        SESSION.set(None)
        await h.close()


# ---- ListPartitionReassignments ---------------------------------------------------------------


async def test_list_names_only_partitions_being_reassigned():
    """Kafka: topics null lists every partition being reassigned; named partitions that are not
    (or do not exist, or whose topic does not) are absent without an error, a partition named
    twice is listed once (a Set), an empty topics array lists nothing."""
    h = await cluster(topics=("t:4:3:4MiB",))
    try:
        ctx = context(h)
        tp = ("t", 2)
        target = others(h, tp)
        assert codes(await handler(h).handle(ALTER, alter_body(("t", {2: target})))) == {tp: 0}
        await started(h, tp)
        original = h.assignments[tp]
        expected = {tp: (target + original, target, original)}
        assert listed(await handle_list(ctx, 0, {"topics": None})) == expected
        named = {"topics": [{"name": "t", "partition_indexes": [0, 2, 2, 9]}, {"name": "nope", "partition_indexes": [0]}]}
        answer = await handle_list(ctx, 0, named)
        assert answer["error_code"] == 0 and listed(answer) == expected
        assert [p["partition_index"] for t in answer["topics"] for p in t["partitions"]] == [2]
        assert listed(await handle_list(ctx, 0, {"topics": []})) == {}
        await h.run_until_quiet()
    finally:
        await h.close()


def test_a_move_that_adds_and_removes_nothing_is_not_listed():
    """Kafka lists a partition only while its assignment isBeingReassigned (adding or removing
    non-empty; high confidence). A new order of the same replicas waiting for one of them to
    rejoin the ISR, or the rollback of one, moves no replica: not listed."""
    state = ClusterState(controller_id=1, epoch=1)
    state.assignments[("t", 0)] = Assignment((3, 2, 1))  # RS = TRS from its first topic write
    state.tasks[("t", 0)] = Move(("t", 0), (3, 2, 1), Phase.REPLICATING, original=(1, 2, 3))
    state.assignments[("t", 1)] = Assignment((1, 2, 3))
    state.tasks[("t", 1)] = Move(("t", 1), (3, 2, 1), Phase.CANCELLING, original=(1, 2, 3))
    state.assignments[("t", 2)] = Assignment((4, 2, 3, 1), adding=(4,), removing=(1,))
    state.tasks[("t", 2)] = Move(("t", 2), (4, 2, 3), Phase.REPLICATING, original=(1, 2, 3))
    assert ongoing(state, None) == ongoing(state, [("t", 0), ("t", 1), ("t", 2)]) == [
        {"name": "t", "partitions": [
            {"partition_index": 2, "replicas": [4, 2, 3, 1], "adding_replicas": [4], "removing_replicas": [1]}]}]


# Kafka starts every accepted reassignment at once, so a partition is listed from the moment
# AlterPartitionReassignments answers NONE; a move here waiting for a per-broker slot is listed
# the same way (kip455_list step 1).
async def test_an_accepted_move_waiting_for_a_slot_is_listed():
    h = Harness(topics=("t:2:3:4MiB",), config=ControllerConfig(retry_backoff_s=0.0, request_retries=0,
                                                               max_incoming_per_broker=1))
    await h.start()
    await h.start_controller(101)
    try:
        first, second = ("t", 0), ("t", 1)
        spare = [b for b in range(1, 7) if b not in h.assignments[first] and b not in h.assignments[second]]
        targets = {first: h.assignments[first][:2] + spare[:1], second: h.assignments[second][:2] + spare[:1]}
        answer = await handler(h).handle(ALTER, alter_body(("t", {0: targets[first], 1: targets[second]})))
        assert codes(answer) == {first: 0, second: 0}
        await h.settle()
        assert set(listed(await handle_list(context(h), 0, {"topics": None}))) == {first, second}
    finally:
        await h.close()


async def test_a_null_target_withdraws_a_tool_entry_waiting_for_a_slot_without_original_replicas():
    """Kafka's cancel (null replicas) of a reassignment rolls the partition back to its replicas
    before the move (``maybeBuildReassignment``: ``reassignTo(origin)``); a move that has not
    started is on them already, so the cancel withdraws it. KIP-236's skip of an entry without
    ``original_replicas`` belongs to KIP-236's own doors (its znode and CancelReassignments),
    which keep it."""
    h = Harness(topics=("t:4:3:64KiB",), config=ControllerConfig(max_cluster_moves=1))
    await h.start()
    await h.start_controller(101, throttle_removal=("all", "idle"))
    try:
        running, waiting = ("t", 0), ("t", 1)
        await h.submit({running: others(h, running), waiting: others(h, waiting)})  # a tool's entries
        await started(h, running)
        move = context(h).role.active.state.tasks[waiting]
        assert not move.started
        kip236 = await handler(h).handle(
            {"request_api_key": ApiKey.CANCEL_REASSIGNMENTS, "request_api_version": 0},
            {"partitions": [{"topic": "t", "partition_ids": [1]}], "timeout_ms": 10_000, "validate_only": False})
        assert kip236["results"][0]["partitions"][0]["error_code"] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
        answer = await handler(h).handle(ALTER, alter_body(("t", {1: None})))
        assert codes(answer) == {waiting: 0}
        await h.settle()
        assert waiting not in entries(h) and waiting not in context(h).role.active.state.tasks
        await h.run_until_quiet()
        assert h.current()[waiting] == h.assignments[waiting]
        assert h.current()[running] == others(h, running)
    finally:
        await h.close()
