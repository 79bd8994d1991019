"""znodes.payloads.decode_state: its fast path for plain state znodes says exactly what the
model (znodes.models.PartitionState) says - the same state for a valid payload, the same
ZnodeFormatError for a bad one."""

from __future__ import annotations

import pytest

from znodes import models, payloads
from znodes.errors import ZnodeFormatError
from znodes.values import LeaderIsr

PATH = "/brokers/topics/t/partitions/0/state"

PAYLOADS = [
    b'{"controller_epoch":3,"leader":1,"version":1,"leader_epoch":7,"isr":[1,2,3]}',
    b'{"leader":-1,"leader_epoch":0,"controller_epoch":0,"isr":[]}',  # no version: an error
    b'{"leader":-2,"leader_epoch":0,"controller_epoch":1,"isr":[2],"version":1}',
    b'{"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1],"leader_recovery_state":0}',
    b'{"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1],"other":"kept out"}',
    b'{"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1,1]}',  # duplicate broker
    b'{"leader":-3,"leader_epoch":0,"controller_epoch":1,"isr":[1]}',
    b'{"leader":1,"leader_epoch":-1,"controller_epoch":1,"isr":[1]}',
    b'{"leader":1,"leader_epoch":0,"controller_epoch":2147483648,"isr":[1]}',
    b'{"leader":true,"leader_epoch":0,"controller_epoch":1,"isr":[1]}',
    b'{"leader":1.0,"leader_epoch":0,"controller_epoch":1,"isr":[1]}',
    b'{"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1,NaN]}',
    b'{"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":"1"}',
    b'{"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[-1]}',
    b'{"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1],"version":2}',
    b'{"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1],"version":true}',
    b'{"leader":1,"leader_epoch":0,"isr":[1]}',  # no controller epoch
    b'[1,2]',
    b"",
    b"not json",
    b'{"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1]',
    '{"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1]}'.encode("utf-16"),
    b'\xff{"leader":1}',
]


def model_says(data: bytes):
    try:
        m = models.PartitionState.from_bytes(PATH, data)
    except ZnodeFormatError as e:
        return ("error", str(e))
    return ("state", LeaderIsr(m.leader, m.leader_epoch, m.controller_epoch, tuple(m.isr), 5))


def decoder_says(data: bytes):
    try:
        return ("state", payloads.decode_state(PATH, data, 5))
    except ZnodeFormatError as e:
        return ("error", str(e))


@pytest.mark.parametrize("data", PAYLOADS)
def test_decode_state_says_what_the_model_says(data):
    assert decoder_says(data) == model_says(data)


def test_the_fast_path_takes_plain_states_and_leaves_the_rest_to_the_model():
    assert payloads._plain_state(PAYLOADS[0], 5) == LeaderIsr(1, 7, 3, (1, 2, 3), 5)
    for data in PAYLOADS[3:]:
        assert payloads._plain_state(data, 5) is None, data


@pytest.fixture
def no_states_seen(monkeypatch):
    monkeypatch.setattr(payloads, "_STATES", {})
    return payloads._STATES


@pytest.mark.parametrize("data", PAYLOADS)
def test_a_state_seen_before_says_what_the_model_says(no_states_seen, data):
    first, again = decoder_says(data), decoder_says(data)
    assert first == again == model_says(data)


def test_states_seen_are_kept_by_their_bytes_and_only_if_plain(no_states_seen):
    for data in PAYLOADS:
        decoder_says(data)
    assert list(no_states_seen) == [PAYLOADS[0], PAYLOADS[2]]  # the plain states; no error is kept
    # a state seen before, at another zkVersion: the fields from the bytes, the version given
    assert payloads.decode_state(PATH, PAYLOADS[0], 12) == LeaderIsr(1, 7, 3, (1, 2, 3), 12)
    # ... and a zkVersion out of the fast path's range goes the model's way, as when first seen
    assert payloads._plain_state(PAYLOADS[0], -1) is None
    assert payloads.decode_state(PATH, PAYLOADS[0], -1) == LeaderIsr(1, 7, 3, (1, 2, 3), -1)


def test_states_seen_are_bounded(no_states_seen, monkeypatch):
    monkeypatch.setattr(payloads, "_STATES_MAX", 2)
    states = [f'{{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":{e},"isr":[1]}}'.encode() for e in range(4)]
    assert [payloads.decode_state(PATH, s, 0).leader_epoch for s in states] == [0, 1, 2, 3]
    assert list(no_states_seen) == states[:2]
    assert payloads.decode_state(PATH, states[3], 0).leader_epoch == 3  # decoded, not kept
