"""Engine step 12c (controller.core.ended_moves): a move that ends with every ISR member
offline gets an unclean leader where its topic's unclean.leader.election.enable is true - the
config view the shell feeds with TopicConfigsRead - and leader -1 where it is not: the
docstring's second worked table, a rollback (CANCELLING) and a completion (STOPPING), each
with the setting on and off."""

from __future__ import annotations

import json

import pytest

from controller.core.events import BrokersRead, CancelRequested, RequestsRead, StatesRead, StopReplicaSent, TopicConfigsRead
from controller.core.task import Phase
from tests.controller.helpers import cluster, leader_and_isr_sent, req, state
from tests.controller.test_engine import run

U0, U1 = ("u", 0), ("u", 1)


def _written(step) -> dict:
    """State znode writes: partition -> (leader, isr, leader epoch)."""
    out = {}
    for op in step.writes:
        if op.path.endswith("/state"):
            doc = json.loads(op.data)
            out[(op.path.split("/")[3], int(op.path.split("/")[-2]))] = (doc["leader"], doc["isr"], doc["leader_epoch"])
    return out


def _replicating(unclean: bool):
    """u-0 and u-1 moving ORS (1,2,3) -> TRS (4,5,6), started; the topic's setting in the view."""
    s = cluster(topics={"u": {0: (1, 2, 3), 1: (1, 2, 3)}})
    run(s, [TopicConfigsRead({"u": None}, {"u": unclean}),
            RequestsRead(0, (req("u", 0, (4, 5, 6)), req("u", 1, (4, 5, 6))))])
    run(s, StatesRead({U0: state(1, (1, 2, 3), zk_version=0), U1: state(1, (1, 2, 3), zk_version=0)}))
    assert s.tasks[U0].phase is s.tasks[U1].phase is Phase.REPLICATING
    assert (s.unclean.get("u") is True) is unclean
    return s


def _stop(s, *brokers):
    """Brokers stop; the moves' partitions are left to them (broker_failure step 1)."""
    step = run(s, BrokersRead({b: info for b, info in s.brokers.items() if b not in brokers}))
    assert _written(step) == {}


@pytest.mark.parametrize("unclean, expected", [(False, (-1, [1, 2], 5)), (True, (3, [3], 5))])
def test_a_rollback_that_ends_with_no_online_isr_member(unclean, expected):
    s = _replicating(unclean)
    # 3 fell out of the ISR (still live); the cancel keeps leader 1, ISR [1,2] (epoch 2 -> 3)
    run(s, StatesRead({U0: state(1, (1, 2), zk_version=1, leader_epoch=1)}))
    run(s, CancelRequested((U0,), token="tok"))
    assert s.tasks[U0].phase is Phase.CANCELLING and s.states[U0].isr == (1, 2)
    _stop(s, 1, 2)
    # re-read as the shell does before it takes replicas offline: epoch 4 from a leader's write
    run(s, StatesRead({U0: state(1, (1, 2), zk_version=3, leader_epoch=4)}))
    step = run(s, StopReplicaSent((U0,)))
    assert step.cancelled == [U0]
    assert _written(step) == {U0: expected}
    if unclean:
        assert leader_and_isr_sent(step, ("leader", "isr"))[U0] == {3: (3, [3])}
        assert any("unclean leader election of u-0" in line for line in step.log)


@pytest.mark.parametrize("unclean, expected", [(False, (-1, [4, 5], 7)), (True, (6, [6], 7))])
def test_a_completion_that_ends_with_no_online_isr_member(unclean, expected):
    s = _replicating(unclean)
    run(s, StatesRead({U1: state(1, (1, 2, 3, 4, 5, 6), zk_version=1, leader_epoch=1)}))
    assert s.tasks[U1].phase is Phase.STOPPING and s.states[U1].leader == 4  # TRS in the ISR: 4 leads
    # the leader drops 6 from the ISR (epoch 6 as written by it), then 4 and 5 stop
    run(s, StatesRead({U1: state(4, (4, 5), zk_version=3, leader_epoch=6)}))
    _stop(s, 4, 5)
    step = run(s, StopReplicaSent((U1,)))
    assert step.completed == [U1]
    assert _written(step) == {U1: expected}
    if unclean:
        assert leader_and_isr_sent(step, ("leader", "isr"))[U1] == {6: (6, [6])}


def test_the_view_follows_the_setting_read_again():
    s = _replicating(True)
    run(s, TopicConfigsRead({}, {"u": False}))  # a config change notification named u: now off
    assert "u" not in s.unclean
    run(s, StatesRead({U0: state(1, (1, 2), zk_version=1, leader_epoch=1)}))
    run(s, CancelRequested((U0,), token="tok"))
    _stop(s, 1, 2)
    step = run(s, StopReplicaSent((U0,)))
    assert _written(step)[U0][0] == -1
