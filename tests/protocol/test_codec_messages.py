"""Whole messages: snake_case keys, defaults, version rules, headers, frames, the public API."""

import struct
import uuid

import pytest

import protocol
from protocol import DecodeError, EncodeError, UnsupportedVersionError
from protocol.naming import snake_case


def test_snake_case_names():
    cases = {
        "ThrottleTimeMs": "throttle_time_ms",
        "IsInternal": "is_internal",
        "ZkVersion": "zk_version",
        "TopicId": "topic_id",
        "ISR": "isr",
        "ISRNodes": "isr_nodes",
        "BrokerIDs": "broker_ids",
        "IsrNodes": "isr_nodes",
        "LeaderAndIsrPartitionState": "leader_and_isr_partition_state",
        "Int32Value": "int32_value",
        "V2": "v2",
    }
    assert {k: snake_case(k) for k in cases} == cases


def test_metadata_keys_are_snake_case():
    body = protocol.decode_body(3, 12, "response", protocol.encode_body(3, 12, "response", {}))
    assert set(body) == {
        "throttle_time_ms", "brokers", "cluster_id", "controller_id", "topics", "cluster_authorized_operations",
        "error_code",  # v13+ only; a decoded body holds every field of the spec
    }


def test_missing_keys_take_spec_defaults_on_encode():
    data = protocol.encode_body(3, 12, "response", {"topics": [{"name": "t", "partitions": [{}]}]})
    body = protocol.decode_body(3, 12, "response", data)
    assert body["controller_id"] == -1  # "default": "-1"
    assert body["cluster_id"] is None  # "default": "null"
    assert body["brokers"] == []
    topic = body["topics"][0]
    assert topic["topic_id"] == uuid.UUID(int=0) and topic["is_internal"] is False
    assert topic["topic_authorized_operations"] == -2147483648
    assert topic["partitions"] == [{
        "error_code": 0, "partition_index": 0, "leader_id": 0, "leader_epoch": -1,
        "replica_nodes": [], "isr_nodes": [], "offline_replicas": [],
    }]
    # Request default: AllowAutoTopicCreation is true unless said otherwise.
    req = protocol.decode_body(3, 4, "request", protocol.encode_body(3, 4, "request", {"topics": []}))
    assert req["allow_auto_topic_creation"] is True


def test_fields_a_version_lacks_decode_as_defaults():
    v0 = protocol.encode_body(3, 0, "response", {
        "brokers": [{"node_id": 1, "host": "h", "port": 9092}],
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "leader_id": 1, "replica_nodes": [1], "isr_nodes": [1]}]}],
    })
    body = protocol.decode_body(3, 0, "response", v0)
    assert body["throttle_time_ms"] == 0 and body["controller_id"] == -1 and body["cluster_id"] is None
    assert body["brokers"][0]["rack"] is None
    assert body["topics"][0]["partitions"][0]["leader_epoch"] == -1
    assert body["topics"][0]["partitions"][0]["offline_replicas"] == []
    # ... so the decoded body re-encodes to the same bytes.
    assert protocol.encode_body(3, 0, "response", body) == v0


def test_ignorable_fields_are_dropped_silently_in_versions_without_them():
    a = protocol.encode_body(3, 0, "response", {"throttle_time_ms": 500, "controller_id": 4, "brokers": [{"rack": "r1"}]})
    b = protocol.encode_body(3, 0, "response", {"brokers": [{}]})
    assert a == b


def test_non_ignorable_non_default_field_in_a_version_without_it_is_refused():
    # AllowAutoTopicCreation: versions 4+, not ignorable, default true.
    with pytest.raises(EncodeError, match="allow_auto_topic_creation does not exist in this version"):
        protocol.encode_body(3, 3, "request", {"topics": [], "allow_auto_topic_creation": False})
    # At its default it is fine.
    protocol.encode_body(3, 3, "request", {"topics": [], "allow_auto_topic_creation": True})
    # IncludeClusterAuthorizedOperations exists in 8-10 only.
    with pytest.raises(EncodeError, match="include_cluster_authorized_operations"):
        protocol.encode_body(3, 11, "request", {"include_cluster_authorized_operations": True})
    assert not issubclass(EncodeError, DecodeError)


def test_nullable_versions_are_respected():
    with pytest.raises(EncodeError, match="topics: null is not allowed"):
        protocol.encode_body(3, 0, "request", {"topics": None})
    assert protocol.decode_body(3, 1, "request", protocol.encode_body(3, 1, "request", {"topics": None}))["topics"] is None
    with pytest.raises(EncodeError, match=r"topics\[0\].name: null"):
        protocol.encode_body(3, 9, "request", {"topics": [{"name": None}]})
    body = protocol.decode_body(3, 10, "request", protocol.encode_body(3, 10, "request", {"topics": [{"name": None}]}))
    assert body["topics"][0]["name"] is None


def test_encode_errors_name_the_path():
    body = {"topics": [{"name": "t", "partitions": [{"leader_id": 2**40}]}]}
    with pytest.raises(EncodeError, match=r"MetadataResponse v12: topics\[0\].partitions\[0\].leader_id: 1099511627776 is out of range for int32"):
        protocol.encode_body(3, 12, "response", body)
    with pytest.raises(EncodeError, match="body: expected a dict"):
        protocol.encode_body(3, 12, "response", [1, 2])
    with pytest.raises(EncodeError, match=r"replica_nodes: expected a list"):
        protocol.encode_body(3, 1, "response", {"topics": [{"partitions": [{"replica_nodes": "123"}]}]})
    with pytest.raises(EncodeError, match="no request spec for api key 4242"):
        protocol.encode_body(4242, 0, "request", {})
    with pytest.raises(EncodeError, match="has no version 99"):
        protocol.encode_request(3, 99, 1, "c", {})


# -- headers ------------------------------------------------------------------------------------


def test_request_header_versions_bytes():
    from protocol.registry import REGISTRY
    from protocol.messages import run_encode

    def header(version, client_id):
        out = []
        run_encode(REGISTRY.header_codec("RequestHeader", version), {
            "request_api_key": 3, "request_api_version": 12, "correlation_id": 9, "client_id": client_id,
        }, out.append)
        return b"".join(out)

    start = struct.pack(">hhi", 3, 12, 9)
    assert header(0, "ignored") == start  # v0 has no client id
    assert header(1, "ab") == start + b"\x00\x02ab"
    assert header(1, None) == start + b"\xff\xff"
    # v2 keeps the int16 (non-compact) client id and adds an empty tagged-field section.
    assert header(2, "ab") == start + b"\x00\x02ab\x00"
    assert header(2, None) == start + b"\xff\xff\x00"


def test_request_header_version_follows_flexibility():
    assert protocol.request_header_version(3, 8) == 1
    assert protocol.request_header_version(3, 9) == 2
    old = protocol.encode_request(3, 8, 5, "cid", {"topics": None})
    new = protocol.encode_request(3, 9, 5, "cid", {"topics": None})
    assert old[4:17] == struct.pack(">hhih", 3, 8, 5, 3) + b"cid"
    assert new[4:18] == struct.pack(">hhih", 3, 9, 5, 3) + b"cid" + b"\x00"
    header, body = protocol.decode_request(new)
    assert header == {"request_api_key": 3, "request_api_version": 9, "correlation_id": 5, "client_id": "cid"}
    assert body["topics"] is None
    assert protocol.decode_request(protocol.encode_request(18, 3, 1, None, {}))[0]["client_id"] is None


def test_response_header_versions():
    assert protocol.response_header_version(3, 8) == 0
    assert protocol.response_header_version(3, 9) == 1
    v0 = protocol.encode_response(3, 8, 77, {})
    v1 = protocol.encode_response(3, 9, 77, {})
    assert v0[4:8] == struct.pack(">i", 77) and v0[8:12] == b"\x00\x00\x00\x00"  # then throttle_time_ms
    assert v1[4:9] == struct.pack(">i", 77) + b"\x00"
    assert protocol.decode_response(3, 9, v1)[0] == {"correlation_id": 77}


def test_api_versions_response_always_uses_header_v0():
    for version in range(0, 5):
        assert protocol.response_header_version(18, version) == 0
    frame = protocol.encode_response(18, 3, 12, {"error_code": 35, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 3}]})
    # correlation id, then straight into the body (error code): no tagged-field byte in between.
    assert frame[4:10] == struct.pack(">ih", 12, 35)
    header, body = protocol.decode_response(18, 3, frame)
    assert header == {"correlation_id": 12} and body["error_code"] == 35


def test_unsupported_version_carries_what_a_server_needs():
    frame = protocol.encode_request(3, 12, 31, "client-x", {})
    bad_version = frame[:6] + struct.pack(">h", 99) + frame[8:]
    with pytest.raises(UnsupportedVersionError) as e:
        protocol.decode_request(bad_version)
    assert (e.value.api_key, e.value.api_version, e.value.correlation_id, e.value.client_id) == (3, 99, 31, "client-x")
    assert isinstance(e.value, DecodeError)
    bad_key = frame[:4] + struct.pack(">h", 7777) + frame[6:]
    with pytest.raises(UnsupportedVersionError, match="unknown api key 7777") as e:
        protocol.decode_request(bad_key)
    assert e.value.correlation_id == 31
    with pytest.raises(UnsupportedVersionError):
        protocol.decode_response(7777, 0, struct.pack(">ii", 4, 1))


def test_frames_must_match_their_size_prefix():
    frame = protocol.encode_request(18, 0, 1, "c", {})
    with pytest.raises(DecodeError, match="size prefix"):
        protocol.decode_request(frame + b"\x00")
    with pytest.raises(DecodeError, match="size prefix"):
        protocol.decode_request(frame[:-1])
    with pytest.raises(DecodeError, match="no size prefix"):
        protocol.decode_request(b"\x00\x00")
    with pytest.raises(DecodeError, match="too short"):
        protocol.decode_request(struct.pack(">ih", 2, 3))
    assert protocol.decode_request(bytearray(frame)) == protocol.decode_request(memoryview(frame))


def test_body_level_api():
    body = {"topics": [{"name": "a"}], "allow_auto_topic_creation": False}
    data = protocol.encode_body(3, 4, "request", body)
    assert protocol.encoded_size(3, 4, "request", body) == len(data)
    assert protocol.decode_body(3, 4, "request", data)["topics"] == [{"name": "a", "topic_id": uuid.UUID(int=0)}]
    with pytest.raises(DecodeError, match="left over"):
        protocol.decode_body(3, 4, "request", data + b"\x00")
    with pytest.raises(ValueError):
        protocol.decode_body(3, 4, "sideways", data)


def test_supported_apis_and_names():
    apis = protocol.supported_apis()
    assert apis[3] == (0, 13) and apis[18] == (0, 4)
    for key in range(10000, 10006):
        assert apis[key] == (0, 1)
    assert protocol.api_name(3) == "Metadata" and protocol.api_name(10005) == "CancelReassignments"
    assert protocol.API_KEYS["ReassignPartitions"] == 10000 and protocol.API_KEYS["ApiVersions"] == 18
    with pytest.raises(KeyError):
        protocol.api_name(4242)


def test_every_spec_version_roundtrips_its_defaults():
    """Each (api, version, kind) in the specs compiles, encodes {} and decodes it back."""
    from protocol.registry import REGISTRY

    count = 0
    for table, kind in ((REGISTRY.requests, "request"), (REGISTRY.responses, "response")):
        for key, spec in table.items():
            for version in range(spec.valid.lo, spec.valid.hi + 1):
                data = protocol.encode_body(key, version, kind, {})
                body = protocol.decode_body(key, version, kind, data)
                assert protocol.encode_body(key, version, kind, body) == data
                count += 1
    assert count > 100


# librdkafka 2.16's all-topics Metadata v12 request, as captured from confluent-kafka 2.16.1's
# AdminClient.list_topics(): after the null topic list (0x00) come the three other bytes of the
# 4-byte slot it reserves for the count, so Kafka reads allow_auto_topic_creation and
# include_topic_authorized_operations from them (both false) and never reads the last three.
LIBRDKAFKA_ALL_TOPICS = bytes.fromhex("000000190003000c00000003000772646b61666b610000000000010000")


def test_bytes_after_a_request_body_are_ignored_and_counted_as_kafka_ignores_them():
    header, body, left_over = protocol.parse_request(LIBRDKAFKA_ALL_TOPICS)
    assert header == {"request_api_key": 3, "request_api_version": 12, "correlation_id": 3, "client_id": "rdkafka"}
    assert body["topics"] is None and body["allow_auto_topic_creation"] is False
    assert body["include_topic_authorized_operations"] is False
    assert left_over == 3
    assert protocol.decode_request(LIBRDKAFKA_ALL_TOPICS) == (header, body)
    # Any request, old-style or flexible: what follows the body is not read.
    for key, version, req in ((18, 0, {}), (18, 3, {"client_software_name": "a", "client_software_version": "1"}),
                              (3, 1, {"topics": None})):
        frame = protocol.encode_request(key, version, 9, "c", req)
        padded = struct.pack(">i", len(frame) - 4 + 5) + frame[4:] + b"\xff\x00\x01\x02\x03"
        assert protocol.parse_request(padded) == (*protocol.decode_request(frame), 5)
        assert protocol.parse_request(frame)[2] == 0


def test_leniency_stops_at_the_body_lengths_and_the_prefix_are_still_checked():
    frame = protocol.encode_request(3, 12, 1, "c", {"topics": [{"name": "orders"}]})
    # A length inside the body that runs past the frame is still an error, whatever follows.
    bad = bytearray(frame)
    name_at = frame.index(b"orders") - 1
    bad[name_at] = 0x7F
    with pytest.raises(DecodeError):
        protocol.decode_request(bytes(bad))
    with pytest.raises(DecodeError, match="size prefix"):
        protocol.decode_request(frame + b"\x00")  # not covered by the size prefix


def test_responses_and_bodies_alone_stay_exact():
    reply = protocol.encode_response(3, 12, 7, {"brokers": [], "controller_id": 1, "topics": []})
    padded = struct.pack(">i", len(reply) - 4 + 1) + reply[4:] + b"\x00"
    with pytest.raises(DecodeError, match="1 bytes left over"):
        protocol.decode_response(3, 12, padded)
