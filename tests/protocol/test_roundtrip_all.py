"""Every message, every version: encode then decode gives the body back.

For each spec file in protocol/specs (ours, ApiVersions, Metadata and the KIP APIs on keys
10000-10005 alike) and each version in its validVersions, requests and responses, with bodies
drawn by tests/protocol/strategies.py:

- `decode_body(encode_body(body)) == normalise(body)` (tagged fields left out come back as
  their defaults), and `encoded_size` equals the length of the encoding;
- every strict prefix of an encoding is rejected with `protocol.DecodeError`;
- whole frames: `decode_request(encode_request(...))` gives back the header values and the
  body, `decode_response(encode_response(...))` likewise, and the size prefix is exact;
- golden bytes, laid out by hand from Kafka's protocol guide, for the controller-to-broker
  versions reassignd speaks (LeaderAndIsr v4, StopReplica v3, UpdateMetadata v6), which no
  other library here can cross-check.

Sizing: EXAMPLES per (api, version, kind) keeps the ~150 cases of this module under a minute
on one core.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import protocol
from tests.protocol.strategies import (
    body_strategy,
    case_id,
    header_strategy,
    load_specs,
    normalise,
    spec_cases,
)

EXAMPLES = 12

CASES = spec_cases()
IDS = [case_id(c) for c in CASES]


def _header_get(header, name):
    return header[name] if isinstance(header, dict) else getattr(header, name)


def test_every_spec_is_covered():
    covered = {(key, kind) for key, _, kind in CASES}
    assert covered == set(load_specs())
    # The codec serves exactly the APIs the spec files define.
    supported = protocol.supported_apis()
    for key, version, kind in CASES:
        assert key in supported


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_body_roundtrip(case):
    key, version, kind = case
    spec = load_specs()[(key, kind)]

    @settings(max_examples=EXAMPLES)
    @given(body_strategy(spec, version), st.data())
    def check(body, data):
        encoded = bytes(protocol.encode_body(key, version, kind, body))
        assert protocol.encoded_size(key, version, kind, body) == len(encoded)
        assert protocol.decode_body(key, version, kind, encoded) == normalise(spec, version, body)
        if encoded:
            cut = data.draw(st.integers(0, len(encoded) - 1), label="cut")
            with pytest.raises(protocol.DecodeError):
                protocol.decode_body(key, version, kind, encoded[:cut])

    check()


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_frame_roundtrip(case):
    key, version, kind = case
    spec = load_specs()[(key, kind)]

    @settings(max_examples=EXAMPLES)
    @given(body_strategy(spec, version), header_strategy())
    def check(body, header_values):
        correlation_id, client_id = header_values
        expected = normalise(spec, version, body)
        if kind == "request":
            frame = bytes(protocol.encode_request(key, version, correlation_id, client_id, body))
            header, decoded = protocol.decode_request(frame)
            assert _header_get(header, "request_api_key") == key
            assert _header_get(header, "request_api_version") == version
            assert _header_get(header, "correlation_id") == correlation_id
            # Header v0 (ControlledShutdown v0 alone) carries no client id: Kafka's default "".
            carried = client_id if protocol.request_header_version(key, version) >= 1 else ""
            assert _header_get(header, "client_id") == carried
        else:
            frame = bytes(protocol.encode_response(key, version, correlation_id, body))
            header, decoded = protocol.decode_response(key, version, frame)
            assert _header_get(header, "correlation_id") == correlation_id
        (size,) = struct.unpack_from(">i", frame)
        assert size == len(frame) - 4
        assert decoded == expected

    check()


# --------------------------------------------------------------------------- golden bytes
#
# kafka-python has no classes for the controller-to-broker APIs, so the versions reassignd's
# controller speaks (LeaderAndIsr v4, StopReplica v3, UpdateMetadata v6, all flexible) are
# pinned here against bytes laid out by hand from Kafka's protocol guide: compact strings and
# arrays carry length+1 as an unsigned varint, every struct ends with its tagged-field count.


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _i8(n):
    return struct.pack(">b", n)


def _i16(n):
    return struct.pack(">h", n)


def _i32(n):
    return struct.pack(">i", n)


def _i64(n):
    return struct.pack(">q", n)


def _cstr(s: str | None) -> bytes:
    if s is None:
        return _uvarint(0)
    raw = s.encode()
    return _uvarint(len(raw) + 1) + raw


def _carr(items: list[bytes]) -> bytes:
    return _uvarint(len(items) + 1) + b"".join(items)


def _cints(ns: list[int]) -> bytes:
    return _carr([_i32(n) for n in ns])


NO_TAGS = _uvarint(0)

LEADER_AND_ISR_V4 = {
    "controller_id": 101,
    "controller_epoch": 7,
    "broker_epoch": 4294967296 + 5,
    "topic_states": [{
        "topic_name": "orders",
        "partition_states": [{
            "partition_index": 3, "controller_epoch": 7, "leader": 4, "leader_epoch": 12,
            "isr": [4, 1], "zk_version": 33, "replicas": [4, 5, 6, 1, 2],
            "adding_replicas": [5, 6], "removing_replicas": [2], "is_new": False,
        }],
    }],
    "live_leaders": [{"broker_id": 4, "host_name": "b4.example", "port": 9092}],
}
LEADER_AND_ISR_V4_BYTES = (
    _i32(101) + _i32(7) + _i64(4294967296 + 5)
    + _carr([
        _cstr("orders")
        + _carr([
            _i32(3) + _i32(7) + _i32(4) + _i32(12) + _cints([4, 1]) + _i32(33)
            + _cints([4, 5, 6, 1, 2]) + _cints([5, 6]) + _cints([2]) + _i8(0) + NO_TAGS
        ])
        + NO_TAGS
    ])
    + _carr([_i32(4) + _cstr("b4.example") + _i32(9092) + NO_TAGS])
    + NO_TAGS
)

STOP_REPLICA_V3 = {
    "controller_id": 101,
    "controller_epoch": 7,
    "broker_epoch": 9,
    "topic_states": [{
        "topic_name": "orders",
        "partition_states": [
            {"partition_index": 3, "leader_epoch": 12, "delete_partition": True},
            {"partition_index": 4, "leader_epoch": -2, "delete_partition": False},
        ],
    }],
}
STOP_REPLICA_V3_BYTES = (
    _i32(101) + _i32(7) + _i64(9)
    + _carr([
        _cstr("orders")
        + _carr([
            _i32(3) + _i32(12) + _i8(1) + NO_TAGS,
            _i32(4) + _i32(-2) + _i8(0) + NO_TAGS,
        ])
        + NO_TAGS
    ])
    + NO_TAGS
)

UPDATE_METADATA_V6 = {
    "controller_id": 101,
    "controller_epoch": 7,
    "broker_epoch": -1,
    "topic_states": [{
        "topic_name": "t",
        "partition_states": [{
            "partition_index": 0, "controller_epoch": 7, "leader": -1, "leader_epoch": 2,
            "isr": [], "zk_version": 5, "replicas": [1, 2], "offline_replicas": [1, 2],
        }],
    }],
    "live_brokers": [
        {"id": 1, "endpoints": [{"port": 9092, "host": "h1", "listener": "PLAINTEXT",
                                 "security_protocol": 0}], "rack": "r1"},
        {"id": 2, "endpoints": [], "rack": None},
    ],
}
UPDATE_METADATA_V6_BYTES = (
    _i32(101) + _i32(7) + _i64(-1)
    + _carr([
        _cstr("t")
        + _carr([
            _i32(0) + _i32(7) + _i32(-1) + _i32(2) + _cints([]) + _i32(5) + _cints([1, 2])
            + _cints([1, 2]) + NO_TAGS
        ])
        + NO_TAGS
    ])
    + _carr([
        _i32(1) + _carr([_i32(9092) + _cstr("h1") + _cstr("PLAINTEXT") + _i16(0) + NO_TAGS])
        + _cstr("r1") + NO_TAGS,
        _i32(2) + _carr([]) + _cstr(None) + NO_TAGS,
    ])
    + NO_TAGS
)

PARTITION_ERRORS = {
    "error_code": 0,
    "partition_errors": [
        {"topic_name": "orders", "partition_index": 3, "error_code": 0},
        {"topic_name": "orders", "partition_index": 4, "error_code": 6},
    ],
}
PARTITION_ERRORS_BYTES = (
    _i16(0)
    + _carr([
        _cstr("orders") + _i32(3) + _i16(0) + NO_TAGS,
        _cstr("orders") + _i32(4) + _i16(6) + NO_TAGS,
    ])
    + NO_TAGS
)

GOLDEN = {
    "LeaderAndIsrRequest-v4": (4, 4, "request", LEADER_AND_ISR_V4, LEADER_AND_ISR_V4_BYTES),
    "LeaderAndIsrResponse-v4": (4, 4, "response", PARTITION_ERRORS, PARTITION_ERRORS_BYTES),
    "StopReplicaRequest-v3": (5, 3, "request", STOP_REPLICA_V3, STOP_REPLICA_V3_BYTES),
    "StopReplicaResponse-v3": (5, 3, "response", PARTITION_ERRORS, PARTITION_ERRORS_BYTES),
    "UpdateMetadataRequest-v6": (6, 6, "request", UPDATE_METADATA_V6, UPDATE_METADATA_V6_BYTES),
    "UpdateMetadataResponse-v6": (6, 6, "response", {"error_code": 0}, _i16(0) + NO_TAGS),
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_controller_to_broker_golden_bytes(name):
    key, version, kind, body, expected = GOLDEN[name]
    spec = load_specs()[(key, kind)]
    assert bytes(protocol.encode_body(key, version, kind, body)) == expected
    assert protocol.decode_body(key, version, kind, expected) == normalise(spec, version, body)


def test_controller_to_broker_golden_frame():
    # Request header v2 for a flexible version: api_key, api_version, correlation_id, a
    # non-compact nullable client_id, then the header's own tagged fields.
    frame = bytes(protocol.encode_request(4, 4, 42, "controller-101", LEADER_AND_ISR_V4))
    raw_client_id = "controller-101".encode()
    header = _i16(4) + _i16(4) + _i32(42) + _i16(len(raw_client_id)) + raw_client_id + NO_TAGS
    payload = header + LEADER_AND_ISR_V4_BYTES
    assert frame == _i32(len(payload)) + payload

    # Response header v1 for a flexible version: correlation_id, then tagged fields.
    reply = bytes(protocol.encode_response(4, 4, 42, PARTITION_ERRORS))
    payload = _i32(42) + NO_TAGS + PARTITION_ERRORS_BYTES
    assert reply == _i32(len(payload)) + payload
