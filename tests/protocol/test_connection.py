"""protocol.connection: the sans-IO connection on FrameReader."""

import struct

import pytest

from protocol import wire_limits
from protocol.connection import FrameConnection


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def test_frames_before_a_bad_prefix_are_kept_and_the_error_names_the_limit():
    conn = FrameConnection.server()
    good = frame(b"\x00" * 10)
    assert conn.receive(good + good + struct.pack(">i", 9) + b"x" * 9) == [good, good]
    assert conn.error.limit is wire_limits.MIN_REQUEST_FRAME and conn.buffered == 0
    with pytest.raises(wire_limits.FrameError):
        conn.receive(good)  # failed for good: the stream cannot be resynchronised


def test_client_side_takes_the_smallest_response_and_limits_change_for_the_next_prefix():
    client = FrameConnection.client()
    assert client.receive(frame(b"\x00\x00\x00\x07")) == [frame(b"\x00\x00\x00\x07")]
    server = FrameConnection.server()
    server.limits = (wire_limits.MIN_REQUEST_FRAME, wire_limits.MAX_PRE_AUTH_FRAME)
    assert server.receive(struct.pack(">i", wire_limits.MAX_PRE_AUTH_FRAME.value + 1)) == []
    assert server.error.limit is wire_limits.MAX_PRE_AUTH_FRAME
    with pytest.raises(ValueError):
        server.limits = (wire_limits.MAX_FRAME, wire_limits.MIN_REQUEST_FRAME)
