"""protocol.response_correlation_id: a response's correlation id without decoding its body, the
same as decode_response's header in every response header version."""

import pytest

import protocol
from protocol import ApiKey, DecodeError


@pytest.mark.parametrize("api_key,version,body", [
    (ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
                                              "topics": []}),  # flexible: header v1, tagged fields after the id
    (ApiKey.METADATA, 1, {"brokers": [], "controller_id": 1, "topics": []}),  # header v0
    (ApiKey.API_VERSIONS, 3, {"error_code": 0, "api_keys": []}),  # flexible body, header v0 all the same
])
@pytest.mark.parametrize("correlation_id", [0, 7, 2**31 - 1, -5])
def test_it_is_the_decoded_headers(api_key, version, body, correlation_id):
    frame = protocol.encode_response(api_key, version, correlation_id, body)
    assert protocol.response_correlation_id(frame) == correlation_id
    assert protocol.decode_response(api_key, version, frame)[0]["correlation_id"] == correlation_id
    assert protocol.response_correlation_id(memoryview(frame)) == correlation_id


@pytest.mark.parametrize("frame", [b"", b"\x00\x00", b"\x00\x00\x00\x02\x00\x01", b"\x00\x00\x00\x09\x00\x00\x00\x01"])
def test_a_frame_without_one_is_a_decode_error(frame):
    with pytest.raises(DecodeError):
        protocol.response_correlation_id(frame)
