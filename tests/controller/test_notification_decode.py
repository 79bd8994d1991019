"""znodes.payloads.decode_notification: its fast path for plain ISR change notifications says
exactly what the model (znodes.models.IsrChangeNotification) says - the same partitions and
states for a valid payload, the same ZnodeFormatError for a bad one."""

from __future__ import annotations

import json

import pytest

from znodes import models, payloads
from znodes.errors import ZnodeFormatError
from znodes.values import LeaderIsr

PATH = "/isr_change_notification/isr_change_0000000001"
STATE = {"leader": 1, "leader_epoch": 7, "controller_epoch": 3, "isr": [1, 2, 3], "zk_version": 9}


def doc(*entries, **top) -> bytes:
    return json.dumps({"version": 1, "partitions": list(entries), **top}).encode()


def entry(topic="t", partition=0, **extra) -> dict:
    return {"topic": topic, "partition": partition, **extra}


PAYLOADS = [
    doc(entry(), entry("u", 3)),  # Kafka's own entries: no state
    doc(entry(state=STATE), entry("u", 1, state={**STATE, "leader": -1, "isr": []})),
    doc(entry(state=None)),
    doc(entry(extra="ignored"), other="ignored too"),
    json.dumps({"partitions": [entry()]}).encode(),  # no version: an error
    doc(),  # no partitions: an empty notification
    doc(entry(state={**STATE, "leader": -2})),
    doc(entry(state={**STATE, "leader": -3})),
    doc(entry(state={**STATE, "extra": 1})),  # a state's keys are exactly NotifiedState's
    doc(entry(state={k: v for k, v in STATE.items() if k != "zk_version"})),
    doc(entry(state={**STATE, "isr": [1, 1]})),
    doc(entry(state={**STATE, "isr": [-1]})),
    doc(entry(state={**STATE, "isr": "1"})),
    doc(entry(state={**STATE, "leader_epoch": -1})),
    doc(entry(state={**STATE, "zk_version": 2**31})),
    doc(entry(state={**STATE, "leader": True})),
    doc(entry(state=[1])),
    doc(entry(partition=-1)),
    doc(entry(partition=2**31)),
    doc(entry(partition=True)),
    doc(entry(partition="0")),
    doc(entry(topic="")),
    doc(entry(topic="bad/name")),
    doc(entry(topic=7)),
    doc({"partition": 0}),
    doc([1]),
    json.dumps({"version": 2, "partitions": [entry()]}).encode(),
    json.dumps({"version": True, "partitions": [entry()]}).encode(),
    json.dumps({"version": 1, "partitions": {"t": 0}}).encode(),
    b'{"version":1,"partitions":[{"topic":"t","partition":1.0}]}',
    b'{"version":1,"partitions":[{"topic":"t","partition":0,"state":{"leader":1,"leader_epoch":0,'
    b'"controller_epoch":1,"isr":[NaN],"zk_version":0}}]}',
    b"[1,2]",
    b"",
    b"not json",
    b'{"version":1,"partitions":[',
    doc(entry()).decode().encode("utf-16"),
    b"\xff" + doc(entry()),
]


def model_says(data: bytes):
    try:
        m = models.IsrChangeNotification.from_bytes(PATH, data)
    except ZnodeFormatError as e:
        return ("error", str(e))
    return ("ok", [((p.topic, p.partition), None if p.state is None else LeaderIsr(
        p.state.leader, p.state.leader_epoch, p.state.controller_epoch, tuple(p.state.isr), p.state.zk_version))
        for p in m.partitions])


def decoder_says(data: bytes):
    try:
        return ("ok", payloads.decode_notification(PATH, data))
    except ZnodeFormatError as e:
        return ("error", str(e))


@pytest.mark.parametrize("data", PAYLOADS)
def test_decode_notification_says_what_the_model_says(data):
    assert decoder_says(data) == model_says(data)


def test_the_fast_path_takes_plain_notifications_and_leaves_the_rest_to_the_model():
    assert payloads._plain_notification(PAYLOADS[1]) == [
        (("t", 0), LeaderIsr(1, 7, 3, (1, 2, 3), 9)), (("u", 1), LeaderIsr(-1, 7, 3, (), 9))]
    assert payloads._plain_notification(PAYLOADS[0]) == [(("t", 0), None), (("u", 3), None)]
    for data in PAYLOADS[7:]:
        assert payloads._plain_notification(data) is None, data
