"""FrameReader: any chunking yields the same frames; bad prefixes fail at once, unbuffered."""

import random
import struct

import pytest

import protocol
from protocol import DecodeError, wire_limits
from protocol.framing import DEFAULT_MAX_FRAME_SIZE, FrameReader


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


FRAMES = [
    frame(b""),
    frame(b"a"),
    protocol.encode_request(18, 3, 1, "c", {"client_software_name": "x", "client_software_version": "1"}),
    frame(bytes(range(256)) * 40),
    protocol.encode_response(3, 12, 7, {"brokers": [{"node_id": 1, "host": "h", "port": 9092}]}),
    frame(b"\x00\x00\x00\x04"),  # a body that looks like a prefix
]
STREAM = b"".join(FRAMES)


def test_all_at_once():
    reader = FrameReader()
    assert reader.feed(STREAM) == FRAMES
    assert reader.buffered == 0


def test_byte_by_byte_matches_all_at_once():
    reader = FrameReader()
    out = []
    for i in range(len(STREAM)):
        out += reader.feed(STREAM[i:i + 1])
    assert out == FRAMES
    assert reader.buffered == 0


def test_random_chunkings_and_buffer_types():
    rng = random.Random(5)
    for trial in range(200):
        reader = FrameReader()
        out = []
        i = 0
        while i < len(STREAM):
            j = i + rng.choice([0, 1, 2, 3, 4, 5, 7, 100, 5000])
            chunk = STREAM[i:j]
            out += reader.feed(rng.choice([bytes, bytearray, memoryview])(chunk))
            i = j
        assert out == FRAMES, trial


def test_frames_decode():
    header, body = protocol.decode_request(FrameReader().feed(FRAMES[2])[0])
    assert header["request_api_key"] == 18 and body["client_software_name"] == "x"


def test_partial_frame_is_held_until_complete():
    reader = FrameReader()
    assert reader.feed(FRAMES[3][:10]) == []
    assert reader.buffered == 10
    assert reader.feed(FRAMES[3][10:] + FRAMES[1][:2]) == [FRAMES[3]]
    assert reader.feed(FRAMES[1][2:]) == [FRAMES[1]]


@pytest.mark.parametrize("size", [-1, -(2**31), 1001, 2**31 - 1])
def test_bad_prefix_fails_at_once_without_buffering(size):
    reader = FrameReader(max_frame_size=1000)
    prefix = struct.pack(">i", size)
    with pytest.raises(DecodeError, match="frame size prefix"):
        reader.feed(prefix + b"\x00" * 5000)
    assert reader.buffered == 0
    # Split prefix: the error comes with the fourth byte, before any body byte is taken.
    reader = FrameReader(max_frame_size=1000)
    assert reader.feed(prefix[:3]) == []
    with pytest.raises(DecodeError):
        reader.feed(prefix[3:] + b"\x00" * 5000)
    assert reader.buffered == 0
    # A failed reader stays failed: the stream cannot be resynchronised.
    with pytest.raises(DecodeError, match="failed earlier"):
        reader.feed(frame(b"ok"))


def test_a_bad_prefix_after_good_frames_in_one_chunk_still_raises_at_once():
    # The connection is going to be closed; raising beats returning the good frame and leaving
    # the error for a feed() that may never come.
    reader = FrameReader(max_frame_size=10)
    with pytest.raises(DecodeError):
        reader.feed(frame(b"1234") + struct.pack(">i", 11))
    assert reader.buffered == 0


def test_limits():
    assert DEFAULT_MAX_FRAME_SIZE == 100 * 1024 * 1024
    assert FrameReader(max_frame_size=0).feed(frame(b"")) == [frame(b"")]
    with pytest.raises(DecodeError):
        FrameReader(max_frame_size=0).feed(frame(b"x"))
    with pytest.raises(ValueError):
        FrameReader(max_frame_size=-1)
    with pytest.raises(TypeError):
        FrameReader().feed("text")


def test_frame_error_names_the_limit_broken():
    reader = FrameReader(wire_limits.MAX_FRAME, wire_limits.MIN_REQUEST_FRAME)
    assert reader.feed(frame(b"\x00" * 10)) == [frame(b"\x00" * 10)]
    with pytest.raises(wire_limits.FrameError) as below:
        reader.feed(struct.pack(">i", 9))
    assert below.value.limit is wire_limits.MIN_REQUEST_FRAME and below.value.size == 9
    assert "below the minimum request frame of 10 bytes" in str(below.value)
    reader = FrameReader(wire_limits.MAX_PRE_AUTH_FRAME)
    with pytest.raises(wire_limits.FrameError) as above:
        reader.feed(struct.pack(">i", 512 * 1024 + 1))
    assert above.value.limit is wire_limits.MAX_PRE_AUTH_FRAME
    with pytest.raises(ValueError):
        FrameReader(max_frame_size=5, min_frame_size=6)


def test_every_limit_has_its_reason():
    assert len({limit.name for limit in wire_limits.LIMITS}) == len(wire_limits.LIMITS)
    for limit in wire_limits.LIMITS:
        assert isinstance(limit.value, int) and limit.value >= 0 and len(limit.reason) > 20, limit
