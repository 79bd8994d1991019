"""Tagged fields: known ones written only when not default, unknown ones kept and written back."""

import struct

import pytest

import protocol
from protocol import ApiKey, DecodeError, EncodeError
from protocol.primitives import UNKNOWN_TAGS_KEY



def body_bytes(version, body):
    return protocol.encode_body(ApiKey.API_VERSIONS, version, "response", body)


def test_defaults_are_not_written():
    data = body_bytes(3, {"error_code": 0, "api_keys": [], "throttle_time_ms": 0})
    # error code, empty compact array, throttle time, EMPTY tag section
    assert data == b"\x00\x00" + b"\x01" + b"\x00\x00\x00\x00" + b"\x00"
    body = protocol.decode_body(ApiKey.API_VERSIONS, 3, "response", data)
    assert body["finalized_features_epoch"] == -1 and body["supported_features"] == [] and body["zk_migration_ready"] is False


def test_known_tags_are_written_in_tag_order():
    body = {
        "api_keys": [{"api_key": 3, "min_version": 0, "max_version": 12}],
        "zk_migration_ready": True,  # tag 3
        "finalized_features_epoch": 5,  # tag 1
        "supported_features": [{"name": "mv", "min_version": 1, "max_version": 2}],  # tag 0
    }
    data = body_bytes(3, body)
    tags = data[2 + 1 + 7 + 4:]  # after error code, api_keys (count + one entry), throttle_time_ms
    feature = b"\x02" + b"\x03mv" + b"\x00\x01\x00\x02" + b"\x00"  # compact array of one struct
    assert tags == (b"\x03"
                    + b"\x00" + bytes([len(feature)]) + feature
                    + b"\x01\x08" + struct.pack(">q", 5)
                    + b"\x03\x01\x01")
    decoded = protocol.decode_body(ApiKey.API_VERSIONS, 3, "response", data)
    assert decoded["zk_migration_ready"] is True and decoded["finalized_features_epoch"] == 5
    assert decoded["supported_features"] == [{"name": "mv", "min_version": 1, "max_version": 2}]


def test_unknown_tags_are_kept_and_written_back():
    base = body_bytes(3, {"error_code": 0})
    # Replace the empty tag section with two tags this spec does not know (4 and 9) and tag 1.
    section = b"\x03" + b"\x01\x08" + struct.pack(">q", 7) + b"\x04\x02hi" + b"\x09\x00"
    data = base[:-1] + section
    body = protocol.decode_body(ApiKey.API_VERSIONS, 3, "response", data)
    assert body["finalized_features_epoch"] == 7
    assert body[UNKNOWN_TAGS_KEY] == {4: b"hi", 9: b""}
    assert body_bytes(3, body) == data


def test_unknown_tags_in_nested_structs_and_headers():
    frame = protocol.encode_response(3, 12, 1, {"brokers": [{"node_id": 1, "host": "h", "port": 1}]})
    header, body = protocol.decode_response(3, 12, frame)
    body["brokers"][0][UNKNOWN_TAGS_KEY] = {100: b"\x01\x02"}
    again = protocol.encode_response(3, 12, 1, body)
    assert len(again) == len(frame) + 4  # count 1 instead of 0, then tag, size, 2 bytes
    assert protocol.decode_response(3, 12, again)[1]["brokers"][0][UNKNOWN_TAGS_KEY] == {100: b"\x01\x02"}
    # A request header v2 with a tag is read, the tag kept.
    req = bytearray(protocol.encode_request(3, 12, 1, "c", {}))
    tag_at = 4 + 2 + 2 + 4 + 2 + 1
    req[tag_at:tag_at + 1] = b"\x01\x05\x01\xaa"
    req[0:4] = struct.pack(">i", len(req) - 4)
    header, _ = protocol.decode_request(bytes(req))
    assert header[UNKNOWN_TAGS_KEY] == {5: b"\xaa"}


def test_bad_tag_sections_are_decode_errors():
    base = body_bytes(3, {})[:-1]
    cases = {
        "count larger than the bytes": b"\x7f\x00\x00",
        "size larger than the bytes": b"\x01\x04\x10ab",
        "duplicate tag": b"\x02\x04\x00\x04\x00",
        "known tag with bytes left over": b"\x01\x03\x02\x01\x00",  # bool tag 3 given 2 bytes
        "known tag too short": b"\x01\x01\x02\x00\x00",  # int64 tag 1 given 2 bytes
        "truncated": b"\x01",
    }
    for what, section in cases.items():
        with pytest.raises(DecodeError):
            protocol.decode_body(ApiKey.API_VERSIONS, 3, "response", base + section)


def test_unknown_tag_values_are_checked_on_encode():
    with pytest.raises(EncodeError):
        body_bytes(3, {UNKNOWN_TAGS_KEY: {1: b"\x00"}})  # 1 is a known tag here
    with pytest.raises(EncodeError):
        body_bytes(3, {UNKNOWN_TAGS_KEY: {-1: b""}})
    with pytest.raises(EncodeError):
        body_bytes(3, {UNKNOWN_TAGS_KEY: {8: "text"}})


def test_tags_do_not_exist_in_old_versions():
    # v2 is not flexible: tagged fields are simply absent (they are ignorable).
    assert body_bytes(2, {"finalized_features_epoch": 9, "zk_migration_ready": True}) == body_bytes(2, {})
