"""WorkingSet.states_missing answers what one scan of every move through the overlays answers
("a started move whose partition state is not known"), however the step changed the moves and
the states, and whatever the base state held."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.core.config import ControllerConfig
from controller.core.state import ClusterState
from controller.core.task import Move, Phase
from controller.core.working_set import WorkingSet
from znodes.values import LeaderIsr

PARTITIONS = [("t", p) for p in range(6)]
_move = st.sampled_from(["pending", "started"])


def _made(tp, kind: str) -> Move:
    if kind == "pending":
        return Move(tp, (4, 5, 6))
    return Move.resumed(tp, (4, 5, 6), (1, 2, 3), Phase.REPLICATING)


def _naive(ws: WorkingSet) -> bool:
    return any(move.started and move.tp not in ws.states for move in ws.tasks.values())


_change = st.tuples(
    st.sampled_from(["task", "no-task", "state", "no-state", "ask"]), st.sampled_from(PARTITIONS), _move)


@settings(max_examples=400, deadline=None)
@given(
    tasks=st.dictionaries(st.sampled_from(PARTITIONS), _move),
    states=st.sets(st.sampled_from(PARTITIONS)),
    changes=st.lists(_change, max_size=14),
)
def test_states_missing_is_the_scan_of_every_move(tasks, states, changes):
    base = ClusterState(controller_id=1, epoch=1)
    base.tasks = {tp: _made(tp, kind) for tp, kind in tasks.items()}
    base.states = {tp: LeaderIsr(1, 0, 1, (1, 2, 3), 0) for tp in states}
    ws = WorkingSet.open(base, ControllerConfig())
    assert ws.states_missing() == _naive(ws)
    for what, tp, kind in changes:
        if what == "task":
            ws.tasks[tp] = _made(tp, kind)
        elif what == "no-task":
            ws.tasks.pop(tp)
        elif what == "state":
            ws.states[tp] = LeaderIsr(2, 1, 1, (1, 2), 1)
        elif what == "no-state":
            ws.states.pop(tp)
        assert ws.states_missing() == _naive(ws)


def test_the_base_is_scanned_once_per_step():
    base = ClusterState(controller_id=1, epoch=1)
    base.tasks = {PARTITIONS[0]: _made(PARTITIONS[0], "started")}
    ws = WorkingSet.open(base, ControllerConfig())
    assert ws.states_missing()
    base.tasks.clear()  # (never done to a base during a step: shows the base is not read again)
    ws.states[PARTITIONS[1]] = LeaderIsr(1, 0, 1, (1,), 0)
    assert ws.states_missing()
    ws.states[PARTITIONS[0]] = LeaderIsr(1, 0, 1, (1,), 0)
    assert not ws.states_missing()
