"""KIP-236 cancel and queue through the real shell (controller.shell.active) on the ZooKeeper twin
with simulated brokers: the three doors, the queue with a conflicting partition, and a crash
after every ZooKeeper op of a cancel finished by the next controller."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import pytest

from controller.core.task import Phase
from controller.shell.admin.base import AdminContext, ApiError
from controller.shell.admin.cancel import cancel_partitions
from protocol import ApiKey
from protocol.errors import ErrorCode
from tests.controller.fixtures import harness_fixture
from tests.controller.harness import Harness
from znodes import paths

TP = ("t", 0)
# Large enough that a move takes simulated seconds at the harness's 2 MB/s. The simulated
# cluster places t-0 on 4,2,3, t-1 on 5,3,4, t-2 on 6,4,5.
TOPIC = "t:3:3:8MiB"
MOVES = {("t", 0): [1, 5, 6], ("t", 1): [5, 3, 2]}


def hosted(h: Harness, tp) -> list[int]:
    return sorted(b for b in h.cluster.brokers if any((r.topic, r.partition) == tp for r in h.cluster.broker(b).core.replicas()))


def ctx_of(handle) -> AdminContext:
    role = SimpleNamespace(active=handle.active, store=handle.store, controller_id=handle.id)
    return AdminContext(role, handle.harness.config)


async def started(h: Harness, tps, seconds: float = 2.0):
    """Tick until every partition in ``tps`` is REPLICATING (or fail)."""
    for _ in range(int(seconds / 0.25) + 1):
        active = next(c.active for c in h.controllers if c.active is not None)
        if all((m := active.state.tasks.get(tp)) is not None and m.phase is Phase.REPLICATING for tp in tps):
            return active
        await h.tick()
    raise AssertionError("moves did not start")


h = harness_fixture(TOPIC)


async def test_cancel_znode_rolls_every_move_back_and_is_deleted(h):
    await h.start_controller(101)
    original = h.current()
    await h.submit(MOVES)
    await started(h, [("t", 0), ("t", 1)])
    assert hosted(h, ("t", 0)) == [1, 2, 3, 4, 5, 6]
    await h.admin.create(paths.CANCEL_REASSIGNMENT, b"")
    await h.settle()
    await h.run_until_quiet()
    assert h.server.exists(paths.CANCEL_REASSIGNMENT) is None
    h.check_invariants(expected=original)
    assert hosted(h, ("t", 0)) == [2, 3, 4] and hosted(h, ("t", 1)) == [3, 4, 5]
    state = h.json(paths.partition_state("t", 0))
    assert state["leader"] in (2, 3, 4) and set(state["isr"]) <= {2, 3, 4}


async def test_cancel_api_answers_after_the_writes_landed(h):
    c = await h.start_controller(101)
    original = h.current()
    await h.submit({TP: MOVES[TP]})
    await started(h, [TP])
    results = await cancel_partitions(ctx_of(c), [TP, ("t", 2), ("nope", 0), ("bad/name", 0)])
    assert results[TP] == (ErrorCode.NONE, None)
    assert results[("t", 2)][0] is ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    assert results[("nope", 0)][0] is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert results[("bad/name", 0)][0] is ErrorCode.INVALID_REQUEST
    # answered: the cancel is in ZooKeeper already (record marked, topic znode = rollback)
    record = h.json(paths.reassignment("t", 0))
    assert record.get("cancelling") is True or h.server.exists(paths.reassignment("t", 0)) is None
    await h.run_until_quiet()
    h.check_invariants(expected=original)
    assert hosted(h, TP) == [2, 3, 4]


async def test_a_cancel_whose_flush_is_fenced_off_is_not_answered_as_done(h):
    """The answer waits for the flush that carries the cancel's writes: deposed before its
    first op lands, the controller never recorded the cancel, so the client must not be told
    NONE (it is told NOT_CONTROLLER, or the call fails) - and the move runs on to its target."""
    c = await h.start_controller(101)
    await h.submit({TP: MOVES[TP]})
    await started(h, [TP])
    c.store.depose_after = 0
    try:
        results = await cancel_partitions(ctx_of(c), [TP])
    except ApiError as e:
        results = {TP: (e.code, str(e))}
    assert results[TP][0] is not ErrorCode.NONE, results
    assert h.server.exists(paths.reassignment("t", 0)) is None or not h.json(paths.reassignment("t", 0)).get("cancelling")


async def test_queue_with_a_conflicting_partition_cancels_then_reassigns(h):
    await h.start_controller(101)
    await h.submit({TP: MOVES[TP]})
    await started(h, [TP])
    h.requested = {("t", 0): [2, 5, 1], ("t", 1): [1, 2, 6]}
    queue = {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": r} for (t, p), r in h.requested.items()]}
    await h.admin.create(paths.REASSIGN_QUEUE, json.dumps(queue).encode())
    await h.settle()
    assert h.server.exists(paths.REASSIGN_QUEUE) is None  # taken at once, deleted when empty
    await h.run_until_quiet()
    h.check_invariants()
    assert hosted(h, ("t", 0)) == [1, 2, 5] and hosted(h, ("t", 1)) == [1, 2, 6]


async def test_a_malformed_queue_is_left_alone(h):
    await h.start_controller(101)
    await h.admin.create(paths.REASSIGN_QUEUE, b"{not json")
    await h.settle()
    assert h.server.exists(paths.REASSIGN_QUEUE) is not None
    assert h.current() == {tp: list(r) for tp, r in h.assignments.items()}


async def cancel_crash_run(crash_after: int | None) -> tuple[int, bool]:
    h = Harness(topics=(TOPIC,))
    await h.start()
    try:
        original = h.current()
        first = await h.start_controller(101)
        await h.submit(MOVES)
        await started(h, [("t", 0), ("t", 1)])
        before = first.store.ops_applied
        first.store.remaining = crash_after
        await h.admin.create(paths.CANCEL_REASSIGNMENT, b"")
        await h.settle()
        while h.busy() and first.alive:
            await h.tick()
        if first.store.crashed:
            await h.start_controller(102)
        await h.run_until_quiet()
        assert h.server.exists(paths.CANCEL_REASSIGNMENT) is None
        h.check_invariants(expected=original)
        assert hosted(h, ("t", 0)) == [2, 3, 4]
        return first.store.ops_applied - before, first.store.crashed
    finally:
        await h.close()


async def test_a_crash_after_any_zookeeper_op_of_a_cancel_is_finished_by_the_next_controller():
    total, crashed = await cancel_crash_run(None)
    assert not crashed and total >= 8
    for k in range(total):
        applied, crashed = await cancel_crash_run(k)
        assert crashed and applied == k, k


async def test_a_cancel_sitting_in_the_queue_of_a_resigning_controller_times_out_cleanly(h):
    c = await h.start_controller(101)
    await h.submit({TP: MOVES[TP]})
    await started(h, [TP])
    ctx = ctx_of(c)
    await c.stop()  # the loop is gone: nobody takes the event
    from controller.shell.admin.base import ApiError

    with pytest.raises(ApiError) as e:
        await asyncio.wait_for(cancel_partitions(ctx, [TP], timeout_s=0.0), 5)
    assert e.value.code is ErrorCode.REQUEST_TIMED_OUT


async def test_the_cancel_reassignments_api_answers_per_partition_in_its_wire_format(h):
    import protocol
    from controller.shell.admin.base import ApiError
    from controller.shell.admin.cancel import handle_cancel

    c = await h.start_controller(101)
    await h.submit({TP: MOVES[TP]})
    await started(h, [TP])
    ctx = ctx_of(c)
    # validate_only: the answer says what would happen, nothing changes
    body = {"partitions": [{"topic": "t", "partition_ids": [0, 1]}], "validate_only": True, "timeout_ms": 5000}
    answer = await handle_cancel(ctx, 1, body)
    assert answer["error_code"] == 0
    (topic,) = answer["results"]
    assert [(p["partition_id"], p["error_code"]) for p in topic["partitions"]] == [(0, 0), (1, 85)]
    assert c.active.state.tasks[TP].phase is Phase.REPLICATING
    for version in (0, 1):  # the answer encodes in both versions of the spec
        header, decoded = protocol.decode_response(
            ApiKey.CANCEL_REASSIGNMENTS, version, protocol.encode_response(ApiKey.CANCEL_REASSIGNMENTS, version, 7, answer)
        )
        assert decoded["results"][0]["partitions"][1]["error_code"] == 85
    # an empty list is a mistake, not "cancel all"
    with pytest.raises(ApiError) as e:
        await handle_cancel(ctx, 1, {"partitions": [{"topic": "t", "partition_ids": []}]})
    assert e.value.code is ErrorCode.INVALID_REQUEST
    # null partitions: every reassignment
    answer = await handle_cancel(ctx, 0, {"partitions": None, "validate_only": False, "timeout_ms": 5000})
    assert answer["results"] == [{"topic": "t", "partitions": [{"partition_id": 0, "error_code": 0, "error_message": None}]}]
    await h.run_until_quiet()
    assert hosted(h, TP) == [2, 3, 4]


async def queue_crash_run(crash_after: int | None) -> tuple[int, bool]:
    h = Harness(topics=(TOPIC,))
    await h.start()
    try:
        first = await h.start_controller(101)
        await h.submit({TP: MOVES[TP]})
        await started(h, [TP])
        before = first.store.ops_applied
        first.store.remaining = crash_after
        h.requested = {("t", 0): [2, 5, 1], ("t", 1): [1, 2, 6]}
        queue = {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": r} for (t, p), r in h.requested.items()]}
        await h.admin.create(paths.REASSIGN_QUEUE, json.dumps(queue).encode())
        await h.settle()
        while (h.busy() or h.server.exists(paths.REASSIGN_QUEUE) is not None) and first.alive:
            await h.tick()
        if first.store.crashed:
            await h.start_controller(102)
        await h.run_until_quiet()
        assert h.server.exists(paths.REASSIGN_QUEUE) is None
        h.check_invariants()
        assert hosted(h, ("t", 0)) == [1, 2, 5] and hosted(h, ("t", 1)) == [1, 2, 6]
        return first.store.ops_applied - before, first.store.crashed
    finally:
        await h.close()


async def test_a_crash_after_any_zookeeper_op_of_a_queue_is_finished_by_the_next_controller():
    total, crashed = await queue_crash_run(None)
    assert not crashed and total >= 8
    for k in range(total):
        applied, crashed = await queue_crash_run(k)
        assert crashed and applied == k, k


async def test_a_tool_writing_the_requests_znode_while_a_rollback_finishes(h):
    """The rollback's last multi (entry drop + record delete) meets a concurrent tool write:
    neither lands, the controller rebuilds from ZooKeeper and finishes the rollback, and the
    tool's new entry is taken."""
    c = await h.start_controller(101)
    await h.submit({TP: MOVES[TP]})
    await started(h, [TP])
    tool_wrote = []

    async def tool(op):
        if op.path == paths.REASSIGN_PARTITIONS and not tool_wrote:
            data, stat = h.server.read(paths.REASSIGN_PARTITIONS)
            doc = json.loads(data)
            doc["partitions"].append({"topic": "t", "partition": 2, "replicas": [1, 2, 3]})
            await h.admin.set(paths.REASSIGN_PARTITIONS, json.dumps(doc).encode(), version=stat.version)
            tool_wrote.append(op)

    c.store.before_op = tool
    results = await cancel_partitions(ctx_of(c), [TP])
    assert results[TP] == (ErrorCode.NONE, None)
    h.requested = {("t", 2): [1, 2, 3]}
    await h.run_until_quiet()
    assert tool_wrote, "the rollback never wrote /admin/reassign_partitions"
    assert c.active is not None and c.active.stats.reloads >= 1  # rebuilt, not merged
    h.check_invariants(expected={TP: [4, 2, 3], ("t", 2): [1, 2, 3]})
    assert hosted(h, TP) == [2, 3, 4]


async def test_an_isr_change_racing_the_cancel_is_retried_not_failed(h):
    """The rollback's state write is conditional on the zkVersion: a leader's ISR change in
    between fails the flush; the controller reads that state again and takes the step again
    (controller.shell.state_conflicts), without a reload: the partition gets the rollback's
    one new leader epoch, not a resumed move's before it."""
    c = await h.start_controller(101)
    await h.submit({TP: MOVES[TP]})
    await started(h, [TP])
    epoch = h.json(paths.partition_state(*TP))["leader_epoch"]
    raced = []

    async def leader_writes_isr(op):
        if op.path == paths.partition_state(*TP) and not raced:
            data, stat = h.server.read(op.path)
            await h.admin.set(op.path, data, version=stat.version)  # same ISR, new zkVersion
            raced.append(op)

    c.store.before_op = leader_writes_isr
    results = await cancel_partitions(ctx_of(c), [TP])
    assert raced and results[TP] == (ErrorCode.NONE, None)
    assert (c.active.stats.reloads, c.active.stats.state_retries) == (0, 1)
    assert h.json(paths.partition_state(*TP))["leader_epoch"] == epoch + 1
    await h.run_until_quiet()
    h.check_invariants(expected={TP: [4, 2, 3]})
    assert hosted(h, TP) == [2, 3, 4]


async def test_an_acknowledged_cancel_also_cancels_a_target_waiting_for_a_slot():
    """Found by the chaos checker (seed 3, broker restarts): a new target for a replicating move
    that waited for a slot under the caps started once the cancel's rollback ended, so the
    partition ended on it although the cancel was answered NONE. The cancel takes it too."""
    from controller.core.config import ControllerConfig
    from controller.shell.admin.kip455_alter import handle_alter

    h = Harness(topics=(TOPIC,), config=ControllerConfig(max_incoming_per_broker=1))
    await h.start()
    try:
        c = await h.start_controller(101)
        await h.submit({("t", 0): [1, 2, 3], ("t", 1): [6, 3, 4]})
        await started(h, [("t", 0), ("t", 1)])
        body = {"timeout_ms": 10000, "topics": [{"name": "t", "partitions": [{"partition_index": 0, "replicas": [6, 2, 3]}]}]}
        answer = await handle_alter(ctx_of(c), 0, body)
        assert answer["responses"][0]["partitions"][0]["error_code"] == 0
        move = c.active.state.tasks[("t", 0)]
        assert move.next_target == (6, 2, 3) and move.target == (1, 2, 3)  # broker 6's slot is t-1's
        results = await cancel_partitions(ctx_of(c), [("t", 0)])
        assert results[("t", 0)][0] is ErrorCode.NONE, results
        h.requested = {("t", 1): [6, 3, 4]}
        await h.run_until_quiet()
        h.check_invariants(expected={("t", 0): [4, 2, 3], ("t", 1): [6, 3, 4]})
        assert hosted(h, ("t", 0)) == [2, 3, 4]
    finally:
        await h.close()
