"""Arrays of flat structs go through the shape-speculative paths (protocol/shapes.py).

Whatever the mix of shapes, the result must equal the ordinary field-by-field result: these
tests build arrays whose shapes repeat, change every element, exceed what one varint byte can
count, carry tagged fields or nulls, and check that encode/decode round-trips them exactly.
"""

import random
import uuid

import pytest

import protocol
from protocol import DecodeError
from protocol.codegen import compile_codec, generate_source
from protocol.messages import run_decode, run_encode
from protocol.primitives import UNKNOWN_TAGS_KEY
from protocol.shapes import MAX_SHAPES_PER_SITE
from protocol.spec import parse_spec


def lpr(partitions):
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
            "topics": [{"name": "t", "partitions": partitions}]}


def part(i, replicas, adding=(), removing=()):
    return {"partition_index": i, "replicas": list(replicas), "adding_replicas": list(adding), "removing_replicas": list(removing)}


def roundtrip(key, version, body, kind="response"):
    data = protocol.encode_body(key, version, kind, body)
    back = protocol.decode_body(key, version, kind, data)
    assert protocol.encode_body(key, version, kind, back) == data
    return data, back


def test_the_speculative_paths_are_generated():
    src = generate_source(protocol.REGISTRY.responses[46], 0)
    assert "_mkrun" in src and "_mkpk" in src


def test_runs_of_shapes_and_changing_shapes():
    rng = random.Random(7)
    parts = []
    for i in range(3000):
        if i < 1000:
            n = 3  # one long run
        elif i < 2000:
            n = i % 4  # changes every element
        else:
            n = rng.choice([2, 3, 3, 3, 4])
        reps = [rng.randrange(1000) for _ in range(n)]
        parts.append(part(i, reps, reps[:1], reps[1:2]))
    for key_version in ((46, 0),):
        _, back = roundtrip(*key_version, lpr(parts))
        assert back["topics"][0]["partitions"] == parts


def test_lengths_that_need_two_varint_bytes():
    parts = [part(i, range(130 if i % 3 == 0 else 3)) for i in range(50)]
    _, back = roundtrip(46, 0, lpr(parts))
    assert back["topics"][0]["partitions"] == parts


def test_elements_with_tagged_fields_inside_a_run():
    parts = [part(i, [1, 2, 3]) for i in range(20)]
    parts[7][UNKNOWN_TAGS_KEY] = {42: b"x"}
    parts[8][UNKNOWN_TAGS_KEY] = {43: b""}
    data, back = roundtrip(46, 0, lpr(parts))
    assert back["topics"][0]["partitions"][7][UNKNOWN_TAGS_KEY] == {42: b"x"}
    assert UNKNOWN_TAGS_KEY not in back["topics"][0]["partitions"][9]


def test_old_style_arrays_and_many_shapes():
    # MetadataResponse v1: int32 counts; more distinct shapes than a site compiles.
    parts = []
    for i in range(MAX_SHAPES_PER_SITE * 3):
        reps = list(range(i % 7))
        isr = list(range(i % 5))
        parts.append({"error_code": 0, "partition_index": i, "leader_id": 1, "replica_nodes": reps,
                      "isr_nodes": isr, "leader_epoch": -1, "offline_replicas": []})
    body = {"brokers": [], "topics": [{"name": "t", "partitions": parts}]}
    for version in (1, 9, 12):
        _, back = roundtrip(3, version, body)
        assert back["topics"][0]["partitions"] == parts


def test_strings_bytes_and_nulls_in_flat_structs():
    spec = parse_spec({
        "apiKey": 9999, "type": "request", "name": "FlatRequest", "validVersions": "0-1", "flexibleVersions": "1+",
        "fields": [{"name": "Items", "type": "[]Item", "versions": "0+", "fields": [
            {"name": "Id", "type": "uuid", "versions": "0+"},
            {"name": "Label", "type": "string", "versions": "0+"},
            {"name": "Note", "type": "string", "versions": "0+", "nullableVersions": "0+"},
            {"name": "Blob", "type": "bytes", "versions": "0+"},
            {"name": "Flag", "type": "bool", "versions": "0+"},
            {"name": "Values", "type": "[]int64", "versions": "0+"},
        ]}],
    })
    rng = random.Random(3)
    items = []
    for i in range(400):
        items.append({
            "id": uuid.UUID(int=rng.getrandbits(128)),
            "label": "é" * (i % 3) + "x" * (i // 100),
            "note": None if i % 5 == 0 else "n",
            "blob": bytes(i % 2),
            "flag": i % 2 == 0,
            "values": [i] * (i % 3),
        })
    for version in (0, 1):
        codec = compile_codec(spec, version)
        out = []
        run_encode(codec, {"items": items}, out.append)
        data = b"".join(out)
        back, pos = run_decode(codec, data, 0)
        assert pos == len(data) and back == {"items": items}
        # Invalid UTF-8 in the middle of a run is still an error.
        bad = bytearray(data)
        at = bad.index("éé".encode())
        bad[at] = 0xFF
        with pytest.raises(DecodeError):
            run_decode(codec, bytes(bad), 0)


def test_truncation_inside_a_run():
    data = protocol.encode_body(46, 0, "response", lpr([part(i, [1, 2, 3]) for i in range(100)]))
    for cut in (len(data) - 2, len(data) - 30, len(data) // 2):
        with pytest.raises(DecodeError):
            protocol.decode_body(46, 0, "response", data[:cut])
