"""Garbage in, DecodeError out: no other exception, and no allocation driven by lying lengths.

A seeded loop feeds well over 100,000 inputs - random bytes and mutations of valid frames of
every (api, version, request/response) in the specs - to decode_request, decode_response and
the framer; Hypothesis adds shrinking searches of its own. A tracemalloc test checks that
frames claiming huge strings, arrays or frames cost (almost) no memory.
"""

import random
import struct
import time
import tracemalloc
import uuid

from hypothesis import given
from hypothesis import strategies as st

import protocol
from protocol import DecodeError
from protocol.framing import FrameReader
from protocol.registry import REGISTRY
from protocol.spec import INT_RANGES

SEED = 20240229
MIN_INPUTS = 100_000


def sample_value(f, version, flexible, rng, depth=0):
    """A random valid value for field `f` in `version` (small: arrays of 0-3 elements)."""
    if version in f.nullable and rng.random() < 0.2:
        return None
    k = f.kind
    if k in INT_RANGES:
        lo, hi = INT_RANGES[k]
        return rng.choice([lo, hi, 0, -1 if lo < 0 else 1, rng.randint(lo, hi)])
    if k == "float64":
        return rng.uniform(-1e9, 1e9)
    if k == "bool":
        return rng.random() < 0.5
    if k == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    if k == "string":
        return "".join(rng.choice("abcxyz-é") for _ in range(rng.randint(0, 6)))
    if k in ("bytes", "records"):
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 6)))
    if k == "array":
        n = rng.randint(0, 3 if depth < 3 else 0)
        if f.element == "struct":
            return [sample_struct(f.struct, version, flexible, rng, depth + 1) for _ in range(n)]
        from protocol.codegen import element_field

        ef = element_field(f)
        return [sample_value(ef, version, flexible, rng, depth) for _ in range(n)]
    return sample_struct(f.struct, version, flexible, rng, depth + 1)


def sample_struct(s, version, flexible, rng, depth=0):
    return {f.key: sample_value(f, version, flexible, rng, depth) for f in s.fields if version in f.versions}


def targets(rng):
    """(kind, api_key, version, valid frame) for every message version in the specs."""
    out = []
    for kind, table in (("request", REGISTRY.requests), ("response", REGISTRY.responses)):
        for key, spec in sorted(table.items()):
            for version in range(spec.valid.lo, spec.valid.hi + 1):
                for _ in range(2):
                    body = sample_struct(spec.struct, version, spec.is_flexible(version), rng)
                    if kind == "request":
                        frame = protocol.encode_request(key, version, rng.randint(-5, 2**31 - 1), rng.choice([None, "", "cli"]), body)
                    else:
                        frame = protocol.encode_response(key, version, rng.randint(0, 99), body)
                    out.append((kind, key, version, frame))
    return out


HOSTILE_WORDS = [b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff", b"\x80\x00\x00\x00", b"\xff\xff", b"\x7f\xff", b"\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x80"]


def mutate(frame: bytes, rng: random.Random) -> bytes:
    b = bytearray(frame)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        if op == 0 and len(b) > 4:  # flip a byte
            b[rng.randrange(4, len(b))] = rng.getrandbits(8)
        elif op == 1 and len(b) > 4:  # truncate
            del b[rng.randrange(4, len(b)):]
        elif op == 2:  # insert junk
            at = rng.randrange(4, len(b) + 1) if len(b) > 4 else len(b)
            b[at:at] = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 8)))
        elif op == 3 and len(b) > 8:  # overwrite with a hostile length / count / varint
            w = rng.choice(HOSTILE_WORDS)
            at = rng.randrange(4, len(b))
            b[at:at + len(w)] = w
        elif op == 4 and len(b) > 8:  # duplicate a slice
            i = rng.randrange(4, len(b))
            j = rng.randrange(i, len(b) + 1)
            b[j:j] = b[i:j]
        elif op == 5 and len(b) > 4:  # delete a slice
            i = rng.randrange(4, len(b))
            del b[i:i + rng.randint(1, 5)]
        else:  # zero a byte (empty lengths, null markers)
            if len(b) > 4:
                b[rng.randrange(4, len(b))] = 0
    if len(b) >= 4 and rng.random() < 0.9:
        b[0:4] = struct.pack(">i", len(b) - 4)  # keep the prefix honest so the body gets parsed
    return bytes(b)


def attempt(fn, *args):
    try:
        fn(*args)
    except DecodeError:
        pass


def test_seeded_garbage_and_mutations_only_raise_decode_error():
    rng = random.Random(SEED)
    cases = targets(rng)
    n = 0
    started = time.monotonic()
    # Valid frames decode.
    for kind, key, version, frame in cases:
        if kind == "request":
            protocol.decode_request(frame)
        else:
            protocol.decode_response(key, version, frame)
        n += 1
    # Mutated frames: decode or DecodeError.
    rounds = 0
    while n < MIN_INPUTS * 0.85:
        rounds += 1
        for kind, key, version, frame in cases:
            bad = mutate(frame, rng)
            if kind == "request":
                attempt(protocol.decode_request, bad)
            else:
                attempt(protocol.decode_response, key, version, bad)
                attempt(protocol.decode_body, key, version, "response", bad[8:])
                n += 1
            n += 1
    # Pure noise, with and without a plausible header in front.
    keys = sorted(REGISTRY.requests)
    for _ in range(MIN_INPUTS // 10):
        body = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 40)))
        if rng.random() < 0.7:
            key = rng.choice(keys)
            body = struct.pack(">hhi", key, rng.randint(0, REGISTRY.requests[key].valid.hi), 1) + body
        attempt(protocol.decode_request, struct.pack(">i", len(body)) + body)
        key = rng.choice(keys)
        if key in REGISTRY.responses:
            attempt(protocol.decode_response, key, rng.randint(0, REGISTRY.responses[key].valid.hi), struct.pack(">i", len(body)) + body)
        n += 2
    # The framer, fed noise in random chunks.
    for _ in range(MIN_INPUTS // 20):
        reader = FrameReader(max_frame_size=rng.choice([0, 16, 1000]))
        data = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 64)))
        i = 0
        try:
            while i < len(data):
                j = i + rng.randint(1, 9)
                for frame in reader.feed(data[i:j]):
                    attempt(protocol.decode_request, frame)
                i = j
        except DecodeError:
            pass
        n += 1
    assert n >= MIN_INPUTS, n
    assert time.monotonic() - started < 120  # a guard against a pathological slowdown, not a benchmark


_FRAMES = targets(random.Random(SEED + 1))


@given(st.binary(max_size=200))
def test_hypothesis_random_request_frames(data):
    attempt(protocol.decode_request, struct.pack(">i", len(data)) + data)
    attempt(protocol.decode_request, data)


@given(st.sampled_from(_FRAMES), st.binary(max_size=12), st.integers(min_value=0, max_value=10_000))
def test_hypothesis_spliced_valid_frames(target, junk, where):
    kind, key, version, frame = target
    at = 4 + where % max(1, len(frame) - 3)
    bad = frame[:at] + junk + frame[at + len(junk) // 2:]
    bad = struct.pack(">i", len(bad) - 4) + bad[4:]
    if kind == "request":
        attempt(protocol.decode_request, bad)
    else:
        attempt(protocol.decode_response, key, version, bad)


@given(st.lists(st.binary(max_size=20), max_size=20))
def test_hypothesis_framer_chunks(chunks):
    reader = FrameReader(max_frame_size=64)
    try:
        for c in chunks:
            reader.feed(c)
    except DecodeError:
        pass


def hostile_frames():
    """Frames whose lengths and counts claim far more than they carry."""
    big = struct.pack(">i", 0x7FFFFFFF)
    md1 = struct.pack(">hhi", 3, 1, 1) + b"\x00\x01c"  # MetadataRequest v1, header v1
    md9 = struct.pack(">hhi", 3, 9, 1) + b"\x00\x01c\x00"  # MetadataRequest v9, header v2
    bodies = [
        md1 + big,  # topics: 2**31-1 elements
        md1 + struct.pack(">i", 1) + b"\x7f\xff",  # a 32767-byte topic name
        md9 + b"\xff\xff\xff\xff\x0f",  # compact topics count 2**32-2
        md9 + b"\x02\xff\xff\xff\xff\x0f",  # compact name length ~2**32
        md9 + b"\x01\x00" + b"\xff\xff\xff\xff\x0f",  # tag count ~2**32
        md9 + b"\x01\x00" + b"\x01\x05\xff\xff\xff\xff\x0f",  # one tag claiming ~4 GiB
        struct.pack(">hhi", 35, 0, 1) + b"\x00\x01c" + big,  # DescribeLogDirs v0
    ]
    return [struct.pack(">i", len(b)) + b for b in bodies]


def test_hostile_lengths_allocate_nothing_big():
    responses = [
        (46, 0, struct.pack(">i", 1) + b"\x00" + b"\x00\x00\x00\x00\x00\x00" + b"\x00" + b"\xff\xff\xff\xff\x0f"),
        (3, 1, struct.pack(">i", 1) + big_count()),
    ]
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        for frame in hostile_frames():
            attempt(protocol.decode_request, frame)
        for key, version, body in responses:
            attempt(protocol.decode_response, key, version, struct.pack(">i", len(body)) + body)
        reader = FrameReader()
        for prefix in (struct.pack(">i", 0x7FFFFFFF), struct.pack(">i", -1)):
            try:
                FrameReader().feed(prefix + b"\x00" * 16)
            except DecodeError:
                pass
        # An allowed but large frame: only what has arrived is held.
        reader.feed(struct.pack(">i", 100 * 1024 * 1024 - 1) + b"\x00" * 100)
        assert reader.buffered == 104
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024, f"peak {peak} bytes"


def big_count():
    return struct.pack(">i", 0x7FFFFFFF)


def test_hostile_frames_are_decode_errors():
    for frame in hostile_frames():
        try:
            protocol.decode_request(frame)
        except DecodeError as e:
            assert "invalid" in str(e) or "truncated" in str(e) or "count" in str(e) or "size" in str(e), e
        else:
            raise AssertionError("a hostile frame decoded")
