"""A leader's ISR change asked of the controller (AlterPartition, API 56, KIP-497): the engine's
part (controller.core.alter_partition), its worked table and every rule of its docstring."""

from __future__ import annotations

import json

import pytest

from controller.core import engine
from controller.core.config import ControllerConfig
from controller.core.events import IsrAlterRequested, IsrProposal, StatesRead
from controller.core.state import ClusterState
from controller.core.task import Move, Phase
from protocol import ApiKey
from protocol.errors import ErrorCode
from znodes import paths
from znodes.values import Assignment, Broker, LeaderIsr

TOKEN = object()
EPOCHS = {1: 100, 2: 200, 3: 300}
TP = ("t", 0)
MOVING = ("m", 0)


def _state(live=(1, 2, 3)) -> ClusterState:
    """The docstring's worked table: t-0 (RS 1,2,3) led by 1 at leader epoch 4, ISR [1,2],
    zkVersion 7; broker 3 shutting down; m-0 (RS 2,1,3) moving to 1,2 with ISR [2]."""
    s = ClusterState(controller_id=101, epoch=9, brokers={b: Broker(b, "h", 9000 + b, epoch=EPOCHS[b]) for b in live})
    s.assignments[TP] = Assignment((1, 2, 3))
    s.states[TP] = LeaderIsr(1, 4, 8, (1, 2), 7)
    s.assignments[MOVING] = Assignment((2, 1, 3), adding=(), removing=(3,))
    s.states[MOVING] = LeaderIsr(2, 6, 8, (2,), 20)
    s.tasks[MOVING] = Move(MOVING, (2, 1), Phase.REPLICATING, original=(2, 1, 3))
    s.topic_partitions["t"], s.topic_versions["t"] = (0,), 0
    s.topic_partitions["m"], s.topic_versions["m"] = (0,), 0
    s.shutting_down[3] = EPOCHS[3]
    return s


def _ask(s, *proposals, broker=1, epoch=100, version=2, states=None):
    st = engine.step(s, IsrAlterRequested(broker, epoch, tuple(proposals), states or {}, version, TOKEN),
                     ControllerConfig())
    [(token, result)] = st.elections
    assert token is TOKEN
    return st, result


def _p(isr, le=4, pe=7, tp=TP, **kw) -> IsrProposal:
    return IsrProposal(tp, le, tuple(isr), pe, **kw)


def _state_writes(st) -> list:
    return [(w.path, json.loads(w.data), w.version) for w in st.writes if w.path.endswith("/state")]


@pytest.mark.parametrize("isr, le, pe, version, code", [
    ((1, 2, 3), 4, 7, 2, ErrorCode.INELIGIBLE_REPLICA),  # 3h: 3 is shutting down
    ((1, 2, 3), 4, 7, 1, ErrorCode.OPERATION_NOT_ATTEMPTED),  # 3h before KIP-841's code
    ((1,), 4, 6, 2, ErrorCode.INVALID_UPDATE_VERSION),  # 3d
    ((1,), 3, 7, 2, ErrorCode.FENCED_LEADER_EPOCH),  # 3b
    ((1,), 5, 7, 2, ErrorCode.NOT_CONTROLLER),  # 3a: a newer leader epoch than this controller's
    ((1,), 4, 8, 2, ErrorCode.NOT_CONTROLLER),  # 3a: a newer zkVersion
    ((2,), 4, 7, 2, ErrorCode.INVALID_REQUEST),  # 3g: without the leader
    ((1, 4), 4, 7, 2, ErrorCode.INVALID_REQUEST),  # 3g: outside RS
    ((1, 1), 4, 7, 2, ErrorCode.INVALID_REQUEST),  # 3g: a member twice
])
def test_the_worked_table_refusals_write_nothing(isr, le, pe, version, code):
    st, (top, results) = _ask(_state(), _p(isr, le, pe), version=version)
    assert top is ErrorCode.NONE
    assert results == {TP: (code, None)}
    assert st.writes == [] and st.commands == []


def test_the_worked_table_a_shrink_is_written_fenced_and_told_to_every_broker():
    st, (top, results) = _ask(_state(), _p((1,)))
    new = LeaderIsr(1, 4, 9, (1,), 8)
    assert (top, results) == (ErrorCode.NONE, {TP: (ErrorCode.NONE, new)})
    [(path, data, version)] = _state_writes(st)
    assert path == "/brokers/topics/t/partitions/0/state" and version == 7  # conditional on pe
    assert (data["leader"], data["leader_epoch"], data["controller_epoch"], data["isr"]) == (1, 4, 9, [1])
    assert st.kinds == [frozenset({"isr-change"})]
    assert st.delta.states[TP] == new
    told = {c.broker_id for c in st.commands if c.api_key == ApiKey.UPDATE_METADATA}
    assert told == {1, 2, 3}
    assert not [c for c in st.commands if c.api_key == ApiKey.LEADER_AND_ISR]  # the answer is the leader's


def test_the_worked_table_a_retry_of_what_is_held_is_answered_without_a_write():
    st, (_, results) = _ask(_state(), _p((1, 2)))
    assert results == {TP: (ErrorCode.NONE, LeaderIsr(1, 4, 8, (1, 2), 7))}
    assert st.writes == []


def test_the_state_read_for_the_request_counts_when_newer_than_the_held_one():
    read = LeaderIsr(1, 4, 8, (1,), 8)  # a shrink the controller has not heard of
    st, (_, results) = _ask(_state(), _p((1, 2), pe=8), states={TP: read})
    assert results[TP][0] is ErrorCode.NONE
    [(_, data, version)] = _state_writes(st)
    assert version == 8 and data["isr"] == [1, 2]


def test_a_stale_or_unknown_broker_is_refused_whole():
    for broker, epoch in ((1, 99), (1, -1), (4, 400)):
        st, (top, results) = _ask(_state(), _p((1,)), broker=broker, epoch=epoch)
        assert (top, results) == (ErrorCode.STALE_BROKER_EPOCH, {})
        assert st.writes == []


def test_a_follower_or_a_recovering_leader_is_refused():
    _, (_, results) = _ask(_state(), _p((2, 1)), broker=2, epoch=200)
    assert results[TP] == (ErrorCode.NOT_LEADER_OR_FOLLOWER, None)  # 3f
    _, (_, results) = _ask(_state(), _p((1,), recovery_state=1))
    assert results[TP] == (ErrorCode.INVALID_REQUEST, None)  # 3e


def test_unknown_and_repeated_partitions():
    st, (_, results) = _ask(_state(), _p((1,), tp=("t", 5)), _p((1,)), _p((1, 2)))
    assert results == {("t", 5): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None), TP: (ErrorCode.INVALID_REQUEST, None)}
    assert st.writes == []


def test_version_3_member_epochs_must_be_the_registrations():
    s = _state()
    del s.shutting_down[3]
    s.states[TP] = LeaderIsr(1, 4, 8, (1,), 7)
    _, (_, results) = _ask(s, _p((1, 2), member_epochs=(100, 199)), version=3)
    assert results[TP] == (ErrorCode.INELIGIBLE_REPLICA, None)
    _, (_, results) = _ask(s, _p((1, 2, 3), member_epochs=(100, -1, 300)), version=3)
    assert results[TP][0] is ErrorCode.NONE


def test_a_member_down_or_on_an_offline_log_dir_is_ineligible():
    s = _state(live=(1, 2))
    del s.shutting_down[3]
    _, (_, results) = _ask(s, _p((1, 2, 3)))
    assert results[TP] == (ErrorCode.INELIGIBLE_REPLICA, None)
    s = _state()
    s.states[TP] = LeaderIsr(1, 4, 8, (1,), 7)
    s.offline_replicas[2] = frozenset({TP})  # broker 2's copy is on a failed directory (KIP-113)
    _, (_, results) = _ask(s, _p((1, 2)))
    assert results[TP] == (ErrorCode.INELIGIBLE_REPLICA, None)


def test_the_worked_table_a_moves_target_in_sync_completes_it_in_the_same_step():
    st, (_, results) = _ask(_state(), _p((2, 1), le=6, pe=20, tp=MOVING), broker=2, epoch=200)
    assert results[MOVING] == (ErrorCode.NONE, LeaderIsr(2, 6, 9, (2, 1), 21))
    writes = _state_writes(st)
    assert [(d["isr"], d["leader_epoch"], v) for _, d, v in writes] == [([2, 1], 6, 20), ([2, 1], 7, 21)]
    assert st.delta.tasks[MOVING].phase is Phase.STOPPING  # step 5: RR (3) is stopped next
    stops = {c.broker_id for c in st.commands if c.api_key == ApiKey.STOP_REPLICA}
    assert stops == {3}


def test_a_move_not_yet_in_sync_only_writes_the_isr():
    s = _state()
    s.tasks[MOVING] = Move(MOVING, (2, 1), Phase.REPLICATING, original=(2, 1, 3))
    s.states[MOVING] = LeaderIsr(2, 6, 8, (2, 3), 20)
    st, (_, results) = _ask(s, _p((2,), le=6, pe=20, tp=MOVING), broker=2, epoch=200)
    assert results[MOVING][0] is ErrorCode.NONE
    assert len(_state_writes(st)) == 1 and MOVING not in st.delta.tasks


def test_deferred_while_a_failover_has_resumed_moves_without_states_then_taken():
    s = _state()
    s.states.pop(MOVING)
    s.tasks[MOVING] = Move(MOVING, (2, 1), Phase.REPLICATING, original=(2, 1, 3), resend=True)
    event = IsrAlterRequested(1, 100, (_p((1,)),), {}, 2, TOKEN)
    st = engine.step(s, event, ControllerConfig())
    assert st.elections == [] and st.writes == []
    assert st.delta.deferred == (event,)
    s.apply(st.delta)
    st = engine.step(s, StatesRead({MOVING: LeaderIsr(2, 6, 8, (2,), 20)}), ControllerConfig())
    [(token, (top, results))] = st.elections
    assert token is TOKEN and results[TP][0] is ErrorCode.NONE


async def test_a_request_queued_or_held_back_at_resignation_is_answered_not_controller_at_once():
    """A resigning controller fails an AlterPartition it had queued or held back for a
    failover's states (controller.shell.active.fail_waiting): the leader hears NOT_CONTROLLER and
    asks the next controller, instead of waiting out the handler's MAX_WAIT_S."""
    import asyncio

    from controller.shell.active import NotTheController, fail_waiting

    loop = asyncio.get_running_loop()
    queued, held = loop.create_future(), loop.create_future()
    assert fail_waiting([IsrAlterRequested(1, 100, (_p((1,)),), {}, 2, queued)]) == []
    assert fail_waiting((IsrAlterRequested(1, 100, (), {}, 2, held),)) == []
    assert isinstance(queued.exception(), NotTheController) and isinstance(held.exception(), NotTheController)


# ---- the deterministic harness: simulated leaders that send AlterPartition -------------------

async def _harness_run(crash_after: int | None) -> tuple[object, bool]:
    from tests.controller.harness import Harness

    h = Harness(topics=("t:4:3:64KiB",), isr_via="alter_partition")
    await h.start()
    try:
        first = await h.start_controller(101)
        await h.settle()
        before = h.current()
        targets = {tp: [b for b in (4, 5, 6, 1, 2, 3) if b not in r][:3] for tp, r in before.items()}
        first.store.remaining = crash_after
        await h.submit(targets)
        await h.settle()
        while h.busy() and first.alive:
            await h.tick()
        if first.store.crashed:
            await h.start_controller(102)
        await h.run_until_quiet()
        h.check_invariants(expected=targets)
        return h, first.store.crashed
    finally:
        await h.close()


async def test_moves_complete_when_leaders_only_send_alter_partition():
    """Every replica a move adds enters the ISR through the controller's AlterPartition handler
    (the brokers write no state znode, post no notification): the moves complete, every
    invariant of the harness holds."""
    h, _ = await _harness_run(None)
    grown = [(b, a) for b, a in h.isr_requests
             if a["error_code"] == ErrorCode.NONE and any(p["error_code"] == ErrorCode.NONE
                                                          for t in a["topics"] for p in t["partitions"])]
    assert grown, h.isr_requests
    notes = paths.ISR_CHANGE_NOTIFICATION
    assert h.server.exists(notes) is None or h.server.children(notes) == []


@pytest.mark.parametrize("crash_after", [2, 5, 9, 14])
async def test_moves_complete_across_a_controller_crash_with_alter_partition(crash_after):
    _, crashed = await _harness_run(crash_after)
    assert crashed


def test_a_topic_being_deleted_is_answered_as_gone_and_nothing_is_written():
    from controller.core.topic_deletion import TopicDeletion

    s = _state()
    s.deleting["t"] = TopicDeletion(started=True)
    st, (_, results) = _ask(s, _p((1,)))
    assert results == {TP: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)}
    assert st.writes == []
