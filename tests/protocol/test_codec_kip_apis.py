"""The KIP private APIs (keys 10000-10005): v0 bytes exactly as the KIP schemas lay them out.

Each expected encoding is written out from the KIP text's schema with struct.pack, field by
field, independently of the spec files; v1 must carry the same fields, flexibly, plus the
tagged fields noted (DescribeReassignmentsResponse's Topic and PartitionId).
"""

import struct

import pytest

import protocol
from protocol.registry import REGISTRY


def i8(v):
    return struct.pack(">b", v)


def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


def i64(v):
    return struct.pack(">q", v)


def s(v):
    if v is None:
        return i16(-1)
    b = v.encode()
    return i16(len(b)) + b


def arr(items, each):
    return i32(len(items)) + b"".join(each(x) for x in items)


def boolean(v):
    return b"\x01" if v else b"\x00"


CASES = {
    # KIP-179: ReassignPartitionsRequest => [topic_reassignments] timeout validate_only throttle remove_throttle
    (10000, "request"): (
        {"topic_reassignments": [{"topic": "t", "partition_reassignments": [{"partition_id": 0, "broker": [4, 5, 6]}]}],
         "timeout": 30000, "validate_only": False, "throttle": 10_000_000, "remove_throttle": True},
        arr([0], lambda _: s("t") + arr([0], lambda _: i32(0) + arr([4, 5, 6], i32)))
        + i32(30000) + boolean(False) + i64(10_000_000) + boolean(True),
    ),
    # ReassignPartitionsResponse => throttle_time_ms [reassign_partition_result]
    (10000, "response"): (
        {"throttle_time_ms": 0, "reassign_partition_result": [{"topic": "t", "partition_error": [
            {"partition_id": 0, "error_code": 0, "error_message": None},
            {"partition_id": 1, "error_code": 60, "error_message": "busy"}]}]},
        i32(0) + arr([0], lambda _: s("t") + i32(2) + i32(0) + i16(0) + s(None) + i32(1) + i16(60) + s("busy")),
    ),
    # AlterInterbrokerThrottledRatesRequest => [broker_throttles] remove_throttle timeout validate_only
    (10001, "request"): (
        {"broker_throttles": [{"broker_id": 1, "leader_rate": 100, "follower_rate": 200}],
         "remove_throttle": True, "timeout": 5000, "validate_only": True},
        arr([0], lambda _: i32(1) + i64(100) + i64(200)) + boolean(True) + i32(5000) + boolean(True),
    ),
    # AlterInterbrokerThrottledRatesResponse => [broker_error]
    (10001, "response"): (
        {"broker_error": [{"broker_id": 1, "error_code": 1001, "error_message": "throttle must be > 0"}]},
        arr([0], lambda _: i32(1) + i16(1001) + s("throttle must be > 0")),
    ),
    # AlterInterbrokerThrottledReplicasRequest => [topic_throttles] remove_throttle timeout validate_only
    (10002, "request"): (
        {"topic_throttles": [{"topic": "t", "partition_throttles": [{"partition_id": 2, "broker_id": [1, 2]}]}],
         "remove_throttle": False, "timeout": 1, "validate_only": False},
        arr([0], lambda _: s("t") + arr([0], lambda _: i32(2) + arr([1, 2], i32))) + boolean(False) + i32(1) + boolean(False),
    ),
    # AlterInterbrokerThrottledReplicasResponse => [topic_errors]
    (10002, "response"): (
        {"topic_errors": [{"topic": "t", "partition_errors": [{"partition_id": 2, "error_code": 3, "error_message": None}]}]},
        arr([0], lambda _: s("t") + arr([0], lambda _: i32(2) + i16(3) + s(None))),
    ),
    # KIP-240: ListReassignmentsRequest => timeout_ms [topic_partition]
    (10003, "request"): (
        {"timeout_ms": 100, "topic_partition": [{"topic": "t", "partition_id": [0, 1]}]},
        i32(100) + arr([0], lambda _: s("t") + arr([0, 1], i32)),
    ),
    # ListReassignmentsResponse => throttle_time_ms error_code error_message [reassignment]
    (10003, "response"): (
        {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
         "reassignment": [{"topic": "t", "topic_reassignments": [{"partition_id": 0, "reassignment_id": 2**40 + 5}]}]},
        i32(0) + i16(0) + s(None) + arr([0], lambda _: s("t") + arr([0], lambda _: i32(0) + i64(2**40 + 5))),
    ),
    # DescribeReassignmentsRequest => [topic_reassignment] timeout_ms; reassignment is ONE struct
    (10004, "request"): (
        {"topic_reassignment": [{"topic": "t", "reassignment": {"partition_id": 3, "reassignment_id": 77}}], "timeout_ms": 9},
        arr([0], lambda _: s("t") + i32(3) + i64(77)) + i32(9),
    ),
    # DescribeReassignmentsResponse => throttle_time_ms error_code error_message [description]
    (10004, "response"): (
        {"throttle_time_ms": 0, "error_code": 41, "error_message": "not the controller", "description": [
            {"reassignment_id": 77, "start_time": 1_700_000_000_000, "leader_id": 1, "leader_throttle": 2**63 - 1,
             "new_assigned": [{"broker_id": 4, "follower_throttle": 1000}]}]},
        i32(0) + i16(41) + s("not the controller")
        + arr([0], lambda _: i64(77) + i64(1_700_000_000_000) + i32(1) + i64(2**63 - 1) + arr([0], lambda _: i32(4) + i64(1000))),
    ),
    # CancelReassignments (designed here): [partitions]? validate_only timeout_ms
    (10005, "request"): (
        {"partitions": [{"topic": "t", "partition_ids": [0]}], "validate_only": True, "timeout_ms": 60000},
        arr([0], lambda _: s("t") + arr([0], i32)) + boolean(True) + i32(60000),
    ),
    (10005, "response"): (
        {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "results": [
            {"topic": "t", "partitions": [{"partition_id": 0, "error_code": 0, "error_message": None}]}]},
        i32(0) + i16(0) + s(None) + arr([0], lambda _: s("t") + arr([0], lambda _: i32(0) + i16(0) + s(None))),
    ),
}


# A decoded body holds every field of the spec: the v1 tags come back at their defaults when a
# version lacks them or they were not sent - DescribeReassignmentsResponse's Topic and PartitionId,
# ReassignPartitionsRequest's SkipIsrCheck and ListReassignmentsResponse's Waiting (reassignd's
# ISR-aware execution).
DESCRIPTION_TAG_DEFAULTS = {"topic": "", "partition_id": -1}
TOP_TAG_DEFAULTS = {(10000, "request"): {"skip_isr_check": False, "movement_strategies": []}, (10003, "response"): {"waiting": []}}


def decoded_form(key, kind, body):
    body = {**TOP_TAG_DEFAULTS.get((key, kind), {}), **body}
    if (key, kind) != (10004, "response"):
        return body
    return {**body, "description": [{**DESCRIPTION_TAG_DEFAULTS, **d} for d in body["description"]]}


@pytest.mark.parametrize("key,kind", sorted(CASES))
def test_v0_is_the_kip_schema(key, kind):
    body, expected = CASES[(key, kind)]
    assert protocol.encode_body(key, 0, kind, body) == expected
    assert protocol.decode_body(key, 0, kind, expected) == decoded_form(key, kind, body)


@pytest.mark.parametrize("key,kind", sorted(CASES))
def test_v1_is_the_same_fields_flexible(key, kind):
    body, _ = CASES[(key, kind)]
    spec = REGISTRY.spec(key, kind)
    assert spec.valid.lo == 0 and spec.valid.hi == 1
    assert not spec.is_flexible(0) and spec.is_flexible(1)

    def fields(st, version):
        return [(f.key, f.type, version in f.nullable, fields(f.struct, version) if f.struct else None)
                for f in st.fields if version in f.versions and version not in f.tagged]

    assert fields(spec.struct, 0) == fields(spec.struct, 1)
    v1 = protocol.encode_body(key, 1, kind, body)
    assert protocol.decode_body(key, 1, kind, v1) == decoded_form(key, kind, body)
    assert v1 != protocol.encode_body(key, 0, kind, body)


def test_null_partitions_mean_all():
    for key, field in ((10003, "topic_partition"), (10005, "partitions")):
        for version in (0, 1):
            data = protocol.encode_body(key, version, "request", {})
            assert protocol.decode_body(key, version, "request", data)[field] is None
    assert protocol.encode_body(10005, 0, "request", {"partitions": None})[:4] == i32(-1)


def test_frames_of_the_private_apis():
    frame = protocol.encode_request(10000, 1, 99, "kafka-reassign", CASES[(10000, "request")][0])
    header, body = protocol.decode_request(frame)
    assert header["request_api_key"] == 10000 and header["correlation_id"] == 99
    assert body == decoded_form(10000, "request", CASES[(10000, "request")][0])
    reply = protocol.encode_response(10005, 1, 99, CASES[(10005, "response")][0])
    assert protocol.decode_response(10005, 1, reply) == ({"correlation_id": 99}, CASES[(10005, "response")][0])


def uvarint(v):
    out = b""
    while v >= 0x80:
        out += bytes([(v & 0x7F) | 0x80])
        v >>= 7
    return out + bytes([v])


def test_describe_response_v1_tags_name_the_partition():
    """Moves started together share a reassignment id, so v1 descriptions carry their topic
    (tag 0) and partition (tag 1); v0 drops them and keeps the KIP's bytes."""
    plain = {"reassignment_id": 77, "start_time": 5, "leader_id": 1, "leader_throttle": 2**63 - 1, "new_assigned": []}
    body = {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "description": [
        {**plain, "topic": "t", "partition_id": 0},  # partition 0 is sent too: the default is -1
        {**plain, "topic": "t", "partition_id": 7},
        plain,  # no tags: decoded at their defaults
    ]}
    one = i64(77) + i64(5) + i32(1) + i64(2**63 - 1) + uvarint(1)  # new_assigned: empty compact array
    tags = [
        uvarint(2) + uvarint(0) + uvarint(2) + uvarint(2) + b"t" + uvarint(1) + uvarint(4) + i32(0),
        uvarint(2) + uvarint(0) + uvarint(2) + uvarint(2) + b"t" + uvarint(1) + uvarint(4) + i32(7),
        uvarint(0),
    ]
    expected = i32(0) + i16(0) + uvarint(0) + uvarint(4) + b"".join(one + t for t in tags) + uvarint(0)
    v1 = protocol.encode_body(10004, 1, "response", body)
    assert v1 == expected
    assert protocol.decode_body(10004, 1, "response", v1) == decoded_form(10004, "response", body)
    v0 = protocol.encode_body(10004, 0, "response", body)
    assert v0 == i32(0) + i16(0) + s(None) + arr([0, 1, 2], lambda _: i64(77) + i64(5) + i32(1) + i64(2**63 - 1) + i32(0))
    assert [(d["topic"], d["partition_id"]) for d in protocol.decode_body(10004, 0, "response", v0)["description"]] == [
        ("", -1)] * 3
