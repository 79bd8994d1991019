"""znodes.payloads.decode_topic, decode_record_full and decode_requests: their fast paths for
plain topic znodes, KIP-240 records and /admin/reassign_partitions entries (a failover reads
every one) say exactly what the models say - the same values for a valid payload, the same
ZnodeFormatError (or, for an entry, the same reason it is dropped) for a bad one."""

from __future__ import annotations

import json

import pytest

from znodes import models, payloads
from znodes.errors import ZnodeFormatError
from znodes.values import Assignment, Request

TOPIC = "/brokers/topics/t"
RECORD = "/admin/reassignments/t/0"

TOPICS = [
    b'{"version":2,"partitions":{"0":[1,2,3],"1":[2,3,1],"2":[1,2,3]},"adding_replicas":{},"removing_replicas":{}}',
    b'{"version":1,"partitions":{"0":[1,2]}}',
    b'{"version":2,"partitions":{"1":[4,5,6,1,2,3],"0":[1,2,3]},"adding_replicas":{"1":[4,5,6]},'
    b'"removing_replicas":{"1":[1,2,3]}}',
    b'{"version":2,"partitions":{"0":[1,2]},"adding_replicas":{"0":[]},"removing_replicas":{}}',  # empty: no entry
    b'{"version":2,"partitions":{}}',
    b'{"version":3,"partitions":{"0":[1]},"topic_id":"AAAAAAAAAAAAAAAAAAAAAA","adding_replicas":{},'
    b'"removing_replicas":{}}',
    b'{"version":2,"partitions":{"0":[1]},"other":"ignored"}',
    b'{"partitions":{"0":[1,2]}}',  # no version
    b'{"version":4,"partitions":{"0":[1,2]}}',
    b'{"version":true,"partitions":{"0":[1,2]}}',
    b'{"version":2,"partitions":{"0":[1,1]}}',  # a broker twice
    b'{"version":2,"partitions":{"0":[]}}',  # no replica
    b'{"version":2,"partitions":{"0":[true,2]}}',
    b'{"version":2,"partitions":{"0":[1.0,2]},"adding_replicas":{},"removing_replicas":{}}',
    b'{"version":2,"partitions":{"0":[1,2]},"adding_replicas":{},"removing_replicas":{},"x":[1.5]}',
    b'{"version":2,"partitions":{"0":[1,NaN]}}',
    b'{"version":2,"partitions":{"0":[-1,2]}}',
    b'{"version":2,"partitions":{"0":[2147483648]}}',
    b'{"version":2,"partitions":{"0":["1"]}}',
    b'{"version":2,"partitions":{"0":[[1],2]}}',  # unhashable in the replica-list cache
    b'{"version":2,"partitions":{"0":[1,2],"1":[[1],2]}}',
    b'{"version":2,"partitions":{"0":null}}',
    b'{"version":2,"partitions":{"01":[1,2]}}',  # not a canonical partition key
    b'{"version":2,"partitions":{"-1":[1,2]}}',
    b'{"version":2,"partitions":{"2147483648":[1,2]}}',
    b'{"version":2,"partitions":{"\xd9\xa1":[1,2]}}',  # an Arabic-Indic digit
    b'{"version":2,"partitions":[[1,2]]}',
    b'{"version":2,"partitions":{"0":[1,2]},"adding_replicas":null}',
    b'{"version":2,"partitions":{"0":[1,2]},"adding_replicas":{"1":[2]}}',  # no such partition
    b'{"version":2,"partitions":{"0":[1,2]},"adding_replicas":{"0":[3]}}',  # not a replica
    b'{"version":2,"partitions":{"0":[1,2]},"adding_replicas":{"0":[2]},"removing_replicas":{"0":[2]}}',
    b'{"version":2,"partitions":{"0":[1,2]},"removing_replicas":{"0":[1,1]}}',
    b'{"version":2,"partitions":{"0":[1,2]},"removing_replicas":{"x":[1]}}',
    b'{"version":2,"partitions":{"0":[1,2]},"removing_replicas":{"0":[true]}}',
    b'{"version":2,"partitions":{"0":[1,2]}',
    b"[1,2]",
    b"",
    b"not json",
    '{"version":2,"partitions":{"0":[1,2]}}'.encode("utf-16"),
    b'\xff{"version":2}',
]

RECORDS = [
    b'{"version":1,"replicas":[4,5,6],"original_replicas":[1,2,3]}',
    b'{"version":1,"replicas":[4,5,6],"original_replicas":[1,2,3],"cancelling":true}',
    b'{"version":1,"replicas":[4,5,6],"original_replicas":[1,2,3],"cancelling":false,"next_replicas":[7]}',
    b'{"version":1,"replicas":[4,5,6],"original_replicas":[1,2,3],"next_replicas":null}',
    b'{"version":1,"replicas":[4,5,6],"original_replicas":[1,2,3],"extra":1}',
    b'{"replicas":[4,5,6],"original_replicas":[1,2,3]}',  # no version
    b'{"version":2,"replicas":[4,5,6],"original_replicas":[1,2,3]}',
    b'{"version":1,"replicas":[],"original_replicas":[1,2,3]}',
    b'{"version":1,"replicas":[4,4],"original_replicas":[1,2,3]}',
    b'{"version":1,"replicas":[4,5,6]}',
    b'{"version":1,"replicas":[4,5.0],"original_replicas":[1]}',
    b'{"version":1,"replicas":[4,true],"original_replicas":[1]}',
    b'{"version":1,"replicas":[4],"original_replicas":[1],"cancelling":1}',
    b'{"version":1,"replicas":[4],"original_replicas":[1],"cancelling":"true"}',
    b'{"version":1,"replicas":[4],"original_replicas":[1],"next_replicas":[]}',
    b'{"version":1,"replicas":[4],"original_replicas":[-1]}',
    b"[1]",
    b"",
    b'{"version":1,"replicas":[4]',
]

# Records as the controller writes them: with the move's door (controller.shell.journal).
DOOR_RECORDS = [
    b'{"version":1,"replicas":[4,5,6],"original_replicas":[1,2,3],"door":"AlterPartitionReassignments"}',
    b'{"version":1,"replicas":[4,5,6],"original_replicas":[1,2,3],"cancelling":true,"door":"queue"}',
    b'{"version":1,"replicas":[4],"original_replicas":[1],"next_replicas":[7],"door":"znode"}',
    b'{"version":1,"replicas":[4],"original_replicas":[1],"door":7}',  # the door is not checked
    b'{"version":1,"replicas":[4,4],"original_replicas":[1],"door":"znode"}',
]


def topic_model_says(data: bytes):
    try:
        m = models.TopicAssignment.from_bytes(TOPIC, data)
    except ZnodeFormatError as e:
        return ("error", str(e))
    return ("topic", {
        p: Assignment(tuple(r), tuple(m.adding_replicas.get(p, ())), tuple(m.removing_replicas.get(p, ())))
        for p, r in sorted(m.partitions.items())
    })


def topic_decoder_says(data: bytes):
    try:
        found = payloads.decode_topic(TOPIC, data)
    except ZnodeFormatError as e:
        return ("error", str(e))
    return ("topic", found)


def record_model_says(data: bytes):
    try:
        m = payloads._Record.from_bytes(RECORD, data)
    except ZnodeFormatError as e:
        return ("error", str(e))
    queued = tuple(m.next_replicas) if m.next_replicas is not None else None
    return ("record", (tuple(m.replicas), tuple(m.original_replicas), m.cancelling, queued))


def record_decoder_says(data: bytes):
    try:
        return ("record", payloads.decode_record_full(RECORD, data))
    except ZnodeFormatError as e:
        return ("error", str(e))


@pytest.mark.parametrize("data", TOPICS)
def test_decode_topic_says_what_the_model_says(data):
    said = topic_decoder_says(data)
    assert said == topic_model_says(data)
    if said[0] == "topic":  # the order of partitions too (the state keeps it)
        assert list(said[1]) == sorted(said[1])


@pytest.mark.parametrize("data", RECORDS + DOOR_RECORDS)
def test_decode_record_says_what_the_model_says(data):
    assert record_decoder_says(data) == record_model_says(data)


def test_the_fast_paths_take_the_plain_shapes_and_leave_the_rest_to_the_models():
    assert payloads._plain_topic(TOPICS[2]) == {
        0: Assignment((1, 2, 3)), 1: Assignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3))}
    for data in TOPICS[:5]:
        assert payloads._plain_topic(data) is not None, data
    for data in TOPICS[5:]:
        assert payloads._plain_topic(data) is None, data
    assert payloads._plain_record(RECORDS[2]) == ((4, 5, 6), (1, 2, 3), False, (7,))
    for data in RECORDS[:5]:
        if b"extra" not in data:
            assert payloads._plain_record(data) is not None, data
    for data in RECORDS[4:]:
        assert payloads._plain_record(data) is None, data
    # A record with its door (every record the controller writes) is plain too.
    for data in DOOR_RECORDS[:4]:
        assert payloads._plain_record(data) is not None, data
    assert payloads._plain_record(DOOR_RECORDS[4]) is None


def test_a_malformed_topic_znode_still_gets_the_models_clear_error():
    with pytest.raises(ZnodeFormatError) as e:
        payloads.decode_topic(TOPIC, b'{"version":2,"partitions":{"0":[1,1]}}')
    assert str(e.value) == f"malformed znode {TOPIC}: partitions.0: 1 is listed twice"
    with pytest.raises(ZnodeFormatError) as e:
        payloads.decode_record_full(RECORD, b'{"version":1,"replicas":[4,4],"original_replicas":[1]}')
    assert "replicas: 4 is listed twice" in str(e.value)


REQUESTS = "/admin/reassign_partitions"
ENTRIES = [
    {"topic": "t", "partition": 0, "replicas": [1, 2, 3]},
    {"topic": "t.x_y-1", "partition": 2147483647, "replicas": [4], "original_replicas": [1, 2]},
    {"topic": "t", "partition": 1, "replicas": [4], "original_replicas": None},
    {"topic": "t", "partition": 2, "replicas": [4, 5], "log_dirs": ["any", "/d"]},
    {"topic": "t", "partition": 3, "replicas": [4, 5], "log_dirs": ["any"]},
    {"topic": "t", "partition": 4, "replicas": [4], "skip_isr_check": True},
    {"topic": "t", "partition": 5, "replicas": [4], "movement_strategies": ["smallest_first"]},
    {"topic": "t", "partition": 6, "replicas": [4], "other": 1},
    {"topic": "a b", "partition": 0, "replicas": [1]},
    {"topic": "", "partition": 0, "replicas": [1]},
    {"topic": ".", "partition": 0, "replicas": [1]},
    {"topic": "x" * 250, "partition": 0, "replicas": [1]},
    {"topic": 7, "partition": 0, "replicas": [1]},
    {"topic": "t", "partition": True, "replicas": [1]},
    {"topic": "t", "partition": -1, "replicas": [1]},
    {"topic": "t", "partition": 2147483648, "replicas": [1]},
    {"topic": "t", "partition": "0", "replicas": [1]},
    {"topic": "t", "partition": 0.0, "replicas": [1]},
    {"topic": "t", "partition": 7, "replicas": []},
    {"topic": "t", "partition": 8, "replicas": [1, 1]},
    {"topic": "t", "partition": 9, "replicas": [1.0]},
    {"topic": "t", "partition": 10, "replicas": [True]},
    {"topic": "t", "partition": 11, "replicas": "1"},
    {"topic": "t", "partition": 12},
    {"partition": 13, "replicas": [1]},
    {"topic": "t", "partition": 14, "replicas": [1], "original_replicas": []},
    {"topic": "t", "partition": 15, "replicas": [1], "original_replicas": [2, 2]},
    {"topic": "t", "partition": 16, "replicas": [-1]},
    [1, 2],
    None,
]


def test_decode_requests_says_what_the_model_says_entry_by_entry(monkeypatch):
    data = json.dumps({"version": 1, "partitions": ENTRIES}).encode()
    fast = payloads.decode_requests(REQUESTS, data)
    monkeypatch.setattr(payloads, "_plain_entry", lambda raw: None)  # every entry through the model
    assert fast == payloads.decode_requests(REQUESTS, data)
    good, bad = fast
    assert len(good) == 7 and len(bad) == len(ENTRIES) - 7  # a bad entry dropped with its reason


def test_the_entry_fast_path_takes_the_plain_shape_only():
    assert payloads._plain_entry(ENTRIES[1]) == Request("t.x_y-1", 2147483647, (4,), (1, 2))
    for raw in ENTRIES[:3]:
        assert payloads._plain_entry(raw) is not None, raw
    for raw in ENTRIES[3:]:
        assert payloads._plain_entry(raw) is None, raw
