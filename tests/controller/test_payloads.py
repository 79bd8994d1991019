"""The hot encoders of znodes.payloads write exactly what the znode models write."""

from __future__ import annotations

import pytest

from znodes import models
from znodes.payloads import _Record, decode_record_full, decode_state, encode_record, encode_state
from znodes.values import LeaderIsr


@pytest.mark.parametrize(
    "state",
    [
        LeaderIsr(1, 0, 1, (1, 2, 3), 0),
        LeaderIsr(-1, 7, 12, (), 3),
        LeaderIsr(1004, 2**31 - 1, 2**31 - 1, (1004,), 9),
    ],
)
def test_encode_state_is_the_models_bytes(state):
    expected = models.PartitionState(
        version=1, leader=state.leader, leader_epoch=state.leader_epoch,
        controller_epoch=state.controller_epoch, isr=list(state.isr),
    ).to_bytes()
    assert encode_state(state) == expected
    assert decode_state("/s", encode_state(state), state.zk_version) == state


@pytest.mark.parametrize("queued", [None, (4, 5, 6)])
@pytest.mark.parametrize("cancelling", [False, True])
@pytest.mark.parametrize("target, original", [((4, 5, 6), (1, 2, 3)), ((7,), (1, 2)), ((10, 2), (2, 10, 3))])
def test_encode_record_is_the_models_bytes(target, original, cancelling, queued):
    expected = _Record(version=1, replicas=list(target), original_replicas=list(original), cancelling=cancelling,
                       next_replicas=None if queued is None else list(queued)).to_bytes()
    assert encode_record(target, original, cancelling, queued) == expected
    assert decode_record_full("/r", encode_record(target, original, cancelling, queued)) == (
        target, original, cancelling, queued)
