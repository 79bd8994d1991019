"""protocol's header writers frame an already encoded body exactly as encode_request and
encode_response frame a dict (header v1/v2 for requests, v0/v1 for responses, v0 always for
ApiVersions responses)."""

import pytest

import protocol
from protocol import ApiKey, EncodeError

CASES = [
    (ApiKey.API_VERSIONS, 0, {}, {"error_code": 0, "api_keys": []}),  # request v1, response v0
    (ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"},
     {"error_code": 0, "api_keys": [], "throttle_time_ms": 0}),  # request v2, response still v0
    (ApiKey.METADATA, 12, {"topics": None, "allow_auto_topic_creation": False},
     {"brokers": [], "controller_id": 1, "topics": []}),  # flexible both ways
    (ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, {"timeout_ms": 5, "topics": None},
     {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "topics": []}),
]


@pytest.mark.parametrize(("key", "version", "request_body", "response_body"), CASES)
@pytest.mark.parametrize("client_id", [None, "", "reassignd-ü"])
def test_frames_around_encoded_bodies_are_the_encoders_frames(key, version, request_body, response_body, client_id):
    encoded = protocol.encode_body(key, version, "request", request_body)
    assert protocol.request_frame(key, version, 42, client_id, encoded) == protocol.encode_request(
        key, version, 42, client_id, request_body)
    encoded = protocol.encode_body(key, version, "response", response_body)
    assert protocol.response_frame(key, version, 42, encoded) == protocol.encode_response(key, version, 42, response_body)


def test_header_versions():
    assert protocol.encode_request_header(ApiKey.API_VERSIONS, 0, 1, None) == b"\x00\x12\x00\x00\x00\x00\x00\x01\xff\xff"
    assert protocol.encode_request_header(ApiKey.API_VERSIONS, 3, 1, None).endswith(b"\xff\xff\x00")  # tagged fields
    assert protocol.encode_response_header(ApiKey.API_VERSIONS, 3, 1) == b"\x00\x00\x00\x01"
    assert protocol.encode_response_header(ApiKey.METADATA, 12, 1) == b"\x00\x00\x00\x01\x00"
    assert protocol.size_prefixed(b"token") == b"\x00\x00\x00\x05token"


def test_unknown_api_is_an_encode_error():
    with pytest.raises(EncodeError):
        protocol.encode_request_header(9999, 0, 1, None)
    with pytest.raises(EncodeError):
        protocol.response_frame(ApiKey.METADATA, 99, 1, b"")
