"""A step whose own flush met a newer partition state (controller.shell.state_conflicts): which
failures qualify, and through the real shell on the twin, the step taken again with the states
read anew - or, after STALE_STATE_RETRIES tries, the reload as before."""

from __future__ import annotations

import pytest

from controller.shell.admin.cancel import cancel_partitions
from controller.shell.state_conflicts import STALE_STATE_RETRIES, written_states, written_states_if_stale
from protocol.errors import ErrorCode
from tests.controller.fixtures import harness_fixture
from tests.controller.test_cancel_flow import MOVES, TOPIC, ctx_of, hosted, started
from znodes import paths
from znodes.api import (
    BadVersionError,
    ConnectionLossError,
    Create,
    Delete,
    MultiOpError,
    NodeExistsError,
    NoNodeError,
    SetData,
)
from znodes.batch import FlushError

STATE_0, STATE_1 = paths.partition_state("t", 0), paths.partition_state("t", 1)
OPS = [
    Create(paths.reassignment("t", 0), b"{}"),
    SetData(STATE_0, b"{}", 4),
    SetData(STATE_1, b"{}", 7),
    SetData(STATE_1, b"{}", 8),  # the same znode again in the flush: its first write's version counts
    SetData(paths.topic("t"), b"{}", 2),
    SetData(paths.reassignment("t", 1), b"{}"),  # unconditional
    Delete(paths.reassignment("t", 2)),
]


def failed(index: int, cause, applied: int = 0, in_doubt=()) -> FlushError:
    error = MultiOpError(index, cause, OPS) if index is not None else cause
    return FlushError("flush failed", error, index=index, results=[None] * applied, in_doubt=list(in_doubt),
                      unsent=OPS[applied:])


def test_the_states_a_flush_writes_conditionally_with_the_version_each_first_expects():
    assert written_states(OPS) == {("t", 0): 4, ("t", 1): 7}
    assert written_states([SetData(STATE_0, b"{}")]) == {}  # unconditional: nothing to have met


def test_only_a_conflict_on_a_state_write_with_nothing_applied_is_a_stale_state():
    assert written_states_if_stale(failed(1, BadVersionError("", STATE_0)), OPS) == {("t", 0): 4, ("t", 1): 7}
    assert written_states_if_stale(failed(3, BadVersionError("", STATE_1)), OPS) == {("t", 0): 4, ("t", 1): 7}
    # a later chunk failed: the ops before it landed (recovery's case)
    assert written_states_if_stale(failed(2, BadVersionError("", STATE_1), applied=2), OPS) is None
    # another znode's conflict: a topic znode or a record
    assert written_states_if_stale(failed(4, BadVersionError("", paths.topic("t"))), OPS) is None
    assert written_states_if_stale(failed(0, NodeExistsError("", OPS[0].path)), OPS) is None
    # the state znode gone (a deleted topic), not changed
    assert written_states_if_stale(failed(1, NoNodeError("", STATE_0)), OPS) is None
    # a connection lost mid-write: in doubt
    assert written_states_if_stale(failed(None, ConnectionLossError("lost"), in_doubt=OPS), OPS) is None
    assert written_states_if_stale(failed(99, BadVersionError("", STATE_0)), OPS) is None  # no such op


h = harness_fixture(TOPIC)


async def test_a_cancel_step_that_met_two_newer_states_is_taken_again_once_with_both(h):
    """Both moves' rollbacks in one step, both states rewritten by their leaders just before the
    flush: one re-read of every state the step wrote finds both, and the step lands on the
    second try - each partition with one new leader epoch, nothing reloaded."""
    c = await h.start_controller(101)
    tps = sorted(MOVES)
    await h.submit(MOVES)
    await started(h, tps)
    epochs = {tp: h.json(paths.partition_state(*tp))["leader_epoch"] for tp in tps}
    raced = []

    async def leaders_write_isrs(op):
        if op.path == paths.partition_state(*tps[0]) and not raced:
            for tp in tps:  # same ISRs, new zkVersions, as two ISR changes not notified yet
                data, stat = h.server.read(paths.partition_state(*tp))
                await h.admin.set(paths.partition_state(*tp), data, version=stat.version)
            raced.append(op)

    c.store.before_op = leaders_write_isrs
    results = await cancel_partitions(ctx_of(c), tps)
    assert raced and all(results[tp] == (ErrorCode.NONE, None) for tp in tps)
    assert (c.active.stats.reloads, c.active.stats.state_retries) == (0, 1)
    assert {tp: h.json(paths.partition_state(*tp))["leader_epoch"] for tp in tps} == {tp: e + 1 for tp, e in epochs.items()}
    c.store.before_op = None
    await h.run_until_quiet()
    h.check_invariants(expected={("t", 0): [4, 2, 3], ("t", 1): [5, 3, 4]})
    assert hosted(h, ("t", 0)) == [2, 3, 4]


async def test_a_state_that_changes_before_every_try_falls_back_to_the_reload(h):
    """A state rewritten before each of the first STALE_STATE_RETRIES + 1 writes of it: the step
    is taken again that many times, then the shell reloads (recovery reads it afresh) and the
    cancel still lands."""
    c = await h.start_controller(101)
    await h.submit({("t", 0): MOVES[("t", 0)]})
    await started(h, [("t", 0)])
    raced = []

    async def leader_keeps_writing(op):
        if op.path == STATE_0 and len(raced) <= STALE_STATE_RETRIES:
            data, stat = h.server.read(STATE_0)
            await h.admin.set(STATE_0, data, version=stat.version)
            raced.append(op)

    c.store.before_op = leader_keeps_writing
    results = await cancel_partitions(ctx_of(c), [("t", 0)])
    assert results[("t", 0)] == (ErrorCode.NONE, None)
    assert len(raced) == STALE_STATE_RETRIES + 1
    assert c.active.stats.state_retries == STALE_STATE_RETRIES and c.active.stats.reloads >= 1
    c.store.before_op = None
    await h.run_until_quiet()
    h.check_invariants(expected={("t", 0): [4, 2, 3]})


async def test_the_harness_reports_a_write_failing_after_some_of_its_ops_landed_as_applied(h):
    """The harness lands a controller's multi op by op (to cut it anywhere); a failure after
    some of them landed comes back as a FlushError with those applied, as a later chunk's would,
    never as a multi that applied nothing (which would pass for a stale state to take again)."""
    c = await h.start_controller(101)
    await h.submit({("t", 0): MOVES[("t", 0)]})
    await started(h, [("t", 0)])
    data, stat = h.server.read(STATE_0)
    c.store.before_op = lambda op: _noop()
    ops = [SetData(paths.reassignment("t", 0), h.server.read(paths.reassignment("t", 0))[0]),
           SetData(STATE_0, data, stat.version + 5)]
    with pytest.raises(FlushError) as caught:
        await c.store.fenced_multi(ops, c.active.epoch_zkversion)
    assert caught.value.applied == 1 and caught.value.index == 1
    assert written_states_if_stale(caught.value, ops) is None


async def _noop():
    return None
