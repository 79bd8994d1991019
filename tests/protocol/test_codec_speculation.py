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


# -- encoding runs (shapes.EncodeSite.make_run) -------------------------------------------------


def _element_bytes(p):
    """What the field-by-field path writes for one partition: the first element of an array is
    never written by a run, so a one-element array holds exactly those bytes."""
    prefix = protocol.encode_body(46, 0, "response", lpr([]))[:-3]  # ... topic name, then count 0+1
    single = protocol.encode_body(46, 0, "response", lpr([p]))
    assert single.startswith(prefix + b"\x02") and single.endswith(b"\x00\x00")
    return prefix, single[len(prefix) + 1:-2]


def test_encoding_runs_write_the_field_by_field_bytes_element_for_element():
    rng = random.Random(11)
    parts = []
    for i in range(120):  # under 127: the partition count is one varint byte
        reps = [rng.randrange(100) for _ in range(3 if i < 40 else rng.choice([0, 2, 3, 3, 20]))]
        p = part(i, reps, reps[:1], reps[1:2])
        roll = rng.random()
        if 40 <= i and roll < 0.05:
            del p["adding_replicas"]  # a missing key takes the default, []
        elif 40 <= i and roll < 0.1:
            p["replicas"] = tuple(p["replicas"])
        elif 40 <= i and roll < 0.15:
            p[UNKNOWN_TAGS_KEY] = {50 + i: b"t"}
        parts.append(p)
    parts[20][UNKNOWN_TAGS_KEY] = {7: b"in a run"}
    prefix, _ = _element_bytes(parts[0])
    expected = prefix + bytes((len(parts) + 1,)) + b"".join(_element_bytes(p)[1] for p in parts) + b"\x00\x00"
    assert protocol.encode_body(46, 0, "response", lpr(parts)) == expected
    # And given as a tuple of partitions, or any other iterable with a length.
    assert protocol.encode_body(46, 0, "response", lpr(tuple(parts))) == expected


@pytest.mark.parametrize("where", [1, 2, 57, 99])
@pytest.mark.parametrize("bad", [
    ("partition_index", 2**31),  # out of int32 range
    ("replicas", [1, 2, "x"]),  # same shape, a value pack refuses
    ("replicas", "abc"),  # a str is not an array
    ("replicas", None),  # not nullable
    ("adding_replicas", [1.5]),
])
def test_a_bad_element_inside_a_run_is_refused_by_its_path(where, bad):
    parts = [part(i, [1, 2, 3], [1], [2]) for i in range(100)]
    key, value = bad
    parts[where][key] = value
    with pytest.raises(protocol.EncodeError, match=f"topics\\[0\\]\\.partitions\\[{where}\\]\\.{key}"):
        protocol.encode_body(46, 0, "response", lpr(parts))


def _items_spec():
    # Items' Extra exists from v1 and is not ignorable: at v0 a run may take only elements holding
    # exactly the present keys, so an element carrying Extra reaches the field-by-field check.
    return parse_spec({
        "apiKey": 9998, "type": "request", "name": "ItemsRequest", "validVersions": "0-1", "flexibleVersions": "0+",
        "fields": [{"name": "Items", "type": "[]Item", "versions": "0+", "fields": [
            {"name": "Id", "type": "int32", "versions": "0+"},
            {"name": "Label", "type": "string", "versions": "0+"},
            {"name": "Blob", "type": "bytes", "versions": "0+"},
            {"name": "Values", "type": "[]int32", "versions": "0+"},
            {"name": "Extra", "type": "int32", "versions": "1+"},
        ]}],
    })


def _encode(codec, body):
    out = []
    run_encode(codec, body, out.append)
    return b"".join(out)


def test_encoding_runs_leave_absent_fields_to_the_field_by_field_check():
    codec = compile_codec(_items_spec(), 0)
    items = [{"id": i, "label": "ab", "blob": b"xyz", "values": [i] * 20} for i in range(50)]
    plain = _encode(codec, {"items": items})
    at_default = [dict(it) for it in items]
    at_default[30]["extra"] = 0  # the default: allowed, and written as if absent
    assert _encode(codec, {"items": at_default}) == plain
    set_ = [dict(it) for it in items]
    set_[30]["extra"] = 5
    with pytest.raises(protocol.EncodeError, match="items\\[\\]\\.extra does not exist in this version"):
        _encode(codec, {"items": set_})
    # A bytearray blob ends a run (a tuple for a list does not); the bytes stay the same.
    mixed = [dict(it) for it in items]
    mixed[10]["blob"] = bytearray(b"xyz")
    mixed[20]["values"] = tuple(mixed[20]["values"])
    assert _encode(codec, {"items": mixed}) == plain
    back, _ = run_decode(codec, plain, 0)
    assert back["items"] == [dict(it, extra=0) for it in items]


def test_long_arrays_in_runs_are_read_by_index():
    # Replica lists longer than shapes.UNPACK_LIMIT take the indexed form of a run, both ways.
    parts = [part(i, range(i % 3 + 17), [i], range(40)) for i in range(300)]
    _, back = roundtrip(46, 0, lpr(parts))
    assert back["topics"][0]["partitions"] == parts
    # Metadata v1's old-style int32 counts, with nullable strings around them.
    mparts = [{"error_code": 0, "partition_index": i, "leader_id": 1, "replica_nodes": list(range(20)),
               "isr_nodes": list(range(18)), "leader_epoch": -1, "offline_replicas": []} for i in range(100)]
    _, back = roundtrip(3, 1, {"brokers": [], "topics": [{"name": "t", "partitions": mparts}]})
    assert back["topics"][0]["partitions"] == mparts
