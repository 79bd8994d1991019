"""Every message, every version: encode then decode gives the body back.

For each spec file in protocol/specs (ours, ApiVersions, Metadata and the KIP APIs on keys
10000-10005 alike) and each version in its validVersions, requests and responses, with bodies
drawn by tests/protocol/strategies.py:

- `decode_body(encode_body(body)) == normalise(body)` (tagged fields left out come back as
  their defaults), and `encoded_size` equals the length of the encoding;
- every strict prefix of an encoding is rejected with `protocol.DecodeError`;
- whole frames: `decode_request(encode_request(...))` gives back the header values and the
  body, `decode_response(encode_response(...))` likewise, and the size prefix is exact.

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
            assert _header_get(header, "client_id") == client_id
        else:
            frame = bytes(protocol.encode_response(key, version, correlation_id, body))
            header, decoded = protocol.decode_response(key, version, frame)
            assert _header_get(header, "correlation_id") == correlation_id
        (size,) = struct.unpack_from(">i", frame)
        assert size == len(frame) - 4
        assert decoded == expected

    check()
